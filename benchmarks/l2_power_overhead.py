"""Cost of the L2 power techniques in the timing model: warp instructions simulated per second with
l2.power = none, loscache and ideal_gating, on a few kernel models (traces and configurations built
once, outside the timing; each run is timed by its own `wall_seconds`).

Run: python benchmarks/l2_power_overhead.py [--size small] [--repeat R] [workload ...]
"""
import argparse

from gpucachex import presets, simulate, workloads

TECHNIQUES = ("none", "loscache", "ideal_gating")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=["sgemm", "bfs", "vectoradd", "histogram"])
    ap.add_argument("--size", default="small", choices=["tiny", "small", "medium", "large"])
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs")
    args = ap.parse_args()
    # with no run, the rate below would print as 0.00 M warp inst/s instead of failing
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    unknown = [n for n in args.workloads if n not in workloads.names()]
    if unknown:
        ap.error(f"unknown workload {unknown[0]!r} (known: {', '.join(workloads.names())})")

    cfg = presets.get("loscache")
    configs = {tech: cfg.replace(**{"l2.power": tech}) for tech in TECHNIQUES}
    print(f"preset loscache, size {args.size}, one core, best of {args.repeat}")
    for name in args.workloads:
        trace = workloads.make(name, size=args.size)
        line = [f"  {name:<12}"]
        for tech in TECHNIQUES:
            best, insts = float("inf"), 0
            for _ in range(args.repeat):
                # wall_seconds, as in timing_throughput.py: a clock around simulate() would also count
                # its checks of the whole trace (Trace.validate), about a tenth of a small run
                r = simulate(configs[tech], trace, energy=False)
                best = min(best, r.wall_seconds)
                insts = r["warp_insts"]
            line.append(f"{tech} {insts / best / 1e6:6.2f} M warp inst/s")
        print("   ".join(line))


if __name__ == "__main__":
    main()
