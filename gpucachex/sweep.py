"""Parameter sweeps: grids of dotted configuration keys expanded over workloads and seeds, one DataFrame
row per run, run on threads (the C core releases the GIL), processes or a Dask cluster, optionally
through a results store (gpucachex.store) that makes them resumable.

>>> df = sweep(presets.get("loscache"), {"l2.power": ["none", "loscache"]}, ["bfs", "sgemm"], store="results/s.sqlite")
>>> normalize(df, "l2_energy_j", baseline={"l2.power": "none"})

Grids (`expand_grid`):

- ``{"l1d.ways": [2, 4], "l2.ways": [8, 16]}``: the cartesian product (4 points); every value is a list.
- ``{"zip": {"l1d.size_kb": [16, 32], "l1d.ways": [4, 8]}}``: keys that advance together (2 points);
  a zip group is one axis of the product (``"zip": [{...}, {...}]`` for several groups).
- ``{"l2.power": ["none", "loscache"], "when": [{"if": {"l2.power": "loscache"},
  "grid": {"l2.loscache.prediction_period": [50, 100]}}]}``: a conditional grid: points that match
  ``if`` (a value, or a list of accepted values, per swept key) are multiplied by ``grid``; the others
  are kept once (3 points here). An ``if`` value its key cannot take, or one that matches no point,
  is an error (its sub-grid would vanish without a word).
- ``[{...}, {...}]``: a list of sub-grids, each expanded as above, concatenated; in a sub-grid a single
  value means that value (so a list of ``{key: value}`` points works too).
- ``"label"`` is not a configuration key but a column: name points (``{"zip": {"label": ["base",
  "big"], "l1d.size_kb": [16, 64]}}``) and normalize against a named baseline (``baseline="base"``).

Points that give the same configuration (sub-grids sharing a point, ``[4, 4.0]``, ``[True, 1]``) are one
run and one row, at the first one's place; the row keeps a label either gave. Two labels for one
configuration are an error: one of them would name no row.

Each row holds every swept key (rows from sub-grids that do not sweep a key get the configuration's
value), `workload`, `seed`, `config_key`, `run_key`, `preset`, every metric and energy term of
`Result.metrics`, and `wall_seconds`. The run key is a digest of the configuration's key, a canonical
workload identity (``name:size`` for built-in models, a content digest for files and Trace objects;
models and files also carry a digest of the opcode tables when `isa.register_opcode` changed them),
the seed and `model_version()`: equal wherever the same build runs, and new whenever the model's code
(Python, C sources or the compiled extension) changes.
A seed or a workload listed twice, and two different workloads under one name, are errors: their rows
would be counted twice, or merged, by every mean and plot over the `workload` column.

The package exports the function as `gpucachex.sweep`, which hides this module's name on the package:
import the rest with ``from gpucachex.sweep import expand_grid, points, ...``.
"""
from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import itertools
import json
import numbers
import os
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from gpucachex.config import Config, resolve_key, schema
from gpucachex.store import STORE_FORMAT, clean_value, open_store, utf8_text
from gpucachex.trace import INST_COLUMNS, Trace

LABEL = "label"                 # the grid key that names points instead of configuring them
EXECUTORS = ("local", "threads", "processes", "dask")
_RESERVED = {"zip", "when", LABEL}


class SweepError(RuntimeError):
    """Some runs of a sweep failed. `failures` lists (point, error, traceback); `frame` holds the rows of
    the runs that succeeded (they are in the store too, when there is one)."""

    def __init__(self, message: str, failures: list, frame):
        super().__init__(message)
        self.failures = failures
        self.frame = frame


# ---- grids ----------------------------------------------------------------------------------------

def _is_values(v: Any) -> bool:
    return isinstance(v, Iterable) and not isinstance(v, (str, bytes, Mapping))


def _values(where: str, key: str, values: Any, scalars: bool) -> list[Any]:
    if isinstance(values, Mapping):
        raise TypeError(f"{where}[{key!r}] must be a list of values, got a mapping {dict(values)!r}")
    if not _is_values(values):
        if scalars:
            return [_plain(values)]
        raise TypeError(f"{where}[{key!r}] must be a list of values, got {values!r} (put a single value in the "
                        f"base configuration, or use a list of sub-grids)")
    out = [_plain(v) for v in values]
    if not out:
        raise ValueError(f"{where}[{key!r}] has no values")
    return out


def _plain(value: Any) -> Any:
    """numpy scalars (from np.arange, np.linspace, ...) as Python numbers, which configurations take."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value


def _zip_axis(group: Any, where: str, scalars: bool) -> list[dict[str, Any]]:
    if not isinstance(group, Mapping) or not group:
        raise TypeError(f"{where} must be a non-empty mapping of keys to equally long lists, got {group!r}")
    if "zip" in group or "when" in group:
        raise ValueError(f"{where} cannot hold 'zip' or 'when'")
    columns = {k: _values(where, k, v, scalars) for k, v in _dotted(group, where)}
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{where}: zipped lists must have equal lengths, got {lengths}")
    n = next(iter(lengths.values()))
    return [{k: columns[k][i] for k in columns} for i in range(n)]


def _matches(point: Mapping[str, Any], condition: Mapping[str, Any]) -> bool:
    for key, accepted in condition.items():
        if key not in point:
            return False
        if _is_values(accepted):
            if point[key] not in list(accepted):
                return False
        elif point[key] != accepted:
            return False
    return True


def _condition(rule: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A rule's `if` with each value of a configuration key in the key's canonical form (8.0 is 8), so
    that it compares with the grid's values; a value the key cannot take ("LoSCache", "8" for an
    integer) could match no point, and is an error naming it."""
    from gpucachex.config import schema

    out = {}
    for key, accepted in _dotted(rule["if"], where):
        try:
            spec = schema()[resolve_key(key)]
        except KeyError:   # not a configuration key (a label, or a grid expanded without a schema)
            out[key] = accepted
            continue
        values = list(accepted) if _is_values(accepted) else [accepted]
        try:
            coerced = [spec.coerce(_plain(v)) for v in values]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: 'if' value {accepted!r} of {key!r} can never match: {exc}") from None
        out[key] = coerced if _is_values(accepted) else coerced[0]
    return out


def _dotted(grid: Mapping[str, Any], where: str, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(key, values) of a grid whose keys may be nested by section, as TOML writes an unquoted dotted key
    (`l1d.ways = [2, 4]` is {"l1d": {"ways": [2, 4]}}), with the dotted names; 'zip' and 'when' stay."""
    for key, values in grid.items():
        if not isinstance(key, str):
            raise TypeError(f"{where}: keys must be dotted configuration keys (strings), got {key!r}")
        if isinstance(values, Mapping) and key not in _RESERVED:
            if not values:
                raise ValueError(f"{where}[{prefix + key!r}] is an empty section: it sweeps nothing")
            yield from _dotted(values, where, f"{prefix}{key}.")
        elif prefix and key in _RESERVED:
            raise ValueError(f"{where}: {key!r} inside the section {prefix[:-1]!r}; put it at the top of the grid")
        else:
            yield prefix + key, values


def _full_name(key: str) -> str:
    """The configuration key `key` names, or `key` itself when it names none (a label, a grid of its own)."""
    try:
        return resolve_key(key)
    except KeyError:
        return key


def _expand_mapping(grid: Mapping[str, Any], where: str, scalars: bool) -> list[dict[str, Any]]:
    axes: list[list[dict[str, Any]]] = []
    rules = []
    for key, values in _dotted(grid, where):
        if key == "zip":
            groups = values if isinstance(values, (list, tuple)) else [values]
            if not groups:   # no axis at all would run the base configuration alone
                raise ValueError(f"{where}.zip has no groups; give {{key: [values], ...}} mappings or leave it out")
            axes += [_zip_axis(g, f"{where}.zip", scalars) for g in groups]
        elif key == "when":
            for rule in values if isinstance(values, (list, tuple)) else [values]:
                if not isinstance(rule, Mapping) or set(rule) != {"if", "grid"} or not isinstance(rule["if"], Mapping):
                    raise ValueError(f"{where}.when: each rule is {{'if': {{key: value(s)}}, 'grid': sub-grid}}, "
                                     f"got {rule!r}")
                rules.append(rule)
        else:
            axes.append([{key: v} for v in _values(where, key, values, scalars)])
    swept: list[str] = []
    for axis in axes:
        for k in axis[0]:
            if k in swept:
                raise ValueError(f"{where}: key {k!r} is swept twice")
            swept.append(k)
    points = [dict(collections.ChainMap(*reversed(combo))) for combo in itertools.product(*axes)]
    for i, rule in enumerate(rules):
        # An 'if' may name a swept key by its short or full name ("loscache.table_entries" and
        # "l2.loscache.table_entries"): compared under the grid's name, not refused as one it does not sweep.
        spelt = {_full_name(k): k for k in swept}
        condition_keys: dict[str, Any] = {}
        for k, v in _dotted(rule["if"], f"{where}.when[{i}].if"):
            name = spelt.get(_full_name(k), k)
            if name in condition_keys:   # one of the two conditions would be dropped
                raise ValueError(f"{where}.when[{i}]: 'if' names {_full_name(k)} twice")
            condition_keys[name] = v
        rule = {"if": condition_keys, "grid": rule["grid"]}
        unknown = [k for k in condition_keys if k not in swept]
        if unknown:
            raise ValueError(f"{where}.when[{i}]: 'if' names {unknown}, which this grid does not sweep "
                             f"(swept: {swept})")
        sub = rule["grid"]
        if isinstance(sub, Mapping) and not sub:   # its one empty point would leave the matched points as they are
            raise ValueError(f"{where}.when[{i}].grid is empty: the rule sweeps nothing for the points its 'if' "
                             f"matches; give the keys it sweeps there, or leave the rule out")
        if isinstance(sub, Mapping):
            sub_points = _expand_mapping(sub, f"{where}.when[{i}].grid", scalars)
        else:
            sub_points = expand_grid(sub, where=f"{where}.when[{i}].grid")
        clash = sorted({k for q in sub_points for k in q} & set(swept))
        if clash:
            raise ValueError(f"{where}.when[{i}].grid sweeps {clash}, which the grid already sweeps")
        swept += [k for q in sub_points for k in q if k not in swept]
        condition = _condition(rule, f"{where}.when[{i}]")
        matched = [_matches(p, condition) for p in points]
        if not any(matched):   # its sub-grid would be dropped without a word
            values = {k: list(dict.fromkeys(p.get(k) for p in points)) for k in condition}
            raise ValueError(f"{where}.when[{i}]: 'if' {dict(rule['if'])} matches no point of the grid "
                             f"(its values: {values})")
        points = [dict(p, **q) for p, hit in zip(points, matched) for q in (sub_points if hit else [{}])]
    return points


def expand_grid(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None, *,
                where: str = "grid") -> list[dict[str, Any]]:
    """The parameter points of a grid (see the module's documentation for the forms), in order,
    without duplicates. `where` names the grid in errors (a when rule's sub-grid gives its place)."""
    if grid is None:
        return [{}]
    if isinstance(grid, Mapping):
        points = _expand_mapping(grid, where, scalars=False)
    elif isinstance(grid, (list, tuple)):
        if not grid:
            raise ValueError(f"{where} is an empty list of sub-grids, which has no point; give None (or {{}}) to "
                             f"run the base configuration alone")
        points = []
        for i, sub in enumerate(grid):
            if not isinstance(sub, Mapping):
                raise TypeError(f"{where}[{i}] must be a mapping of keys to values, got {sub!r}")
            points += _expand_mapping(sub, f"{where}[{i}]", scalars=True)
    else:
        raise TypeError(f"{where} must be a mapping of keys to lists or a list of such mappings, got "
                        f"{type(grid).__name__}")
    seen, out = set(), []
    for p in points:
        ident = json.dumps(p, sort_keys=True, default=repr)
        if ident not in seen:
            seen.add(ident)
            out.append(p)
    return out


# ---- identities -----------------------------------------------------------------------------------

_MODEL_VERSION: str | None = None
# Package files that do not change what a run computes: editing them keeps stored results valid.
_NOT_MODEL = {"cli.py", "plot.py", "sweep.py", "store.py", "reproduce.py", "__main__.py"}


def extension_digest() -> str:
    """A SHA-256 of the compiled C core this process loaded (gpucachex._core): what runs, which the
    sources in csrc/ need not be (a checkout edited since its last build, an installed package that
    ships no sources)."""
    from gpucachex import _core

    h = hashlib.sha256()
    with open(_core.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_version() -> str:
    """``<gpucachex version>+<digest>``: the digest covers the package's Python sources that compute
    results, the loaded C extension's bytes (`extension_digest`) and, in a source checkout, the C core's
    sources (csrc/), so stored runs of another model are never reused. Computed once per process."""
    global _MODEL_VERSION
    if _MODEL_VERSION is None:
        import gpucachex

        pkg = Path(gpucachex.__file__).resolve().parent
        files = [p for p in pkg.rglob("*.py")
                 if p.name not in _NOT_MODEL or p.parent != pkg
                 if "experiments" not in p.relative_to(pkg).parts]
        csrc = pkg.parent / "csrc"
        if csrc.is_dir():
            files += [p for p in csrc.rglob("*") if p.suffix in (".c", ".h")
                      and "tests" not in p.relative_to(csrc).parts]
        h = hashlib.sha256(b"extension\0" + extension_digest().encode() + b"\0")
        for p in sorted(files, key=lambda p: p.relative_to(pkg.parent).as_posix()):
            h.update(p.relative_to(pkg.parent).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
        _MODEL_VERSION = f"{gpucachex.__version__}+{h.hexdigest()[:12]}"
    return _MODEL_VERSION


def trace_digest(trace: Trace) -> str:
    """A SHA-256 over everything of a Trace the core reads (columns, addresses, launch shapes, opcode
    table, copies): equal for equal traces on any machine."""
    h = hashlib.sha256(b"gpucachex-trace-1\0")
    h.update(json.dumps([list(trace.opcodes), [list(map(int, m)) for m in trace.memcpys]]).encode())
    for k in trace.kernels:
        meta = [k.name, [int(x) for x in k.grid], [int(x) for x in k.block], int(k.nregs), int(k.shmem_bytes)]
        h.update(json.dumps(meta).encode())
        for name in (*INST_COLUMNS, "addresses"):
            col = getattr(k, name)
            h.update(f"{name}:{col.dtype.str}:{col.shape}".encode())
            h.update(memoryview(col.tobytes() if not col.flags.c_contiguous else col).cast("B"))
    return h.hexdigest()[:32]


_PATH_DIGESTS: dict[tuple, str] = {}


def path_digest(path: Path) -> str:
    """A SHA-256 of a trace file's bytes, of a kernelslist.g's and those of the kernel files it lists
    (re-tracing a kernel keeps the list as it is), or of every file (name and bytes) in a trace folder."""
    from gpucachex.traceio import trace_files

    path = path.resolve()
    files = trace_files(path) if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    stamp = (str(path), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if stamp not in _PATH_DIGESTS:
        h = hashlib.sha256(b"gpucachex-file-1\0")
        base = path if path.is_dir() else path.parent
        for p in files:
            h.update((Path(os.path.relpath(p, base)).as_posix() if p != path else "").encode() + b"\0")
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        _PATH_DIGESTS[stamp] = h.hexdigest()[:32]
    return _PATH_DIGESTS[stamp]


def _isa_digest(tables: dict) -> str:
    """A SHA-256 of opcode tables (`isa.tables`), the same wherever the same tables are installed."""
    return hashlib.sha256(json.dumps(tables, sort_keys=True).encode()).hexdigest()


def isa_identity() -> str:
    """What the opcode tables add to the identity of a workload read or built through them (trace files
    and built-in models): nothing while they are gpucachex's own (model_version covers isa.py), else
    "+isa:<digest>" of the tables, so a stored run of a trace read with other classes is not reused."""
    from gpucachex import isa

    t = isa.tables()
    if t == isa.BUILT_IN_TABLES:
        return ""
    return "+isa:" + _isa_digest(t)[:16]


def workload_name(workload: Any) -> str:
    """What the `workload` column shows: the name as given, or a Trace's name, with the bytes of a file
    name that are not UTF-8 escaped (store.utf8_text): the frame and the store could not hold them."""
    if isinstance(workload, Trace):
        return utf8_text(workload.name or workload.source or "trace")
    return utf8_text(str(workload))


def workload_ref(workload: Any) -> tuple[str, str, str]:
    """(kind, how a worker rebuilds it, canonical identity) of a workload; raises for unknown names.
    kind is "name" (a built-in model: rebuilt from ``name:size``), "path" (reloaded from the file) or
    "trace" (an in-memory Trace: shipped to workers)."""
    if isinstance(workload, Trace):   # classified already: its columns hold the classes
        ident = "trace:" + trace_digest(workload)
        return "trace", ident, ident
    if isinstance(workload, (str, os.PathLike)):
        if not os.fspath(workload):   # Path("") is the working folder, which would be digested whole
            raise ValueError("a workload is an empty string; give a built-in name (`gpucachex workloads` lists "
                             "them) or a trace's path")
        path = Path(workload)
        if path.is_dir():
            # Before any run, and before path_digest reads every file below it (the parent of several
            # traces, a home folder): a trace folder holds a kernelslist.g, and the files it lists.
            if not (path / "kernelslist.g").is_file():
                raise ValueError(f"workload {str(workload)!r}: the folder {path.resolve()} holds no kernelslist.g, "
                                 f"so it is no trace (give a trace's folder, its kernelslist.g, or a trace file)")
            from gpucachex.traceio import trace_files

            trace_files(path)   # a kernel file the listing names but the folder lacks: FileNotFoundError naming it
        if path.exists():
            return "path", str(path.resolve()), "file:" + path_digest(path) + isa_identity()
        from gpucachex import workloads

        name, _, size = str(workload).partition(":")
        if name in workloads.names():
            size = size or "small"
            if size not in workloads.SIZES:
                raise ValueError(f"workload {str(workload)!r}: unknown size {size!r} (sizes: {', '.join(workloads.SIZES)})")
            # A model's kernels are classified through the opcode tables too, as it is built.
            return "name", f"{name}:{size}", f"{name}:{size}" + isa_identity()
        from gpucachex.sim import unknown_workload

        raise unknown_workload(workload)
    raise TypeError(f"a workload is a Trace, a path or a workload name, got {type(workload).__name__}")


def run_key(config_key: str, workload_id: str, seed: int, version: str | None = None) -> str:
    """The key of one run in the results store (a digest; see the module's documentation)."""
    blob = json.dumps({"format": STORE_FORMAT, "version": version or model_version(), "config": config_key,
                       "workload": workload_id, "seed": int(seed)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# ---- points ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    """One run of a sweep: the swept values, the full configuration, the workload and the seed."""
    params: tuple[tuple[str, Any], ...]
    config: Config
    workload: Any
    workload_name: str
    seed: int
    workload_id: str = ""
    ref: tuple[str, str] = ("", "")   # (kind, how a worker rebuilds the workload)
    run_key: str = ""

    def key(self) -> str:
        return self.run_key or run_key(self.config.key(), self.workload_id or workload_ref(self.workload)[2], self.seed)

    def info(self) -> dict[str, Any]:
        """What the results store records about the run besides its metrics."""
        return dict(run_key=self.key(), config_key=self.config.key(), workload=self.workload_name,
                    workload_id=self.workload_id, seed=self.seed, version=model_version(),
                    params={k: clean_value(v) for k, v in self.params})


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    if isinstance(seeds, (int, str)) or not _is_values(seeds):
        raise TypeError(f"seeds must be a list of non-negative integers, got {seeds!r}")
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"seed {s!r} is not an integer")
        if not 0 <= int(s) < 2**64:   # the core's seeds are 64-bit
            raise ValueError(f"seed {s!r} is outside 0 to 2**64 - 1")
        out.append(int(s))
    if not out:
        raise ValueError("a sweep needs at least one seed")
    twice = sorted({s for s in out if out.count(s) > 1})
    if twice:  # its rows would be counted twice in every mean over seeds
        raise ValueError(f"seed {twice[0]} is listed twice in {out}")
    return out


def _effective(cfg: Config) -> tuple:
    """What of `cfg` a run reads: every key but the parameters of techniques no technique key selects
    (a LoSCache period with l2.power = "none") and those of a replacement policy its cache level does
    not use (l2.srrip.rrpv_bits with l2.policy = "lru"), which neither the core nor the energy model
    reads."""
    keys = schema()
    selected = {cfg[k] for k, spec in keys.items() if spec.type == "technique"}

    def read(key: str) -> bool:
        if keys[key].technique is not None:
            return keys[key].technique in selected
        parts = key.split(".")   # <level>.<policy>.<param> for a policy's parameter
        chooser = keys.get(f"{parts[0]}.policy")
        if len(parts) == 3 and chooser is not None and chooser.type == "policy" and parts[1] in (chooser.choices or ()):
            return cfg[f"{parts[0]}.policy"] == parts[1]
        return True

    return tuple((k, v) for k, v in cfg.items() if read(k))


def _warn_repeated(repeats: list[tuple[tuple[dict, Config], tuple[dict, Config]]]) -> None:
    """Warn that grid points repeat others' runs: they differ from them only in keys no run of theirs
    reads, so their rows are the same numbers again, counted twice by a mean over them. `repeats`:
    (the point, its configuration) and the same of the first point it repeats. Called by `points` and
    `sweep` themselves, so that the warning names the line of their caller (a notebook cell, a script)."""
    import warnings

    ignored: list[str] = []
    for (_, a), (_, b) in repeats:
        ignored += [k for k in a if a[k] != b[k] and k not in ignored]
    (later, _), (first, _) = repeats[0]
    warnings.warn(f"{len(repeats)} grid point(s) repeat the runs of others, differing from them only in "
                  f"{', '.join(ignored)}, read only by a technique or replacement policy those points do not "
                  f"select (such as {later} and {first}); a 'when' rule sweeps such keys only where they are read",
                  stacklevel=3)


def points(base: Config, grid, workloads: Sequence[Any], seeds: Sequence[int] = (0,)) -> list[Point]:
    """Every run of a sweep, in row order (grid points, then workloads, then seeds). Configurations,
    workloads and seeds are validated up front: a bad grid fails before any run."""
    out, repeats = _points(base, grid, workloads, seeds)
    if repeats:
        _warn_repeated(repeats)
    return out


def _points(base: Config, grid, workloads: Sequence[Any], seeds: Sequence[int]) -> tuple[list[Point], list]:
    """`points`, and the grid points that repeat others' runs (see `_warn_repeated`), which the caller
    warns of: a warning raised in here would name a line of this module when `sweep` calls it, which a
    notebook shows the first time only (Python shows a warning once per line it names)."""
    if not isinstance(base, Config):
        raise TypeError(f"base must be a Config (or a preset name), got {type(base).__name__}")
    if isinstance(workloads, (str, os.PathLike, Trace)):
        workloads = [workloads]   # one workload, not the characters of its name
    workloads = list(workloads)
    if not workloads:
        raise ValueError("a sweep needs at least one workload")
    seeds = _check_seeds(seeds)
    refs = [workload_ref(w) for w in workloads]
    name_of: dict[str, str] = {}   # identity -> name of the workloads so far
    ident_of: dict[str, str] = {}  # name -> identity
    for w, (_, _, ident) in zip(workloads, refs):
        name = workload_name(w)
        if ident in name_of:  # its rows would be counted twice in every mean over workloads
            earlier = name_of[ident]
            same = "listed twice" if name == earlier else f"the same workload ({ident}) as {earlier!r}, listed earlier"
            raise ValueError(f"workload {name!r} is {same}")
        if name in ident_of:  # two workloads whose rows the workload column could not tell apart
            raise ValueError(f"two different workloads are both named {name!r} ({ident_of[name]} and {ident}); "
                             f"give the traces distinct names (Trace.name)")
        name_of[ident], ident_of[name] = name, ident
    grid_points = expand_grid(grid)
    columns: list[str] = []       # swept columns in order of first appearance
    configured = []
    first_of: dict[str, dict[str, Any]] = {}   # configuration key -> the first point that gave it
    first_effective: dict[tuple, tuple[dict, Config]] = {}   # what a run reads -> the first point that gave it
    repeats: list[tuple[tuple[dict, Config], tuple[dict, Config]]] = []
    for params in grid_points:
        resolved: dict[str, Any] = {}
        for k, v in params.items():
            full = k if k == LABEL else resolve_key(k)
            if full in resolved:
                raise ValueError(f"grid point {params} sets {full} twice")
            resolved[full] = v
        overrides = {k: v for k, v in resolved.items() if k != LABEL}
        cfg = base.replace(**overrides) if overrides else base
        columns += [k for k in resolved if k not in columns]
        first = first_of.get(cfg.key())
        if first is not None:  # one run: a second row would be counted twice by every mean and plot
            label, kept = resolved.get(LABEL), first.get(LABEL)
            if label is not None and kept is not None and label != kept:
                raise ValueError(f"grid points labelled {kept!r} and {label!r} give the same configuration "
                                 f"({first} and {resolved}); one label would name no row")
            if kept is None and label is not None:
                first[LABEL] = label
            continue
        first_of[cfg.key()] = resolved
        configured.append((resolved, cfg))
        earlier = first_effective.setdefault(_effective(cfg), (resolved, cfg))
        if earlier[0] is not resolved:
            repeats.append(((resolved, cfg), earlier))
    out = []
    for resolved, cfg in configured:
        # Config values (canonical types) for every swept key, so rows of sub-grids line up.
        row_params = tuple((k, resolved.get(k) if k == LABEL else cfg[k]) for k in columns)
        for w, (kind, spec, ident) in zip(workloads, refs):
            for s in seeds:
                out.append(Point(row_params, cfg, w, workload_name(w), s, ident, (kind, spec),
                                 run_key(cfg.key(), ident, s)))
    return out, repeats


# ---- running one point ----------------------------------------------------------------------------

class _WorkloadCache:
    """Workloads rebuilt from their identity, kept while they are in use: a small LRU, with one build
    at a time per workload when several threads ask for it. A trace file is kept under the content
    identity the sweep gave it, and checked to still have it when it is read: a file re-traced since
    (while a sweep runs, or between two sweeps on a Dask worker that outlives them) or another file
    at that path on another machine would give its results under the identity, and so the run key, of
    the content the sweep named."""

    def __init__(self, capacity: int = 2):
        self.capacity = max(1, capacity)
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[tuple, threading.Lock] = {}
        self.traces: dict[str, Trace] = {}   # in-memory traces shipped to this process, by identity

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get(self, ref: tuple[str, str], ident: str | None = None) -> Trace:
        kind, spec = ref
        if kind == "trace":
            return self.traces[spec]
        ref = (kind, spec, ident)
        with self._lock:
            if ref in self._items:
                self._items.move_to_end(ref)
                return self._items[ref]
            build_lock = self._building.setdefault(ref, threading.Lock())
        with build_lock:
            with self._lock:
                if ref in self._items:
                    return self._items[ref]
            from gpucachex.sim import resolve_workload

            trace = resolve_workload(spec)
            if kind == "path" and ident is not None:
                # After reading: a file that changed before or while it was read has another digest now.
                found = workload_ref(spec)[2]
                if found != ident:
                    raise ValueError(f"workload {spec}: the file's content is not the one the sweep identified "
                                     f"({ident}); it is {found} here (re-traced since, or another file at this "
                                     f"path on this worker); run the sweep again to simulate what it holds now")
            with self._lock:
                self._items[ref] = trace
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                self._building.pop(ref, None)
            return trace


_WORKER_CACHE = _WorkloadCache(2)          # in worker processes (processes executor, Dask workers)
_WORKER_CONFIGS: dict[str, Config] = {}
_WORKER_ISA: list[str] = [""]              # the digest of the opcode tables this worker installed last


def _isa_shipment() -> tuple[str, dict]:
    """(digest, tables) of this process's opcode tables, for workers to install (`_use_isa`)."""
    from gpucachex import isa

    t = isa.tables()
    return _isa_digest(t), t


def _use_isa(shipment: tuple[str, dict]) -> None:
    """Classify opcodes in this worker as the sweeping process does (its `register_opcode` calls are
    not seen by spawned processes or Dask workers), before any workload is read or built here. A Dask
    worker serves sweeps of other tables in turn: workloads it kept from those are dropped."""
    digest, t = shipment
    if digest != _WORKER_ISA[0]:
        from gpucachex import isa

        isa.install_tables(t)
        _WORKER_CACHE.clear()
        _WORKER_ISA[0] = digest


def _init_worker(traces: dict[str, Trace], isa_shipment: tuple[str, dict]) -> None:
    _use_isa(isa_shipment)
    _WORKER_CACHE.traces.update(traces)


def _execute(config, ref: tuple[str, str], seed: int, trace: Trace | None = None, cache: _WorkloadCache | None = None,
             isa_shipment: tuple[str, dict] | None = None, stop: threading.Event | None = None,
             ident: str | None = None, version: str | None = None):
    """Simulate one run where it is executed (a thread, a process, a Dask worker). `config` is a Config
    or (values, name, key) from another process; `isa_shipment` the sweeping process's opcode tables,
    from a Dask client; `stop` stops the run (KeyboardInterrupt) when set; `ident` the workload's
    identity in the run key (`Point.workload_id`), which a trace file must still have; `version` the
    sweeping process's `model_version()`, in the run key too, which a worker of another process must
    run (a Dask worker of an older install would store its results as the new model's). Returns ("ok", metrics,
    wall_seconds) or ("error", message, traceback): errors travel as text, so any executor can report
    them."""
    if stop is not None and stop.is_set():   # the sweep was stopped while this run waited
        raise KeyboardInterrupt
    try:
        from gpucachex.sim import simulate

        if version is not None and version != model_version():
            raise RuntimeError(f"this worker runs gpucachex model {model_version()}, not the sweep's {version}, "
                               f"under which its results would be stored; give every worker the same "
                               f"gpucachex build as the sweeping process")
        if isa_shipment is not None:
            _use_isa(isa_shipment)
        if not isinstance(config, Config):
            values, name, key = config
            if key not in _WORKER_CONFIGS:
                if len(_WORKER_CONFIGS) > 256:
                    _WORKER_CONFIGS.clear()
                _WORKER_CONFIGS[key] = Config(values, name=name)
            config = _WORKER_CONFIGS[key]
        if trace is None:
            trace = (cache or _WORKER_CACHE).get(tuple(ref), ident)
        result = simulate(config, trace, seed=seed, stop=stop)
        return "ok", {k: clean_value(v) for k, v in result.metrics.items()}, float(result.wall_seconds)
    except Exception as exc:  # reported per run; the sweep goes on with the others
        return "error", f"{type(exc).__name__}: {exc}", traceback.format_exc()


def _row(point: Point, metrics: Mapping[str, Any], wall_seconds: float) -> dict[str, Any]:
    row: dict[str, Any] = dict(point.params)
    row.update(workload=point.workload_name, seed=point.seed, config_key=point.config.key(), run_key=point.key(),
               preset=point.config.name)
    row.update(metrics)
    row["wall_seconds"] = wall_seconds
    return row


def run_point(point: Point) -> dict[str, Any]:
    """Simulate one point here and now (no store) and return its DataFrame row."""
    status, a, b = _execute(point.config, point.ref, point.seed,
                            trace=point.workload if isinstance(point.workload, Trace) else None,
                            cache=_WorkloadCache(1), ident=point.workload_id or None)
    if status != "ok":
        raise RuntimeError(f"{point.workload_name} seed {point.seed} {dict(point.params)}: {a}")
    return _row(point, a, b)


# ---- executors ------------------------------------------------------------------------------------

class _ThreadRunner:
    """Runs on a thread pool in this process; workloads are built once and shared by the threads."""

    def __init__(self, jobs: int):
        from concurrent.futures import ThreadPoolExecutor

        self.window = 2 * jobs
        self.cache = _WorkloadCache(jobs + 1)
        self.pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="gpucachex-sweep")
        # Ctrl-C reaches only the sweep's own thread, never the pool's: they stop their runs when it is set.
        self.stopping = threading.Event()

    def submit(self, p: Point):
        trace = p.workload if isinstance(p.workload, Trace) else None
        return self.pool.submit(_execute, p.config, p.ref, p.seed, trace, self.cache, None, self.stopping,
                                p.workload_id)

    def wait(self, futures):
        from concurrent.futures import FIRST_COMPLETED, wait

        return wait(futures, return_when=FIRST_COMPLETED).done

    def stop(self, futures) -> None:
        """Stop the runs in flight (each within a few cycles of the model) and wait until they ended."""
        self.stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self, cancel: bool = False) -> None:
        if cancel:
            self.stopping.set()
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


def _ship_config(cfg: Config):
    return cfg.to_dict(), cfg.name, cfg.key()


class _ProcessRunner:
    """Runs on worker processes of this machine (spawned: no state inherited by fork); workers rebuild
    named and file workloads themselves, in-memory Traces are sent once per worker."""

    BROKEN_HINT = ("a worker process died: a run crashed it, or the script lacks the `if __name__ == "
                   "'__main__':` guard that spawned workers need")

    def __init__(self, jobs: int, traces: dict[str, Trace]):
        self.jobs, self.traces = jobs, traces
        self.isa = _isa_shipment()
        self.window = 2 * jobs
        self.restarts = 0   # pools that broke since a run last finished
        self._start()

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_init_worker, initargs=(self.traces, self.isa))

    def submit(self, p: Point):
        from concurrent.futures.process import BrokenProcessPool

        args = (_execute, _ship_config(p.config), p.ref, p.seed)
        options = dict(ident=p.workload_id, version=model_version())
        try:
            return self.pool.submit(*args, **options)
        except BrokenProcessPool:  # a run killed its worker: start a fresh pool for the remaining runs
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.restarts += 1
            if self.restarts > 3:
                raise RuntimeError(f"{self.BROKEN_HINT}; stopped after {self.restarts} attempts "
                                   f"(finished runs are kept)") from None
            self._start()
            return self.pool.submit(*args, **options)

    def wait(self, futures):
        from concurrent.futures import FIRST_COMPLETED, wait

        done = wait(futures, return_when=FIRST_COMPLETED).done
        if any(f.exception() is None for f in done):
            self.restarts = 0
        return done

    def stop(self, futures) -> None:
        """Drop the queued runs and end the workers. A Ctrl-C that reached this process alone (kill -INT
        of its pid, an IDE's stop button) leaves them simulating their runs unseen, and the interpreter
        waits for them at exit, for as long as those runs take. They hold nothing of the store."""
        workers = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()

    def close(self, cancel: bool = False) -> None:
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


def connect_dask(address: str, timeout: str = "30s"):
    """A distributed.Client of the Dask scheduler at `address`; an address that is malformed or
    cannot be reached is a ValueError or ConnectionError naming it."""
    import distributed

    if not isinstance(address, str):
        raise TypeError(f"a Dask scheduler address is a string such as 'tcp://host:8786', got {address!r}")
    try:
        return distributed.Client(address, timeout=timeout)
    except ValueError as exc:
        raise ValueError(f"Dask scheduler address {address!r}: {exc}") from None
    except OSError as exc:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address} ({exc})") from None


class _DaskRunner:
    """Runs on a Dask distributed cluster: the scheduler at `address`, or a LocalCluster of `jobs`
    single-threaded worker processes (loopback only) started and closed here."""

    CANCELLED_HINT = ("the Dask cluster cancelled the run: a worker holding data it needed died, or another "
                      "client cancelled it; the next sweep runs it again")

    def __init__(self, jobs: int | None, address: str | None, traces: dict[str, Trace]):
        import distributed

        self.cluster = None
        if address is None:
            self.cluster = distributed.LocalCluster(n_workers=jobs or _cpu_count(), threads_per_worker=1,
                                                    processes=True, host="127.0.0.1", dashboard_address=None)
            self.client = distributed.Client(self.cluster)
        else:
            self.client = connect_dask(address)
        self._window, self._window_due = 2, 0.0
        self.workloads = traces
        try:
            self.traces = {ident: self.client.scatter(t, hash=False) for ident, t in traces.items()}
        except BaseException:   # the cluster this runner started must not outlive it
            self.close()
            raise
        # With every run, not once per worker: a cluster's workers outlive this sweep, and may join it late.
        # In the run's own arguments (about a kilobyte), not scattered: scattered data dies with the workers
        # that hold it, and every later run would be cancelled for want of it.
        self.isa = _isa_shipment()

    WINDOW_REFRESH_S = 5.0

    @property
    def window(self) -> int:
        """Runs in flight: two per worker thread the cluster has now, asked again every few seconds. A
        cluster that grows while the sweep runs (an adaptive one, which may start with no worker) would
        otherwise be given only the runs its first workers could take, and never grow."""
        import time

        if time.monotonic() >= self._window_due:
            self._window = max(2, 2 * sum(self.client.nthreads().values()))
            self._window_due = time.monotonic() + self.WINDOW_REFRESH_S
        return self._window

    def _trace(self, ident: str):
        """The scattered copy of an in-memory Trace, scattered again when the workers that held it died
        (Dask cannot recompute scattered data; the runs waiting for it were cancelled)."""
        fut = self.traces[ident]
        if fut.status in ("lost", "cancelled", "error"):
            fut = self.traces[ident] = self.client.scatter(self.workloads[ident], hash=False)
        return fut

    def submit(self, p: Point):
        trace = self._trace(p.ref[1]) if p.ref[0] == "trace" else None
        return self.client.submit(_execute, _ship_config(p.config), p.ref, p.seed, trace, None, self.isa,
                                  ident=p.workload_id, version=model_version(), key=f"gpucachex-run-{p.key()}",
                                  retries=0)

    def wait(self, futures):
        from concurrent.futures import CancelledError

        import distributed

        try:
            return set(distributed.wait(list(futures), return_when="FIRST_COMPLETED").done)
        except CancelledError:
            # The cluster cancelled a run (a worker holding data it needed died, another client cancelled
            # it): distributed.wait raises for the whole set, but it is that run's failure, which its
            # result() names; the sweep goes on with the others.
            return {f for f in futures if f.done()}

    def stop(self, futures) -> None:
        """Cancel the runs not finished yet (a finished one keeps its result until it is read)."""
        self.client.cancel([f for f in futures if not f.done()])

    def close(self, cancel: bool = False) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _interactive() -> bool:
    """Running in a Jupyter kernel, whose stderr is no terminal but shows a text progress bar."""
    import sys

    return "ipykernel" in sys.modules


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# ---- the sweep ------------------------------------------------------------------------------------

def _record(p: Point, outcome: tuple[str, Any, Any], store, results: dict, failures: list) -> None:
    status, a, b = outcome
    if status == "ok":
        results[p.key()] = (a, b)
        if store is not None:
            store.put(p.info(), p.config, a, b)
    else:
        failures.append((p, a, b))
        if store is not None:
            store.put_failure(p.info(), a, b)


def _dispatch(runner, pending: collections.deque, store, results: dict, failures: list, bar) -> int:
    """Run the pending points, at most `runner.window` at a time, committing each result to the store as
    it arrives. Returns how many runs another sweep stored meanwhile (read instead of simulated)."""
    found = 0
    inflight: dict[Any, Point] = {}
    try:
        while pending or inflight:
            while pending and len(inflight) < runner.window:
                p = pending.popleft()
                if store is not None and p.key() in store:   # another sweep finished it meanwhile
                    results[p.key()] = store.get(p.key())
                    found += 1
                    if bar is not None:
                        bar.update(1)
                    continue
                inflight[runner.submit(p)] = p
            if not inflight:
                break
            for fut in runner.wait(inflight):
                # In flight until committed: a Ctrl-C while its commit waits for the store rolls the commit
                # back, and the handler below then commits the finished run instead of losing it.
                p = inflight[fut]
                try:
                    outcome = fut.result()
                except Exception as exc:  # the worker died (BrokenProcessPool, KilledWorker, ...)
                    hint = ""
                    if type(exc).__name__ == "BrokenProcessPool":
                        hint = f" ({_ProcessRunner.BROKEN_HINT})"
                    elif isinstance(exc, concurrent.futures.CancelledError):   # Dask's, not Ctrl-C's
                        hint = f" ({_DaskRunner.CANCELLED_HINT})"
                    outcome = "error", f"{type(exc).__name__}: {exc}{hint}", traceback.format_exc()
                _record(p, outcome, store, results, failures)
                del inflight[fut]
                if bar is not None:
                    bar.update(1)
    except BaseException:
        # Ctrl-C (or an error here): stop the runs in flight rather than let them simulate on unseen, and
        # keep those that finished before they were read, which nothing would commit later.
        runner.stop(list(inflight))
        try:
            for fut, p in inflight.items():
                if not fut.done() or fut.cancelled():
                    continue
                try:
                    outcome = fut.result()
                except BaseException:  # stopped halfway (KeyboardInterrupt), or its worker died: not a result
                    continue
                _record(p, outcome, store, results, failures)
        except Exception:  # best effort (the store may be what failed): the error that stopped the sweep is raised
            pass
        raise
    return found


def sweep(base: Config | str, grid=None, workloads: Sequence[Any] = (), *, seeds: Sequence[int] = (0,),
          store=None, executor: str = "local", jobs: int | None = None, address: str | None = None,
          progress: bool | None = None, errors: str = "raise", desc: str | None = None):
    """Run every point of `grid` on every workload and seed; one DataFrame row per run (see the module's
    documentation for grids and columns), in the order grid points, workloads, seeds.

    `base`: a Config or a preset name. `workloads`: built-in names (``"bfs"``, ``"bfs:medium"``), trace
    paths or Trace objects. `store`: a ResultsStore or the path of its SQLite file: runs it holds are
    not simulated again, each new run is committed as soon as it finishes. `executor`: ``"local"`` or
    ``"threads"`` (a thread pool; default), ``"processes"`` (spawned worker processes) or ``"dask"`` (a
    Dask distributed cluster at `address`, or a LocalCluster of `jobs` workers when no address is
    given). `jobs`: workers (default: every core; not with `address`, whose cluster has its own). `progress`: a progress bar with ETA on stderr (None:
    when stderr is a terminal or in a notebook). `errors`: ``"raise"`` (default: after every other run
    finished, raise SweepError naming the failed runs) or ``"skip"`` (leave their rows out). Failed runs
    are recorded in the store with their error and retried by the next sweep. `desc`: the progress
    bar's label.

    The frame's ``attrs["sweep"]`` counts runs, runs read from the store, simulated and failed.
    """
    import numpy as np
    import pandas as pd
    from tqdm import tqdm

    if isinstance(base, str):
        from gpucachex import presets

        base = presets.get(base)
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if address is not None and executor != "dask":
        raise ValueError(f"address={address!r} needs executor='dask'")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if jobs is not None and address is not None:   # it would be ignored: the cluster's workers run
        raise ValueError(f"jobs={jobs!r} sizes the LocalCluster a Dask sweep starts without an address; the "
                         f"cluster at {address} runs on its own workers: leave jobs out")
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None (a bar only where one shows), got {progress!r}")

    todo, repeats = _points(base, grid, workloads, seeds)
    if repeats:
        _warn_repeated(repeats)
    unique: dict[str, Point] = {}
    for p in todo:
        unique.setdefault(p.key(), p)
    store, opened = open_store(store)
    results: dict[str, tuple[dict, float]] = {}
    failures: list[tuple[Point, str, str]] = []
    stored = 0
    try:
        if store is not None:
            results.update(store.get_many(unique))
            stored = len(results)
        # Workload-major order: a worker keeps one workload in memory at a time.
        order = {w: i for i, w in enumerate(dict.fromkeys(p.workload_id for p in unique.values()))}
        pending = collections.deque(sorted((p for k, p in unique.items() if k not in results),
                                           key=lambda p: order[p.workload_id]))
        if pending and store is not None:
            # Before any run: each finished one is committed at once, and could not be.
            store.require_writable(f"storing the {len(pending)} runs this sweep has to simulate")
        if pending:
            jobs = jobs or _cpu_count()
            traces = {p.workload_id: p.workload for p in pending if p.ref[0] == "trace"}
            if executor in ("local", "threads"):
                runner = _ThreadRunner(min(jobs, len(pending)))
            elif executor == "processes":
                runner = _ProcessRunner(min(jobs, len(pending)), traces)
            else:
                runner = _DaskRunner(jobs, address, traces)
            bar = None if progress is False else tqdm(
                total=len(unique), initial=stored, unit="run", desc=desc or "sweep", dynamic_ncols=True,
                smoothing=0.1, disable=False if progress or _interactive() else None)  # None: only on a terminal
            cancel = True
            try:
                stored += _dispatch(runner, pending, store, results, failures, bar)
                cancel = False
            finally:
                if bar is not None:
                    bar.close()
                runner.close(cancel=cancel)
    finally:
        if opened:
            store.close()

    rows = [_row(p, *results[p.key()]) for p in todo if p.key() in results]
    frame = pd.DataFrame(rows)
    frame.attrs["sweep"] = dict(runs=len(unique), stored=stored, simulated=len(unique) - stored - len(failures),
                                failed=len(failures))
    if failures:
        frame.attrs["failures"] = [dict(run_key=p.key(), workload=p.workload_name, seed=p.seed, params=dict(p.params),
                                        error=error) for p, error, _ in failures]
    if failures and errors == "raise":
        p, error, _ = failures[0]
        raise SweepError(f"{len(failures)} of {len(unique)} runs failed (finished runs are kept"
                         f"{' in the store' if store is not None else ''}); first: {p.workload_name} seed {p.seed} "
                         f"{dict(p.params)}: {error}", failures, frame)
    return frame


# ---- after the sweep ------------------------------------------------------------------------------

def normalize(frame, metrics: str | Sequence[str], baseline: Mapping[str, Any] | str,
              by: Sequence[str] = ("workload", "seed")):
    """Divide `metrics` by the value of the baseline run with the same `by` columns; the baseline is
    the row whose swept keys equal `baseline` (a mapping), or whose label is `baseline` (a string).
    Returns a copy with ``<metric>_norm`` columns."""
    import pandas as pd

    if isinstance(baseline, str):
        baseline = {LABEL: baseline}
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    by = [by] if isinstance(by, str) else list(by)
    for m in metrics:
        if m not in frame.columns:
            raise KeyError(f"metric {m!r} is not a column of the sweep")
        if not pd.api.types.is_numeric_dtype(frame[m]):
            raise TypeError(f"metric {m!r} holds {frame[m].dtype} values, not numbers; it cannot be normalised")
    for b in by:
        if b not in frame.columns:
            raise KeyError(f"by column {b!r} is not a column of the sweep (columns: {', '.join(map(str, frame.columns))})")
    base_mask = pd.Series(True, index=frame.index)
    for k, v in baseline.items():
        col = k if k in frame.columns or k == LABEL else resolve_key(k)
        if col not in frame.columns:
            raise KeyError(f"baseline key {k!r} is not a column of the sweep")
        base_mask &= frame[col] == v
    if not base_mask.any():
        raise ValueError(f"no run of the sweep matches the baseline {dict(baseline)}")
    ref = frame.loc[base_mask, by + metrics]
    if ref.duplicated(subset=by).any():
        raise ValueError(f"baseline {dict(baseline)} matches several runs per {by}; add keys to it")
    ref = ref.rename(columns={m: f"{m}__base" for m in metrics})
    out = frame.copy()
    joined = out[by].merge(ref, on=by, how="left", indicator=True)  # keeps the rows' order
    import warnings

    import numpy as np

    def shown(rows) -> str:
        return ", ".join("/".join(map(str, row)) for row in rows.drop_duplicates().itertuples(index=False))

    for m in metrics:
        base = joined[f"{m}__base"].to_numpy(dtype=float, na_value=np.nan)
        # A ratio over a baseline of 0 is a ratio over nothing: NaN, as energy.compare gives, not numpy's
        # inf (x/0), which would draw as an endless bar and make every mean over it inf.
        zero = base == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{m}_norm"] = np.where(zero, np.nan, out[m].to_numpy(dtype=float, na_value=np.nan) / base)
        if zero.any():
            warnings.warn(f"normalize: the baseline's {m!r} is 0 for {'/'.join(by)} {shown(joined.loc[zero, by])}; "
                          f"their {m}_norm values are NaN", stacklevel=2)
    orphans = joined.loc[joined["_merge"] == "left_only", by]
    if len(orphans):
        # A baseline run that failed (errors="skip") or was not swept: those ratios are NaN.
        count = len(orphans.drop_duplicates())
        warnings.warn(f"normalize: no baseline run {dict(baseline)} for {count} {'/'.join(by)} value(s) "
                      f"({shown(orphans)}); their normalised values are NaN", stacklevel=2)
    return out
