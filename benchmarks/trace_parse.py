"""Trace loading throughput: MB/s of .traceg text parsed on one core, peak memory against the size
of the loaded Trace, and how much faster the native format reloads the same trace.

The input is built from the real Rodinia BFS trace in ../shared/traces: the thread blocks of all its
kernel files (same grid and block shape) replicated with renumbered CTAs into one large kernel in a
temporary folder. Each load runs in a fresh subprocess so its peak RSS (VmHWM) is its own.

Run: python benchmarks/trace_parse.py [--mb 300] [--xz] [--repeat 3]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = Path(os.environ.get("GPUCACHEX_SHARED_TRACES", ROOT.parent / "shared" / "traces")) / "bfs-rodinia-2.0-ft"

CHILD = r"""
import json, re, resource, sys, time
import numpy as np
import gpucachex

def rss_now():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

def rss_peak():
    # VmHWM, not ru_maxrss: Linux carries the parent's peak RSS over exec into the child's ru_maxrss,
    # so a parent that once held more than this load would be reported as the load's peak
    with open("/proc/self/status") as f:
        return int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024

gpucachex.load_trace  # imports done before the baseline
base = rss_now()
t0 = time.perf_counter()
trace = gpucachex.load_trace(sys.argv[1])
seconds = time.perf_counter() - t0
peak = rss_peak()
nbytes = sum(sum(c.nbytes for c in k.columns().values()) + k.addresses.nbytes for k in trace.kernels)
if len(sys.argv) > 2:
    trace.save(sys.argv[2])
print(json.dumps(dict(seconds=seconds, base=base, peak=peak, trace_bytes=nbytes, summary=trace.summary())))
"""


def build_trace(source: Path, out: Path, target_mb: int) -> tuple[int, int]:
    """Write kernel-1.traceg (+ kernelslist.g) into `out`: the source's thread blocks, replicated."""
    files = sorted(source.glob("kernel-*.traceg"))
    if not files:
        sys.exit(f"no kernel-*.traceg in {source}: set GPUCACHEX_SHARED_TRACES or pass --source")
    header, blocks = None, []
    for f in files:
        text = f.read_text()
        head, _, body = text.partition("#BEGIN_TB")
        header = header or head
        grid = re.search(r"-grid dim = \((\d+),(\d+),(\d+)\)", head).groups()
        if grid[1:] != ("1", "1"):
            sys.exit(f"{f}: the benchmark replicates one-dimensional grids only")
        for tb in ("#BEGIN_TB" + body).split("#BEGIN_TB")[1:]:
            blocks.append(tb)
    per_copy = sum(len(b) for b in blocks)
    copies = max(1, target_mb * 1_000_000 // per_copy)
    ctas = copies * len(blocks)
    header = re.sub(r"-grid dim = \(\d+,1,1\)", f"-grid dim = ({ctas},1,1)", header)
    header = re.sub(r"-kernel id = \d+", "-kernel id = 1", header)
    with open(out / "kernel-1.traceg", "w") as f:
        f.write(header)
        cta = 0
        for _ in range(copies):
            for tb in blocks:
                f.write("#BEGIN_TB" + re.sub(r"thread block = \d+,0,0", f"thread block = {cta},0,0", tb, count=1))
                cta += 1
    (out / "kernelslist.g").write_text("kernel-1.traceg\n")
    return (out / "kernel-1.traceg").stat().st_size, ctas


def run_child(path: Path, save_to: Path | None = None) -> dict:
    argv = [sys.executable, "-c", CHILD, str(path)] + ([str(save_to)] if save_to else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=300, help="size of the generated .traceg in MB")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="trace folder whose thread blocks are replicated")
    ap.add_argument("--repeat", type=int, default=3, help="best of R loads")
    ap.add_argument("--xz", action="store_true", help="also time the xz-compressed file (needs the xz tool)")
    args = ap.parse_args()
    # --mb below 1 would quietly build one copy of the source; --repeat 0 would time no native load
    for flag, value in (("--mb", args.mb), ("--repeat", args.repeat)):
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")

    with tempfile.TemporaryDirectory(prefix="gpucachex-bench-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        text_bytes, ctas = build_trace(args.source, tmp, args.mb)
        print(f"built {text_bytes / 1e6:.0f} MB .traceg ({ctas:,} CTAs from {args.source.name}) "
              f"in {time.perf_counter() - t0:.1f} s")
        native = tmp / "trace.npz"
        runs = [run_child(tmp / "kernelslist.g", native)]
        runs += [run_child(tmp / "kernelslist.g") for _ in range(args.repeat - 1)]
        best = min(runs, key=lambda r: r["seconds"])
        s = best["summary"]
        print(f"trace: {s['warp_insts']:,} warp instructions, {s['addresses']:,} addresses, "
              f"{best['trace_bytes'] / 1e6:.0f} MB in memory, native file {native.stat().st_size / 1e6:.0f} MB")
        print(f"text parse:   {best['seconds']:.2f} s  {text_bytes / 1e6 / best['seconds']:7.1f} MB/s of .traceg text "
              f"({s['warp_insts'] / best['seconds'] / 1e6:.1f} M warp instructions/s), one core")
        peak = max(r["peak"] for r in runs) - best["base"]
        print(f"peak memory:  {peak / 1e6:.0f} MB above the interpreter = {peak / best['trace_bytes']:.2f}x the "
              f"loaded Trace")
        nat = [run_child(native) for _ in range(args.repeat)]
        nbest = min(nat, key=lambda r: r["seconds"])
        assert nbest["summary"] == s, "native file disagrees with the text"
        npeak = max(r["peak"] for r in nat) - nbest["base"]
        print(f"native load:  {nbest['seconds']:.3f} s  = {best['seconds'] / nbest['seconds']:.1f}x faster than text "
              f"(peak {npeak / best['trace_bytes']:.2f}x the Trace)")
        if args.xz:
            subprocess.run(["xz", "-T1", "-1", "-k", str(tmp / "kernel-1.traceg")], check=True)
            (tmp / "kernelslist.g").write_text("kernel-1.traceg.xz\n")
            (tmp / "kernel-1.traceg").unlink()
            xz = min((run_child(tmp / "kernelslist.g") for _ in range(args.repeat)), key=lambda r: r["seconds"])
            xpeak = xz["peak"] - xz["base"]
            print(f"xz parse:     {xz['seconds']:.2f} s  {text_bytes / 1e6 / xz['seconds']:7.1f} MB/s of "
                  f"decompressed text (peak {xpeak / best['trace_bytes']:.2f}x the Trace)")


if __name__ == "__main__":
    main()
