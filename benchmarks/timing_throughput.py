"""Timing-model throughput: simulated warp instructions per second and cycles per second on the
Rodinia BFS trace (16 kernels, 159,509 warp instructions) with the gtx480 preset, best of N runs on
one core, plus the peak resident memory of the process.

Run: python benchmarks/timing_throughput.py [--repeat N] [--preset NAME ...] [--trace PATH] (the
trace from $GPUCACHEX_SHARED_TRACES, default ../shared/traces)
"""
import argparse
import os
import resource
from pathlib import Path

from gpucachex import load_trace, presets, simulate

# the same folder as trace_parse.py, accelsim_comparison.py and the tests read
SHARED = Path(os.environ.get("GPUCACHEX_SHARED_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
TRACE = SHARED / "bfs-rodinia-2.0-ft"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--preset", action="append", choices=presets.names(),
                    help="presets to measure (default: gtx480 and the others)")
    ap.add_argument("--trace", default=str(TRACE))
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    if not Path(args.trace).exists():
        ap.error(f"no trace at {args.trace}: set GPUCACHEX_SHARED_TRACES or pass --trace")
    trace = load_trace(args.trace)
    s = trace.summary()
    print(f"{Path(args.trace).name}: {len(trace.kernels)} kernels, {s['warp_insts']:,} warp instructions; "
          f"best of {args.repeat} runs on one core")
    for name in args.preset or ["gtx480", "loscache", "admL1D", "atoofian", "ata", "gtx1080"]:
        cfg = presets.get(name)
        best, r = float("inf"), None
        for _ in range(args.repeat):
            r = simulate(cfg, trace, energy=False)
            best = min(best, r.wall_seconds)
        print(f"  {name:<9} {r['cycles']:>9,} cycles  {s['warp_insts'] / best / 1e6:6.2f} M warp insts/s  "
              f"{r['cycles'] / best / 1e6:6.2f} M cycles/s  ({best * 1e3:.1f} ms)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
