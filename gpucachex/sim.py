"""Running the timing model: `simulate(config, workload, seed)` and its `Result`.

The C core returns raw counters; this module turns them into the flat metric dictionary users see
(`Result.metrics`), the per-interval time series (`Result.timeseries`) and, through
`gpucachex.energy` when available, energy terms.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from gpucachex import _core
from gpucachex.config import Config, close_names
from gpucachex.trace import INST_COLUMNS, WARP_SIZE, Trace

FAIL_REASONS = ("line_alloc", "mshr_entry", "mshr_merge", "miss_queue")


def _bucket_names(prefix: str, n: int) -> tuple[str, ...]:
    """Names of power-of-two buckets: 0, 1, 2-3, 4-7, ..., and the last one open ("<lo>_up")."""
    names = [f"{prefix}0", f"{prefix}1"]
    for b in range(2, n):
        lo = 1 << (b - 1)
        names.append(f"{prefix}{lo}_up" if b == n - 1 else f"{prefix}{lo}_{2 * lo - 1}")
    return tuple(names)


# Per-line access counts over the run (Atoofian and Manzak's Fig. 3: A0, A1, A2-3, ..., A16384+) and
# cycles between consecutive accesses to a line (their Fig. 4): metrics <level>_<bucket>, in lines and
# in access pairs.
ACCESS_BUCKETS = _bucket_names("A", 16)
INTERVAL_BUCKETS = _bucket_names("I", 24)


def _resolve_config(config: Config | str) -> Config:
    if isinstance(config, Config):
        return config
    if isinstance(config, str):
        from gpucachex import presets

        return presets.get(config)
    raise TypeError(f"config must be a Config or a preset name, got {type(config).__name__}")


def resolve_workload(workload: Trace | str | PathLike) -> Trace:
    """A Trace from a Trace, a path `load_trace` accepts, or a built-in workload name (``"bfs"``,
    ``"bfs:medium"``)."""
    if isinstance(workload, Trace):
        return workload
    if isinstance(workload, (str, PathLike)):
        from pathlib import Path

        path = Path(workload)
        if path.exists():
            from gpucachex import load_trace

            return load_trace(path)
        from gpucachex import workloads

        name, _, size = str(workload).partition(":")
        if name in workloads.names():
            return workloads.make(name, size=size or "small")
        raise unknown_workload(workload)
    raise TypeError(f"workload must be a Trace, a path or a workload name, got {type(workload).__name__}")


def unknown_workload(workload: str | PathLike) -> ValueError:
    """The error for a workload that is no file and no built-in model: it names the close model names
    (a typo), or all of them."""
    from gpucachex import workloads

    name = str(workload).partition(":")[0]
    hint = close_names(name, workloads.names(), f"built-in: {', '.join(workloads.names())}")
    return ValueError(f"workload {str(workload)!r} is neither an existing path nor a built-in workload name ({hint})")


def aligned(a):
    """`a`, or an aligned copy of a numpy array that is not aligned to its items: the core reads
    arrays in place through typed pointers, and refuses a misaligned one (C leaves such reads
    undefined). Arrays a Dask worker or pickle rebuilds from a byte stream can start anywhere."""
    return np.require(a, requirements="A") if isinstance(a, np.ndarray) and not a.flags.aligned else a


def _kernel_dicts(trace: Trace) -> list[dict[str, Any]]:
    out = []
    for k in trace.kernels:
        d = {name: aligned(getattr(k, name)) for name in INST_COLUMNS}
        d.update(name=k.name, grid=tuple(int(x) for x in k.grid), block=tuple(int(x) for x in k.block),
                 nregs=int(k.nregs), shmem_bytes=int(k.shmem_bytes), addresses=aligned(k.addresses))
        out.append(d)
    return out


@dataclass
class Result:
    """One simulation: the configuration, workload and seed it ran, the flat `metrics`, the
    `timeseries` (a DataFrame, one row per sample: the first at cycle 0 with zero counts and no IPC,
    then each row the counts of the interval that ends at its `cycle`) and the core's `raw` output."""
    config: Config
    workload: str
    seed: int
    metrics: dict[str, float]
    raw: dict[str, Any] = field(repr=False)
    wall_seconds: float = 0.0

    @property
    def timeseries(self):
        return timeseries_frame(self.raw["timeseries"])

    def to_series(self):
        import pandas as pd

        return pd.Series(self.metrics, name=self.workload)

    def line_residency(self, level: str) -> np.ndarray:
        """(lines, 3) cycles each line spent ON, DROWSY, OFF (only when simulated with detail=True);
        `level` is "l1d" (every SM's lines, SM by SM) or "l2" (every partition's)."""
        if level not in ("l1d", "l2"):
            raise ValueError(f"level must be 'l1d' or 'l2', got {level!r}")
        key = f"{level}_line_residency"
        if key not in self.raw:
            raise ValueError("per-line residency was not recorded: simulate(..., detail=True)")
        return np.frombuffer(self.raw[key], dtype=np.uint64).reshape(-1, 3)

    def __getitem__(self, key: str) -> float:
        try:
            return self.metrics[key]
        except KeyError:
            hint = close_names(key, self.metrics, "")
            hint = f" ({hint})" if hint else ""
            raise KeyError(f"no metric {key!r} in this result{hint}; Result.metrics lists them all") from None


def timeseries_frame(ts: dict[str, list[int]]):
    """Per-interval deltas of the core's cumulative samples, with IPC and the R-to-A ratio."""
    import pandas as pd

    cum = pd.DataFrame(ts)
    if cum.empty:
        return cum
    delta = cum.diff().fillna(cum.iloc[[0]]).astype("int64")
    frame = pd.DataFrame({"cycle": cum["cycle"]})
    for col in cum.columns:
        if col != "cycle":
            frame[col] = delta[col]
    cycles = delta["cycle"].where(delta["cycle"] > 0)
    frame["ipc"] = frame["thread_insts"] / cycles
    frame["r_to_a"] = frame["l1d_fails"] / frame["l1d_accesses"].where(frame["l1d_accesses"] > 0)
    return frame


def _ratio(a: float, b: float) -> float:
    """a / b, NaN when b is zero: a rate or mean over nothing (a hit rate without accesses, a load
    latency without loads) is undefined, and a 0 would read as a measured value (and pull averages
    over runs down). Always the one object math.nan, so that the metrics of two identical runs still
    compare equal (dict equality takes an object as equal to itself)."""
    return float(a) / float(b) if b else math.nan


def derive_metrics(raw: dict[str, Any], config: Config) -> dict[str, float]:
    """The flat metric dictionary of a run, from the core's raw output."""
    m: dict[str, float] = {}
    cycles = raw["cycles"]
    m["cycles"] = cycles
    m["warp_insts"] = raw["warp_insts"]
    m["thread_insts"] = raw["thread_insts"]
    m["ipc"] = _ratio(raw["thread_insts"], cycles)
    m["warp_ipc"] = _ratio(raw["warp_insts"], cycles)
    m["seconds"] = cycles / (config["core.clock_mhz"] * 1e6)
    for level in ("l1d", "l2"):
        s = raw[level]
        for name, value in s.items():
            if not isinstance(value, list):
                m[f"{level}_{name}"] = value
        m[f"{level}_hit_rate"] = _ratio(s["hits"], s["accesses"])
        m[f"{level}_miss_rate"] = _ratio(s["misses"], s["accesses"])
        m[f"{level}_block_utilisation"] = _ratio(s["lanes_sum"], WARP_SIZE * s["data_accesses"])
        m[f"{level}_inter_access_cycles"] = _ratio(s["interval_sum"], s["interval_count"])
        line_cycles = cycles * s["lines"]
        m[f"{level}_line_cycles"] = line_cycles
        m[f"{level}_dead_time_fraction"] = _ratio(s["dead_nodata"] + s["dead_unused"], line_cycles)
        m[f"{level}_dead_nodata_fraction"] = _ratio(s["dead_nodata"], line_cycles)
        m[f"{level}_dead_unused_fraction"] = _ratio(s["dead_unused"], line_cycles)
        for state in ("on", "drowsy", "off"):
            m[f"{level}_{state}_fraction"] = _ratio(s[f"resid_{state}"], line_cycles)
        for name, value in zip(ACCESS_BUCKETS, s["hist_access"], strict=True):
            m[f"{level}_{name}"] = value
        for name, value in zip(INTERVAL_BUCKETS, s["hist_interval"], strict=True):
            m[f"{level}_{name}"] = value
    m["l1d_reservation_fails"] = sum(raw["l1d"][f"fail_{r}"] for r in FAIL_REASONS)
    for r in FAIL_REASONS:
        m[f"l1d_fails_{r}"] = raw["l1d"][f"fail_{r}"]
    m["l1d_r_to_a"] = _ratio(m["l1d_reservation_fails"], raw["l1d"]["accesses"])
    for key in ("dram_reads", "dram_writes", "dram_bytes", "dram_row_hits", "dram_row_misses", "l2_stalls",
                "icnt_request_flits", "icnt_reply_flits", "icnt_packets", "cluster_flits", "loads", "requests",
                "l1i_accesses", "l1i_misses", "l1i_mshr_hits", "l1d_miss_queue_max"):
        m[key] = raw[key]
    m["icnt_flits"] = raw["icnt_request_flits"] + raw["icnt_reply_flits"]
    m["avg_load_latency"] = _ratio(raw["load_latency_sum"], raw["loads"])
    m["avg_l1_access_latency"] = _ratio(raw["l1_access_latency_sum"], raw["l1_access_loads"])
    m["stores_acked"] = raw["stores_acked"]
    m["avg_store_ack_latency"] = _ratio(raw["store_ack_latency_sum"], raw["stores_acked"])
    for name, value in raw["technique_metrics"].items():
        m[name] = math.nan if value != value else value   # one NaN object, as _ratio's
    return m


def _run(args, total: int, progress: bool, stop=None):
    """Run the core in a thread (it releases the GIL) while this thread waits, so that Ctrl-C (a
    KeyboardInterrupt in this thread) stops the run: the core checks a stop flag every cycle. So does
    setting `stop` (a threading.Event), from a thread that cannot get this one's Ctrl-C (a sweep's
    caller, while this runs on its thread pool). With `progress`, a tqdm bar follows the core's count
    of issued instructions."""
    import threading

    counter = np.zeros(2, dtype=np.uint64)  # [instructions issued, stop request]
    if stop is not None and stop.is_set():
        counter[1] = 1   # asked to stop before it started: the core stops at its first cycle
    out: dict[str, Any] = {}

    def work():
        try:
            out["raw"] = _core.simulate(*args, progress=counter)
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit=" warp insts", unit_scale=True, leave=False)
    try:
        thread.start()
        while thread.is_alive():
            thread.join(0.2 if stop is None else 0.05)
            if stop is not None and stop.is_set():
                counter[1] = 1
            if bar is not None:
                bar.update(int(counter[0]) - bar.n)
        if bar is not None:
            bar.update(total - bar.n)
    except BaseException:  # Ctrl-C: stop the core, then let the interrupt go on
        counter[1] = 1
        thread.join()
        raise
    finally:
        if bar is not None:
            bar.close()
    if "error" in out:
        raise out["error"]
    return out["raw"]


def simulate(config: Config | str, workload: Trace | str | PathLike, seed: int = 0, *, detail: bool = False,
             energy: bool = True, progress: bool = False, stop=None) -> Result:
    """Simulate `workload` on the GPU `config` describes.

    `config` is a Config or a preset name; `workload` a Trace, a path `load_trace` reads, or a built-in
    workload name (``"bfs"`` or ``"bfs:medium"``). The simulation runs in C with the GIL released, so
    threads can run several at once; the same configuration, workload and seed always give the same
    result. `seed` drives the run's random choices (random replacement, LoSCache's predictor CTAs,
    ``dram.latency_jitter``). ``detail=True`` also records per-line residencies (`Result.line_residency`);
    ``progress=True`` shows a progress bar (instructions issued) while it runs. Ctrl-C stops a run
    within a cycle of the model and raises KeyboardInterrupt; so does setting `stop`, a threading.Event,
    from another thread (within 50 ms).
    """
    cfg = _resolve_config(config)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer from 0 to 2**64 - 1, got {seed!r}")
    for flag, value in (("detail", detail), ("energy", energy), ("progress", progress)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    detail, energy, progress = bool(detail), bool(energy), bool(progress)
    if stop is not None and not callable(getattr(stop, "is_set", None)):
        raise TypeError(f"stop must be a threading.Event (or None), got {type(stop).__name__}")
    trace = resolve_workload(workload)
    trace.validate()
    if not trace.kernels:
        raise ValueError(f"{trace.name or trace.source or 'the trace'} has no kernel to simulate")
    t0 = time.perf_counter()
    memcpys = [tuple(int(v) for v in m) for m in trace.memcpys]  # validated: three integers each
    args = (cfg.to_dict(), _kernel_dicts(trace), memcpys, int(seed), detail)
    raw = _run(args, trace.summary()["warp_insts"] if progress else 0, progress, stop)
    wall = time.perf_counter() - t0
    metrics = derive_metrics(raw, cfg)
    result = Result(cfg, trace.name or trace.source or "trace", int(seed), metrics, raw, wall)
    if energy:
        try:
            from gpucachex import energy as energy_model
        except ImportError:
            energy_model = None
        if energy_model is not None:
            result.metrics.update(energy_model.compute(result))
    return result
