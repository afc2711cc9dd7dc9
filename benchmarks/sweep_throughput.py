"""Sweep throughput: runs per minute of a 100-run sweep (10 configurations x 5 kernel models x 2 seeds)
with 1 and 2 workers, and the scaling between them.

Run: python benchmarks/sweep_throughput.py [--executor local|processes|dask] [--jobs 1,2] [--size small]

Each measurement is a whole sweep into a fresh results store (so it includes building the workloads,
committing every run and the executor's overhead), after one untimed warm-up sweep. `simulating` is the
share of the workers' time spent inside the C core (sum of the runs' wall_seconds / (elapsed x workers)):
what is left is the sweep's own overhead plus waiting for a core. `cores busy` (CPU time / elapsed) shows
whether the workers ran in parallel even when the machine is shared and the runs per minute suffer;
`runs per CPU-minute` staying flat from 1 to 2 workers means the workers do not slow each other down.
Dask workers' CPU time is not counted (they are not children of this process).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

from gpucachex import presets
from gpucachex.sweep import sweep

GRID = {"l1d.ways": [2, 4, 8, 16, 32], "core.scheduler": ["lrr", "gto"]}
WORKLOADS = ["sgemm", "bfs", "hotspot", "vectoradd", "srad"]
SEEDS = [0, 1]


def measure(executor: str, jobs: int, size: str, folder: Path) -> tuple[float, float, int]:
    store = folder / f"{executor}-{jobs}-{time.monotonic_ns()}.sqlite"
    c0, t0 = os.times(), time.perf_counter()
    frame = sweep(presets.get("gtx480"), GRID, [f"{w}:{size}" for w in WORKLOADS], seeds=SEEDS, store=store,
                  executor=executor, jobs=jobs, progress=False)
    elapsed, c1 = time.perf_counter() - t0, os.times()
    cpu = (c1.user + c1.system + c1.children_user + c1.children_system) - \
          (c0.user + c0.system + c0.children_user + c0.children_system)
    assert frame.attrs["sweep"]["simulated"] == len(frame) == 100, frame.attrs
    return elapsed, float(frame["wall_seconds"].sum()), cpu, len(frame)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="local", choices=["local", "processes", "dask"])
    ap.add_argument("--jobs", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--size", default="small", choices=["tiny", "small", "medium"])
    args = ap.parse_args()
    try:
        counts = [int(j) for j in args.jobs.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        ap.error(f"--jobs must be comma-separated worker counts of at least 1, got {args.jobs!r}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"100-run sweep: {len(GRID['l1d.ways']) * len(GRID['core.scheduler'])} configurations x "
          f"{len(WORKLOADS)} models ({args.size}) x {len(SEEDS)} seeds; executor {args.executor}; {cores} cores; "
          f"load average {os.getloadavg()[0]:.2f}")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        measure(args.executor, counts[0], args.size, Path(tmp))   # warm-up: imports, page cache, workers
        for jobs in counts:
            elapsed, simulating, cpu, runs = measure(args.executor, jobs, args.size, Path(tmp))
            rates[jobs] = runs / elapsed * 60
            print(f"  {jobs} worker{'s' if jobs > 1 else ' '}: {elapsed:6.1f} s, {rates[jobs]:7.0f} runs/min, "
                  f"{cpu / elapsed:4.2f} cores busy, {runs / cpu * 60:5.0f} runs per CPU-minute, simulating "
                  f"{simulating / (elapsed * jobs):4.0%} of the workers' time (load average {os.getloadavg()[0]:.2f})",
                  flush=True)
    first = counts[0]
    for jobs in counts[1:]:
        speedup = rates[jobs] / rates[first]
        print(f"  scaling {first} -> {jobs} workers: x{speedup:.2f} ({speedup / (jobs / first):.0%} of linear)")


if __name__ == "__main__":
    main()
