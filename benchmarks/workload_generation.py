"""Kernel-model generation throughput: warp instructions per second of `workloads.make`, and the
peak memory it takes, for a few large models (or any you name).

Run: python benchmarks/workload_generation.py [--size large] [--models sgemm,bfs,...] [--repeat R]

Each model is built once to warm up (the first touch of fresh memory is slow on some virtual
machines), then timed best of R.
"""
import argparse
import resource
import time

from gpucachex import workloads

DEFAULT = "sgemm,lib,bfs,fwt,hotspot,nw"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="large", choices=["tiny", "small", "medium", "large"])
    ap.add_argument("--models", default=DEFAULT, help="comma-separated model names, or 'all'")
    ap.add_argument("--repeat", type=int, default=2, help="best of R runs after one warm-up")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    names = workloads.names() if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in workloads.names()]
    if unknown:
        ap.error(f"unknown model {unknown[0]!r} in --models (known: {', '.join(workloads.names())})")
    print(f"size {args.size}, best of {args.repeat} after a warm-up, one core")
    total_insts = total_time = 0.0
    for name in names:
        t0 = time.perf_counter()
        trace = workloads.make(name, args.size)
        first = time.perf_counter() - t0
        del trace
        best = float("inf")  # the warm-up is reported as `first`, not timed among the R runs
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            trace = workloads.make(name, args.size)
            best = min(best, time.perf_counter() - t0)
            s = trace.summary()
            del trace
        total_insts += s["warp_insts"]
        total_time += best
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {name:<12} {s['warp_insts']:>12,} warp insts {s['addresses']:>13,} addresses  "
              f"{best:6.2f} s (first {first:6.2f} s)  {s['warp_insts'] / best / 1e6:6.2f} M warp insts/s  "
              f"peak RSS so far {peak:,.0f} MB", flush=True)
    print(f"  {'all':<12} {int(total_insts):>12,} warp insts in {total_time:.2f} s: "
          f"{total_insts / total_time / 1e6:.2f} M warp insts/s")


if __name__ == "__main__":
    main()
