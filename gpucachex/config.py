"""GPU configurations: immutable, validated at construction, changed with dotted keys, and hashable
into a stable key for result stores.

The schema (every key, its type, default, range and meaning) comes from the C core, which declares
each key once; techniques declare their own parameters there too.

>>> from gpucachex import presets
>>> cfg = presets.get("gtx480").replace(**{"l1d.ways": 8})
>>> cfg["l1d.ways"]
8
"""
from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

import numpy as np

from gpucachex import _core

SCHEMA_VERSION = 1  # bump when the meaning of an existing key changes


@dataclass(frozen=True)
class KeySpec:
    name: str
    type: str          # int, float, bool, choice, policy, technique
    default: Any
    min: float
    max: float
    choices: tuple[str, ...] | None
    doc: str
    technique: str | None  # the technique that declares it, for technique parameters

    def coerce(self, value: Any) -> Any:
        """Check `value` against the key's type and range and return it in canonical form."""
        name = self.name
        if isinstance(value, np.generic):  # numpy scalars (from np.arange grids, DataFrame rows) as Python's
            value = value.item()
        if self.type in ("choice", "policy", "technique"):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string (one of {', '.join(self.choices or ())}), "
                                f"got {type(value).__name__} {value!r}")
            if self.choices is not None and value not in self.choices:
                raise ValueError(f"{name} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise TypeError(f"{name} must be a bool, got {value!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if self.type == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(f"{name} must be an integer, got {value}")
                value = int(value)
        else:
            try:
                value = float(value) + 0.0   # -0.0 is 0.0, and must not give another configuration key
            except OverflowError:   # an int beyond a double: out of range, said so rather than float()'s words
                raise ValueError(f"{name} must be between {self.range_text()}, got an integer too large for a "
                                 f"float") from None
        if not self.min <= value <= self.max:
            raise ValueError(f"{name} must be between {self.range_text()}, got {value}")
        return value

    def range_text(self) -> str:
        """The range as "MIN and MAX", each bound exact (see `number_text`)."""
        return f"{number_text(self.min)} and {number_text(self.max)}"


def number_text(x: float) -> str:
    """`x` as %g writes it where that reads back as `x`, else in full: %g keeps six digits, so a bound of
    16777216 read 1.67772e+07, which a value it refuses (16777217) seems to be below."""
    text = f"{x:g}"
    if float(text) == x:
        return text
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@lru_cache(maxsize=1)
def schema() -> dict[str, KeySpec]:
    """Every configuration key the core knows, by name."""
    out = {}
    for k in _core.config_schema():
        default = k["default"]
        if k["type"] == "int":
            default = int(default)
        elif k["type"] == "bool":
            default = bool(default)
        elif k["type"] in ("choice", "policy", "technique"):
            default = k["choices"][int(default)] if k["type"] == "choice" else k["choices"][0]
        out[k["name"]] = KeySpec(k["name"], k["type"], default, k["min"], k["max"],
                                 tuple(k["choices"]) if k["choices"] is not None else None, k["doc"], k["technique"])
    return out


def resolve_key(key: str) -> str:
    """The full name of `key`: itself if known, else the one key that ends with ``.key`` (so
    ``loscache.table_entries`` means ``l2.loscache.table_entries``)."""
    keys = schema()
    if key in keys:
        return key
    matches = [k for k in keys if k.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise KeyError(f"configuration key {key!r} is ambiguous: {', '.join(matches)}")
    raise KeyError(f"unknown configuration key {key!r} ({close_names(key, keys, '`gpucachex keys` lists them')})")


def close_names(word: str, names, otherwise: str) -> str:
    """What an error about an unknown `word` suggests: "close: a, b" for the up to three `names` it
    looks like (a typo), else `otherwise`."""
    close = difflib.get_close_matches(str(word), list(names), n=3)
    return f"close: {', '.join(close)}" if close else otherwise


def _check_section(name: str) -> None:
    """Raise KeyError unless `name` is a section of configuration keys ("l1d", "l2.loscache", or the
    short "loscache" that key names allow)."""
    keys = schema()
    if any(k.startswith(name + ".") or f".{name}." in k for k in keys):
        return
    sections = {k.rsplit(".", 1)[0] for k in keys}
    raise KeyError(f"unknown configuration section {name!r} ({close_names(name, sections, '`gpucachex keys` lists them')})")


def _flat_items(overrides: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) pairs of overrides given flat ({"l1d.ways": 8}) or nested by section
    ({"l1d": {"ways": 8}}, as `Config.to_dict(nested=True)` writes them)."""
    if not isinstance(overrides, Mapping):
        raise TypeError(f"configuration overrides must be a mapping of keys to values such as {{'l1d.ways': 8}}, "
                        f"got {type(overrides).__name__} {overrides!r}")
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise TypeError(f"configuration keys are strings such as 'l1d.ways', got {key!r}")
        if isinstance(value, Mapping):
            if not value:   # nothing to yield: an unknown (misspelt) section would vanish without a word
                _check_section(f"{prefix}{key}")
            yield from _flat_items(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _config_from_values(values: dict[str, Any], name: str) -> "Config":
    return Config(values, name=name)


class Config(Mapping):
    """An immutable GPU configuration: a full mapping of dotted keys to values.

    Build one from a preset (`gpucachex.presets.get`) or from overrides of the core's defaults
    (``Config({"core.sms": 30})``, or nested by section as `to_dict(nested=True)` writes them:
    ``Config({"core": {"sms": 30}})``); derive others with `replace`. Construction validates every value
    and the relations between keys (geometry, partitions per channel, ...) and raises ValueError or
    TypeError naming the key.
    """

    __slots__ = ("_values", "_key", "name")

    def __init__(self, overrides: Mapping[str, Any] | None = None, *, name: str = "", base: "Config | None" = None):
        keys = schema()
        values = dict(base._values) if base is not None else {k: s.default for k, s in keys.items()}
        given: dict[str, str] = {}
        for key, value in _flat_items(overrides if overrides is not None else {}):
            try:
                full = resolve_key(key)
            except KeyError as exc:
                raise KeyError(exc.args[0]) from None
            if full in given:
                names = "" if given[full] == key else f" (as {given[full]!r} and {key!r})"
                raise ValueError(f"configuration key {full} is given twice{names}")
            given[full] = key
            values[full] = keys[full].coerce(value)
        _core.check_config(values)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_key", None)
        object.__setattr__(self, "name", name or (base.name if base is not None else ""))

    def __setattr__(self, name, value):
        raise AttributeError("Config is immutable: use replace(**{'dotted.key': value})")

    def __reduce__(self):
        # Rebuilt from its values (validated again), so Configs travel to process and Dask workers.
        return (_config_from_values, (dict(self._values), self.name))

    # ---- mapping ------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._values[resolve_key(key)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._values == other._values

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        changed = self.diff(Config())
        inner = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"Config({self.name + ': ' if self.name else ''}{inner})"

    # ---- derivation ----------------------------------------------------------------------------
    def replace(self, /, **changes: Any) -> "Config":
        """A new configuration with dotted keys changed: ``cfg.replace(**{"l1d.ways": 8})``."""
        # `self` positional-only, so that a change called "self" is an unknown key like any other.
        return Config(changes, base=self)

    def to_dict(self, nested: bool = False) -> dict[str, Any]:
        """The full mapping, flat (dotted keys) or nested by section."""
        if not nested:
            return dict(self._values)
        out: dict[str, Any] = {}
        for key, value in self._values.items():
            node = out
            *path, leaf = key.split(".")
            for part in path:
                node = node.setdefault(part, {})
            node[leaf] = value
        return out

    def diff(self, other: "Config") -> dict[str, Any]:
        """Keys whose value differs from `other` (a Config, or overrides of the defaults), with this
        configuration's values."""
        if not isinstance(other, Config):
            other = Config(other)
        return {k: v for k, v in self._values.items() if other._values.get(k) != v}

    def key(self) -> str:
        """A stable identifier (SHA-256 of the canonical JSON of every value): equal across processes,
        machines and Python versions for equal configurations."""
        if self._key is None:
            blob = json.dumps({"schema": SCHEMA_VERSION, "values": self._values}, sort_keys=True,
                              separators=(",", ":"))
            object.__setattr__(self, "_key", hashlib.sha256(blob.encode()).hexdigest()[:20])
        return self._key

    # ---- derived geometry ----------------------------------------------------------------------
    @property
    def l1d_sets(self) -> int:
        return int(self["l1d.size_kb"] * 1024 // (self["l1d.ways"] * self["l1d.line_bytes"]))

    @property
    def l2_sets_per_partition(self) -> int:
        return int(self["l2.size_kb"] * 1024 // (self["l2.ways"] * self["l2.line_bytes"] * self["l2.partitions"]))

    @property
    def l1d_lines(self) -> int:
        return self.l1d_sets * self["l1d.ways"]

    @property
    def l2_lines(self) -> int:
        return self.l2_sets_per_partition * self["l2.ways"] * self["l2.partitions"]
