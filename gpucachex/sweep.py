"""Parameter sweeps: the cartesian product of dotted-key grids over workloads and seeds, one
DataFrame row per run, run on a thread pool (the C core releases the GIL).

>>> df = sweep(presets.get("loscache"), {"l2.power": ["none", "loscache"]}, ["bfs", "sgemm"])
>>> normalize(df, "l2_energy_j", baseline={"l2.power": "none"})
"""
from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from gpucachex.config import Config, resolve_key
from gpucachex.trace import Trace


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the swept values, the full configuration, the workload and the seed."""
    params: tuple[tuple[str, Any], ...]
    config: Config
    workload: Any
    workload_name: str
    seed: int

    def key(self) -> str:
        return f"{self.config.key()}:{self.workload_name}:{self.seed}"


def expand_grid(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Parameter points: the cartesian product of a {dotted key: values} mapping, or an explicit list
    of {dotted key: value} points."""
    if grid is None:
        return [{}]
    if isinstance(grid, Mapping):
        keys = list(grid)
        for k in keys:
            values = grid[k]
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                raise TypeError(f"grid[{k!r}] must be a list of values, got {values!r}")
        return [dict(zip(keys, combo)) for combo in itertools.product(*(list(grid[k]) for k in keys))]
    return [dict(p) for p in grid]


def workload_name(workload: Any) -> str:
    if isinstance(workload, Trace):
        return workload.name or workload.source or "trace"
    return str(workload)


def points(base: Config, grid, workloads: Sequence[Any], seeds: Sequence[int] = (0,)) -> list[Point]:
    """Every run of a sweep, configurations validated up front (a bad grid fails before any run)."""
    if not workloads:
        raise ValueError("a sweep needs at least one workload")
    out = []
    for params in expand_grid(grid):
        cfg = base.replace(**params) if params else base
        resolved = tuple((resolve_key(k), v) for k, v in params.items())
        for w in workloads:
            for s in seeds:
                out.append(Point(resolved, cfg, w, workload_name(w), int(s)))
    return out


def run_point(point: Point) -> dict[str, Any]:
    """Simulate one point and return its DataFrame row."""
    from gpucachex.sim import simulate

    result = simulate(point.config, point.workload, seed=point.seed)
    row: dict[str, Any] = dict(point.params)
    row.update(workload=point.workload_name, seed=point.seed, config_key=point.config.key(), run_key=point.key(),
               preset=point.config.name)
    row.update(result.metrics)
    row["wall_seconds"] = result.wall_seconds
    return row


def sweep(base: Config | str, grid=None, workloads: Sequence[Any] = (), *, seeds: Sequence[int] = (0,),
          jobs: int | None = None):
    """Run every point of the grid on every workload and seed; one DataFrame row per run with the
    swept keys, `workload`, `seed`, every metric and energy term, and the run key."""
    import pandas as pd

    if isinstance(base, str):
        from gpucachex import presets

        base = presets.get(base)
    todo = points(base, grid, list(workloads), seeds)
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        rows = [run_point(p) for p in todo]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(run_point, todo))
    return pd.DataFrame(rows)


def normalize(frame, metrics: str | Sequence[str], baseline: Mapping[str, Any], by: Sequence[str] = ("workload", "seed")):
    """Divide `metrics` by the value of the baseline run with the same `by` columns; the baseline is
    the row whose swept keys equal `baseline`. Returns a copy with ``<metric>_norm`` columns."""
    import pandas as pd

    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    base_mask = pd.Series(True, index=frame.index)
    for k, v in baseline.items():
        col = resolve_key(k) if k not in frame.columns else k
        if col not in frame.columns:
            raise KeyError(f"baseline key {k!r} is not a column of the sweep")
        base_mask &= frame[col] == v
    ref = frame.loc[base_mask, list(by) + metrics]
    if ref.duplicated(subset=list(by)).any():
        raise ValueError(f"baseline {dict(baseline)} matches several runs per {list(by)}; add keys to it")
    ref = ref.rename(columns={m: f"{m}__base" for m in metrics})
    out = frame.copy()
    joined = out[list(by)].merge(ref, on=list(by), how="left")  # keeps the rows' order
    for m in metrics:
        out[f"{m}_norm"] = out[m].to_numpy() / joined[f"{m}__base"].to_numpy()
    return out
