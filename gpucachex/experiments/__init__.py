"""The papers' experiments behind `gpucachex reproduce`. Each paper has a module here with
`NAME`, `TITLE` and `run(ctx) -> None`; the sweeps it runs are TOML specs in the repository's
`experiments/` folder (`ctx.sweep("loscache_energy")` runs experiments/loscache_energy.toml), and the
module turns their rows into figures (PNG and PDF) and CSVs through `ctx.figure` and `ctx.table`.

A spec looks like:

    title = "L2 energy of LoSCache and Ideal-Gating, normalized to the baseline L2"
    preset = "loscache"
    workloads = ["sgemm", "lib", "bfs"]
    size = "medium"
    seeds = [0]
    [set]                      # fixed overrides of the preset
    "l1d.allocate" = "miss"
    [grid]                     # swept keys: the cartesian product (gpucachex.sweep also takes
    "l2.power" = ["none", "loscache", "ideal_gating"]   # [grid.zip], [[grid.when]], "label", [[grid]])
    [quick]                    # what --quick changes (any of the above); a key is in [set] or [grid], not both
    size = "small"
    workloads = ["sgemm", "bfs"]
"""
from __future__ import annotations

import importlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

def by_workload(frame, column: str, value):
    """The mean of every numeric column per workload, over the rows whose `column` equals `value`
    (every row when the frame has no such column), in the frame's workload order."""
    rows = frame[frame[column] == value] if column in frame.columns else frame
    return rows.groupby("workload", sort=False).mean(numeric_only=True)


def workload_classes(names) -> list[str]:
    """The class of each built-in workload model named in `names` (``bfs`` or ``bfs:tiny``; "" for
    anything else, e.g. a trace)."""
    from gpucachex import workloads

    known = set(workloads.names())
    bare = [str(w).partition(":")[0] for w in names]
    return [workloads.info(w)["class"] if w in known else "" for w in bare]


# Explicit list: name -> module (gpucachex.experiments.<module>). `gpucachex reproduce --only` takes names.
EXPERIMENTS: dict[str, str] = {
    "drowsy": "drowsy",
    "ata": "ata",
    "admL1D": "admL1D",
    "loscache": "loscache",
}


def experiments_dir() -> Path:
    """The folder of sweep specs and pages: $GPUCACHEX_EXPERIMENTS, else the copy an installed package
    carries (setup.py puts the repository's experiments/ there), else the repository's experiments/
    (a source checkout or an editable install)."""
    env = os.environ.get("GPUCACHEX_EXPERIMENTS")
    installed = Path(__file__).resolve().parent / "specs"
    if env:
        path = Path(env)
    elif installed.is_dir():
        path = installed
    else:
        path = Path(__file__).resolve().parents[2] / "experiments"
    if not path.is_dir():
        raise FileNotFoundError(f"experiment specs not found at {path} (set GPUCACHEX_EXPERIMENTS)")
    return path


SPEC_KEYS = {"title", "preset", "workloads", "size", "seeds", "set", "grid", "quick", "notes"}


def _spec_key_hint(unknown, known) -> str:
    """The known spec keys, led by those an unknown one looks like (a typo: 'worklods')."""
    from gpucachex.config import close_names

    close = [close_names(k, sorted(known), "") for k in sorted(unknown)]
    return "; ".join(c for c in close if c) + ("; " if any(close) else "") + f"known: {sorted(known)}"


def load_spec(name_or_path: str | Path, quick: bool = False) -> dict[str, Any]:
    """A sweep spec with its [quick] section applied when `quick`; unknown keys are errors. A key of
    [quick] replaces the spec's whole value, tables too: a quick `set` or `grid` lists every key it
    keeps, not only the ones it changes."""
    path = Path(name_or_path)
    if not path.suffix:
        path = experiments_dir() / f"{name_or_path}.toml"
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a sweep spec (a TOML file)")
    if not path.is_file():
        raise FileNotFoundError(f"no sweep spec {path}")
    with open(path, "rb") as f:
        try:
            spec = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text, as TOML must be ({exc.reason} at byte {exc.start})") from None
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)} ({_spec_key_hint(unknown, SPEC_KEYS)})")
    for required in ("preset", "workloads"):
        if required not in spec:
            raise ValueError(f"{path}: missing '{required}'")
    q = spec.pop("quick", {})
    if not isinstance(q, dict):
        raise ValueError(f"{path}: 'quick' must be a table of the keys --quick changes, got {q!r}")
    bad = set(q) - (SPEC_KEYS - {"quick"})
    if bad:
        hint = _spec_key_hint(bad, SPEC_KEYS - {"quick"})
        raise ValueError(f"{path}: unknown keys in [quick]: {sorted(bad)} ({hint})")
    _check_spec_types(q, f"{path} [quick]")
    _check_spec_types(spec, str(path))
    _check_spec_types({**spec, **q}, f"{path} with its [quick] table")
    if quick:
        spec.update(q)
    spec.setdefault("size", "small")
    spec.setdefault("seeds", [0])
    spec.setdefault("set", {})
    spec.setdefault("grid", {})
    spec["path"] = str(path)
    spec["name"] = path.stem
    return spec


def _fixed_and_swept(fixed: dict[str, Any], grid) -> list[str]:
    """The configuration keys both fixed in `fixed` ([set], nested tables too) and swept by `grid` (in
    any form: [grid], [[grid]], [grid.zip], [[grid.when]]), by full name, so that a short name in one
    and the full one in the other are one key. A key or grid that is bad in itself is left to the
    sweep, which names it (with the spec's file)."""
    from gpucachex.config import _flat_items, resolve_key
    from gpucachex.sweep import LABEL, expand_grid

    try:
        fixed_keys = {resolve_key(k) for k, _ in _flat_items(fixed)}
        swept = {resolve_key(k) for point in expand_grid(grid or None) for k in point if k != LABEL}
    except (KeyError, ValueError, TypeError):
        return []
    return sorted(fixed_keys & swept)


def _check_spec_types(spec: dict[str, Any], where: str) -> None:
    """Each key of a spec (or of its [quick] table) has the TOML type it needs, and no key is both fixed
    in [set] and swept in [grid] (the grid's values would silently replace the fixed one)."""
    def fail(key: str, want: str) -> None:
        raise ValueError(f"{where}: '{key}' must be {want}, got {spec[key]!r}")

    for key in ("title", "notes", "preset", "size"):
        if key in spec and not isinstance(spec[key], str):
            fail(key, "a string")
    if "workloads" in spec:
        w = spec["workloads"]
        if not isinstance(w, list) or not all(isinstance(x, str) for x in w):
            fail("workloads", "a list of workload names or trace paths (strings)")
    if "seeds" in spec:
        from gpucachex.sweep import _check_seeds   # the sweep's own rule, reported with the spec's file

        try:
            _check_seeds(spec["seeds"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: 'seeds' must be a list of non-negative integers, got {spec['seeds']!r} "
                             f"({exc})") from None
    if "set" in spec and not isinstance(spec["set"], dict):
        fail("set", "a table of configuration keys and values")
    grid = spec.get("grid")
    if grid is not None and not (isinstance(grid, dict)
                                 or (isinstance(grid, list) and all(isinstance(g, dict) for g in grid))):
        fail("grid", "a table of swept keys, or a list of such tables ([[grid]])")
    if isinstance(spec.get("set"), dict) and grid is not None:
        both = _fixed_and_swept(spec["set"], grid)
        if both:
            raise ValueError(f"{where}: {both} both fixed in [set] and swept in [grid]; keep each key in one")


def spec_workloads(spec: dict[str, Any]) -> list[str]:
    """Workload identifiers of a spec: built-in names get the spec's size (``bfs`` -> ``bfs:medium``);
    paths (an existing file, as sweeps take it first, or anything with a "/") and names with an
    explicit size are kept."""
    out = []
    for w in spec["workloads"]:
        # Path(w).exists() first: "mm.npz" in the working folder has no "/" and is no model name.
        out.append(w if (":" in w or "/" in w or Path(w).exists()) else f"{w}:{spec['size']}")
    return out


def workload_labels(spec: dict[str, Any], names: list[str]) -> dict[str, str]:
    """What the `workload` column shows for each of a spec's workloads (`spec_workloads`): a built-in
    model's bare name while every model runs at the spec's size, as the papers name them; else
    ``name:size`` for every model, so that the rows of one model at two sizes stay apart. Paths are
    kept as given."""
    from gpucachex import workloads

    models = {w: w.partition(":") for w in names
              if not Path(w).exists() and w.partition(":")[0] in workloads.names()}
    one_size = all(size == spec["size"] for _, _, size in models.values())
    return {w: models[w][0] if w in models and one_size else w for w in names}


@dataclass
class Output:
    kind: str          # "figure" or "table"
    name: str
    paths: list[str]
    caption: str


@dataclass
class Context:
    """What an experiment module gets: where to write, quick or full, and how to run sweeps."""
    out_dir: Path
    quick: bool = False
    jobs: int | None = None
    sweep_options: dict[str, Any] = field(default_factory=dict)  # passed to gpucachex.sweep (store, executor, ...)
    outputs: list[Output] = field(default_factory=list)

    def spec(self, name: str) -> dict[str, Any]:
        return load_spec(name, quick=self.quick)

    def sweep(self, name: str, **grid_override):
        """Run the spec `name` (or a spec file's path) and return its rows (a DataFrame), also written to
        <out>/<spec name>.csv. `grid_override` replaces swept keys (in every sub-grid of a list grid).
        With a store in `sweep_options`, finished runs are read from it instead of simulated again."""
        from gpucachex import presets
        from gpucachex.sweep import sweep

        spec = self.spec(name)
        grid = spec["grid"]
        if isinstance(grid, list):
            grid = [dict(g, **grid_override) for g in grid]
        else:
            grid = dict(grid, **grid_override)
        options = dict(self.sweep_options)
        options.setdefault("desc", spec["name"])
        names = spec_workloads(spec)
        try:  # a bad preset, [set], grid, workload or seed fails before any run: named by the spec's file
            base = presets.get(spec["preset"], **spec["set"])
            frame = sweep(base, grid, names, seeds=spec["seeds"], jobs=self.jobs, **options)
        except (KeyError, ValueError, TypeError) as exc:   # failed runs are a SweepError (a RuntimeError)
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise type(exc)(f"{spec['path']}: {message}") from None
        if "workload" in frame.columns:
            frame["workload"] = frame["workload"].map(workload_labels(spec, names))
        self.table(frame, spec["name"], spec.get("title", spec["name"]))
        return frame

    def figure(self, fig, name: str, caption: str) -> list[str]:
        from gpucachex.plot import save

        paths = save(fig, self.out_dir / name)
        self.outputs.append(Output("figure", name, paths, caption))
        return paths

    def table(self, frame, name: str, caption: str) -> str:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{name}.csv"
        # Written beside it and renamed: a write cut short (a full disk, Ctrl-C) left a truncated CSV that
        # read as the sweep's rows.
        partial = path.with_name(path.name + ".partial")
        try:
            frame.to_csv(partial, index=False)
            os.replace(partial, path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        self.outputs.append(Output("table", name, [str(path)], caption))
        return str(path)


def get(name: str):
    """The module of experiment `name`: EXPERIMENTS[name] is a module of this package, or an absolute
    module name when it holds a dot (experiments kept outside gpucachex)."""
    try:
        module = EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"unknown experiment {name!r} (known: {', '.join(EXPERIMENTS) or 'none registered'})") from None
    return importlib.import_module(module if "." in module else f"gpucachex.experiments.{module}")
