"""How long every kernel model takes to simulate on every preset: wall seconds of the timing model
per model at one size (default `small`), one core, plus the total per preset.

Run: python benchmarks/workload_simulation.py [--size small] [--preset NAME ...]
"""
import argparse
import time

from gpucachex import presets, simulate, workloads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="small", choices=["tiny", "small", "medium", "large"])
    # checked before the traces of every model are built, not after
    ap.add_argument("--preset", action="append", choices=presets.names())
    args = ap.parse_args()
    names = workloads.names()
    chosen = args.preset or presets.names()
    traces = {}
    for n in names:
        t0 = time.perf_counter()
        traces[n] = workloads.make(n, args.size)
        print(f"generated {n:<13} {traces[n].summary()['warp_insts']:>10,} warp insts in "
              f"{time.perf_counter() - t0:.2f} s", flush=True)
    print(f"\nsimulation wall seconds at size {args.size} (one core):")
    print(f"{'model':<13}" + "".join(f"{p:>10}" for p in chosen))
    totals = {p: 0.0 for p in chosen}
    worst = (0.0, "", "")
    for n in names:
        cells = []
        for p in chosen:
            r = simulate(p, traces[n], energy=False)
            totals[p] += r.wall_seconds
            worst = max(worst, (r.wall_seconds, n, p))
            cells.append(f"{r.wall_seconds:>10.2f}")
        print(f"{n:<13}" + "".join(cells), flush=True)
    print(f"{'total':<13}" + "".join(f"{totals[p]:>10.1f}" for p in chosen))
    print(f"slowest: {worst[1]} on {worst[2]}, {worst[0]:.2f} s")


if __name__ == "__main__":
    main()
