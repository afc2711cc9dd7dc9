"""Functional cache throughput: accesses per second of `gpucachex.cache_run` on 10 million mixed
streaming/random addresses over a 64 MB footprint, for an L1-sized and an L2-sized LRU cache.

Run: python benchmarks/cache_throughput.py [--count N] [--repeat R]
"""
import argparse
import time

import numpy as np

import gpucachex
from gpucachex.functional import mixed_stream

CACHES = [
    ("16 KB 4-way 128 B LRU", dict(sets=32, ways=4, line_bytes=128)),
    ("768 KB 16-way 128 B LRU", dict(sets=384, ways=16, line_bytes=128)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of R runs")
    ap.add_argument("--footprint-mb", type=int, default=64)
    args = ap.parse_args()
    # caught here: zero runs or addresses would fail at the printout, after all the work
    for flag, value in (("--count", args.count), ("--repeat", args.repeat), ("--footprint-mb", args.footprint_mb)):
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")

    addrs = mixed_stream(args.count, footprint_bytes=args.footprint_mb << 20, seed=1)
    writes = np.random.default_rng(2).random(args.count) < 0.2
    print(f"{args.count:,} addresses, {args.footprint_mb} MB footprint, one core, best of {args.repeat}")
    for name, geometry in CACHES:
        for label, w in (("reads", None), ("20% writes", writes)):
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                stats = gpucachex.cache_run(addrs, writes=w, policy="lru", **geometry)
                best = min(best, time.perf_counter() - t0)
            rate = args.count / best / 1e6
            print(f"  {name:<26} {label:<11} {rate:8.1f} M accesses/s   hit rate {stats['hits'] / stats['accesses']:.3f}")


if __name__ == "__main__":
    main()
