"""Measure the character of a workload (locality, sharing, warp utilisation, functional hit rates)
and write the table of every model into docs/workloads.md.

    python -m gpucachex.workloads.characterize --size small --out docs/workloads.md

Two layers with a clear boundary:
- `characterize(trace)` needs no timing model: warp utilisation; coalesced 128-B line requests;
  lines touched by more than one CTA and by more than one SM under round-robin CTA-to-SM
  assignment; requests per line; reuse split into intra-CTA and inter-CTA; and *functional* L1
  and L2 hit rates on an approximate interleaving (below).
- `simulated_metrics(trace, preset)` runs the timing model (`gpucachex.simulate`) on the `gtx480`
  preset: L1D and L2 hit rates, L2 accesses per distinct line, cycles and IPC.

The functional interleaving: CTAs go round-robin to `n_sms` SMs and run in waves limited by
Fermi GTX480 occupancy (8 CTAs, 1536 threads, 32768 registers, 48 KB shared memory per SM);
resident warps issue in loose round-robin, one instruction each per step, so the stream is
ordered by (kernel, wave, instruction index within the warp, SM, CTA, warp). Each SM's L1D
(16 KB, 4-way, 128-B lines, LRU) sees its global loads and local loads/stores, and a global
store evicts its line (write-evict, as on Fermi; `l1_write_evict_hits`); atomics and uncached
global loads and stores such as .CG go to the L2 only. The L2 (768 KB, 16-way, 128-B lines,
LRU, write-back, `cache_run`) sees every global and local request of all SMs in that order, *not*
filtered by the L1s (cache_run gives counts, not per-access outcomes).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from gpucachex.functional import cache_run
from gpucachex.sim import _ratio   # NaN for a rate over nothing, as in the timing model's metrics
from gpucachex.trace import WARP_SIZE, Flag, OpClass, Space, Trace, popcount32

LINE = 128
SECTOR = 32
N_SMS = 15
# Fermi GTX480 per-SM limits used to form waves of resident CTAs.
MAX_CTAS, MAX_THREADS, MAX_REGS, MAX_SHARED = 8, 1536, 32768, 48 * 1024
L1 = dict(sets=32, ways=4, line_bytes=LINE)          # 16 KB
L2 = dict(sets=384, ways=16, line_bytes=LINE)        # 768 KB


def ctas_per_sm(kernel) -> int:
    threads = kernel.warps_per_cta * WARP_SIZE
    limits = [MAX_CTAS, MAX_THREADS // threads]
    if kernel.nregs:
        limits.append(MAX_REGS // (kernel.nregs * threads))
    if kernel.shmem_bytes:
        limits.append(MAX_SHARED // kernel.shmem_bytes)
    return max(1, min(limits))


def _check(trace: Trace, n_sms: int, granularity: int = LINE) -> None:
    if not isinstance(trace, Trace):
        raise TypeError(f"a Trace is characterized (workloads.make or load_trace give one), got {type(trace).__name__}")
    if isinstance(n_sms, bool) or not isinstance(n_sms, (int, np.integer)) or n_sms < 1:
        raise ValueError(f"n_sms must be a positive integer, got {n_sms!r}")
    if (isinstance(granularity, bool) or not isinstance(granularity, (int, np.integer)) or granularity < 1
            or granularity & (granularity - 1)):
        raise ValueError(f"granularity must be a power of two of bytes, got {granularity!r}")


def requests(trace: Trace, n_sms: int = N_SMS, granularity: int = LINE) -> dict[str, np.ndarray]:
    """Coalesced memory requests of the global and local accesses: one per distinct
    `granularity`-byte block per warp instruction, in the functional interleaving order.
    Columns: block, kernel, cta, sm, write, atomic, local, bypass (a global access the L1D does not
    cache: .CG, .CV, ...; the timing model caches local data whatever the modifiers)."""
    _check(trace, n_sms, granularity)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("block", "kernel", "cta", "sm", "write", "atomic",
                                                          "local", "bypass", "order")}
    for ki, k in enumerate(trace.kernels):
        rows = np.flatnonzero((k.width > 0) & ((k.space == Space.GLOBAL) | (k.space == Space.LOCAL)))
        if not rows.size:
            continue
        lanes = popcount32(k.mask[rows])
        blk = (k.addresses[k.address_index(rows)] // np.uint64(granularity)).astype(np.int64)
        row_of = np.repeat(np.arange(rows.size), lanes)
        # one request per distinct block of each instruction (the coalescer)
        _, dense = np.unique(blk, return_inverse=True)
        key = row_of * (int(dense.max()) + 1) + dense
        _, first = np.unique(key, return_index=True)
        r = row_of[first]
        b = blk[first]
        # position of each instruction in its warp's stream
        table = k.warp_table()
        warp_start = np.repeat(table[:, 2], table[:, 3])
        inst = rows - warp_start[rows]
        cta = k.cta[rows].astype(np.int64)
        sm = cta % n_sms
        wave = (cta // n_sms) // ctas_per_sm(k)
        warp = k.warp[rows].astype(np.int64)
        n_ctas = k.grid_ctas
        order = (((wave * (inst.max() + 1) + inst) * n_sms + sm) * n_ctas + cta) * k.warps_per_cta + warp
        cls = k.op_class[rows]
        cols["block"].append(b)
        cols["kernel"].append(np.full(r.size, ki, dtype=np.int64))
        cols["cta"].append(cta[r])
        cols["sm"].append(sm[r])
        cols["write"].append(((cls == OpClass.STORE) | (cls == OpClass.ATOMIC))[r])
        cols["atomic"].append((cls == OpClass.ATOMIC)[r])
        cols["local"].append((k.space[rows] == Space.LOCAL)[r])
        cols["bypass"].append(((k.space[rows] == Space.GLOBAL) & (k.flags[rows] & Flag.BYPASS_L1 != 0))[r])
        cols["order"].append(order[r])
    if not cols["block"]:
        return {k: np.zeros(0, dtype=np.int64) for k in cols if k != "order"}
    out = {name: np.concatenate(v) for name, v in cols.items()}
    # kernels run one after the other; inside a kernel, the issue order above
    order = np.lexsort((out.pop("order"), out["kernel"]))
    return {name: v[order] for name, v in out.items()}


def _ids(*cols: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense id of each row's combination of column values (sorted like the tuples), and the
    number of distinct combinations. Built from 1-D sorts: np.unique(axis=0) is much slower."""
    ids, n = np.zeros(cols[0].size, dtype=np.int64), 1
    for c in cols:
        u, inv = np.unique(c, return_inverse=True)
        ids = np.unique(ids * u.size + inv.ravel(), return_inverse=True)[1].ravel()
        n = int(ids.max()) + 1 if ids.size else 0
    return ids, n


def _shared_blocks(block: np.ndarray, kernel: np.ndarray, who: np.ndarray) -> float:
    """Share of blocks that, in at least one kernel, more than one `who` (CTA or SM) touches."""
    launch, n_launch = _ids(block, kernel)                   # (block, kernel) pairs
    triple, _ = _ids(launch, who)
    _, first = np.unique(triple, return_index=True)
    per_launch = np.bincount(launch[first], minlength=n_launch)   # distinct `who` per (block, kernel)
    multi = np.zeros(n_launch, dtype=bool)
    multi[launch] = per_launch[launch] > 1
    blocks_multi = np.unique(block[multi[launch]]).size
    return blocks_multi / np.unique(block).size


def reuse_split(block: np.ndarray, kernel: np.ndarray, cta: np.ndarray) -> dict[str, int]:
    """Re-references of blocks, split by who touched the block before in the same kernel: the same
    CTA (intra), another CTA (inter), or only an earlier kernel (kernel)."""
    n = block.size
    by_cta = _ids(block, kernel, cta)[1]
    by_kernel = _ids(block, kernel)[1]
    blocks = np.unique(block).size
    return {"intra": n - by_cta, "inter": by_cta - by_kernel, "kernel": by_kernel - blocks, "first": blocks}


def characterize(trace: Trace, n_sms: int = N_SMS) -> dict:
    """Simulator-independent character of a trace (see the module docstring)."""
    _check(trace, n_sms)
    insts = sum(k.n_insts for k in trace.kernels)
    lanes = sum(int(popcount32(k.mask).sum()) for k in trace.kernels)
    mem_insts = sum(int(np.count_nonzero(k.width)) for k in trace.kernels)
    mem_lanes = sum(int(k.mem_lanes().sum()) for k in trace.kernels)
    gl = [(k.width > 0) & ((k.space == Space.GLOBAL) | (k.space == Space.LOCAL)) for k in trace.kernels]
    gl_insts = sum(int(np.count_nonzero(g)) for g in gl)
    gl_lanes = sum(int(popcount32(k.mask[g]).sum()) for k, g in zip(trace.kernels, gl))
    req = requests(trace, n_sms)
    sec = requests(trace, n_sms, granularity=SECTOR)
    n_req = req["block"].size
    out = dict(kernels=len(trace.kernels), warp_insts=insts, mem_insts=mem_insts,
               warp_util=_ratio(lanes, WARP_SIZE * insts),
               mem_warp_util=_ratio(mem_lanes, WARP_SIZE * mem_insts),
               requests=n_req, req_per_inst=_ratio(n_req, gl_insts),
               lines_per_warp_lanes=_ratio(n_req, gl_lanes / WARP_SIZE))
    if not n_req:
        return {**out, "footprint_mb": 0.0, **{k: math.nan for k in (
            "req_per_line", "lines_multi_cta", "lines_multi_sm", "reuse_intra", "reuse_inter", "reuse_kernel",
            "l1_hit", "l2_hit")}}
    line = req["block"]
    lines = np.unique(line).size
    split = reuse_split(sec["block"], sec["kernel"], sec["cta"])
    reuse = split["intra"] + split["inter"] + split["kernel"]
    out.update(footprint_mb=lines * LINE / 2 ** 20, req_per_line=n_req / lines,
               lines_multi_cta=_shared_blocks(line, req["kernel"], req["cta"]),
               lines_multi_sm=_shared_blocks(line, req["kernel"], req["sm"]),
               **{f"reuse_{k}": _ratio(split[k], reuse) for k in ("intra", "inter", "kernel")})
    out.update(functional_hit_rates(req))
    return out


def l1_write_evict_hits(lines: np.ndarray, evict: np.ndarray, sets: int, ways: int) -> tuple[int, int]:
    """(hits, accesses) of an LRU cache of `sets` x `ways` lines (set = line mod sets, as
    cache_run's "mod" index) on the stream of line numbers `lines`, where `evict` marks global
    stores: write-evict, no allocate, so such a store drops its line if present and is not an
    access of this cache. The other entries (loads, local loads and stores) allocate on a miss;
    a write-back line's dirtiness changes no hit, so local stores count like loads.

    cache_run has no write-evict mode (a write hit there keeps the line), hence this pass."""
    cache: list[dict[int, None]] = [{} for _ in range(sets)]    # insertion order = LRU order
    hits = acc = 0
    for line, ev in zip(lines.tolist(), evict.tolist()):
        s = cache[line % sets]
        if ev:
            s.pop(line, None)
            continue
        acc += 1
        if line in s:
            hits += 1
            del s[line]                                          # move to the MRU end
        elif len(s) == ways:
            del s[next(iter(s))]                                 # evict the LRU line
        s[line] = None
    return hits, acc


def functional_hit_rates(req: dict[str, np.ndarray]) -> dict[str, float]:
    """Functional L1 (per SM: cached global loads and local accesses, global stores evicting
    their line) and L2 (all requests) hit rates."""
    addr = (req["block"] * LINE).astype(np.uint64)
    # Fermi's L1D (and the timing model's): global stores write-evict, so a store between two
    # loads of a line makes the second one miss; atomics and .CG accesses go to the L2 only.
    evict = req["write"] & ~req["atomic"] & ~req["bypass"] & ~req["local"]
    l1_use = ~req["atomic"] & ~req["bypass"]          # local accesses are never atomic nor bypass
    hits = acc = 0
    for sm in np.unique(req["sm"]):
        sel = l1_use & (req["sm"] == sm)
        if sel.any():
            h, a = l1_write_evict_hits(req["block"][sel], evict[sel], L1["sets"], L1["ways"])   # LINE = L1 lines
            hits += h
            acc += a
    l2 = cache_run(np.ascontiguousarray(addr), writes=np.ascontiguousarray(req["write"]), policy="lru", **L2)
    return {"l1_hit": _ratio(hits, acc), "l2_hit": _ratio(l2["hits"], l2["accesses"])}


def simulated_metrics(trace: Trace, preset: str = "gtx480", lines: int | None = None) -> dict:
    """The timing model's view of a workload on `preset`: L1D and L2 hit rates, L2 accesses per
    distinct 128-B line (`lines`, from `characterize`), cycles, IPC and simulation time."""
    from gpucachex import simulate

    r = simulate(preset, trace, energy=False)
    return {"sim_l1_hit": r["l1d_hit_rate"], "sim_l2_hit": r["l2_hit_rate"], "sim_cycles": r["cycles"],
            "sim_ipc": r["ipc"], "sim_l2_accesses": r["l2_accesses"],
            "l2_acc_per_line": _ratio(r["l2_accesses"], lines or 0), "sim_s": r.wall_seconds}


# ---- the docs table --------------------------------------------------------------------------

COLUMNS = [
    ("warp_insts", "warp insts", "{:,}"),
    ("warp_util", "util", "{:.0%}"),
    ("mem_warp_util", "mem util", "{:.0%}"),
    ("footprint_mb", "footprint MB", "{:.2f}"),
    ("req_per_inst", "req/inst", "{:.1f}"),
    ("lines_per_warp_lanes", "lines/32 lanes", "{:.1f}"),
    ("req_per_line", "req/line", "{:.1f}"),
    ("lines_multi_cta", ">1 CTA", "{:.0%}"),
    ("lines_multi_sm", ">1 SM", "{:.0%}"),
    ("reuse_intra", "reuse intra", "{:.0%}"),
    ("reuse_inter", "reuse inter", "{:.0%}"),
    ("reuse_kernel", "reuse kernel", "{:.0%}"),
    ("l1_hit", "L1 hit (func.)", "{:.0%}"),
    ("l2_hit", "L2 hit (func.)", "{:.0%}"),
    ("sim_l1_hit", "L1D hit (gtx480)", "{:.0%}"),
    ("sim_l2_hit", "L2 hit (gtx480)", "{:.0%}"),
    ("l2_acc_per_line", "L2 acc/line", "{:.1f}"),
]


def format_cell(fmt: str, value) -> str:
    """A table cell: `value` formatted, or n/a for a rate over nothing (NaN)."""
    return "n/a" if isinstance(value, float) and math.isnan(value) else fmt.format(value)


def table(size: str = "small", names: list[str] | None = None, progress=None) -> list[dict]:
    """One characterization row per model at `size`."""
    from gpucachex import workloads

    rows = []
    for name in names or workloads.names():
        t0 = time.perf_counter()
        trace = workloads.make(name, size)
        gen = time.perf_counter() - t0
        row = {"model": name, "class": workloads.spec(name).klass, **characterize(trace), "gen_s": gen}
        row.update(simulated_metrics(trace, "gtx480", lines=int(round(row["footprint_mb"] * 2 ** 20 / LINE))))
        rows.append(row)
        if progress:
            progress(row)
    return rows


def _observations(rows: list[dict]) -> list[str]:
    """Compare the measured character with what the papers observed, plainly."""
    by = {r["model"]: r for r in rows}
    out = []

    def say(ok: bool, text: str, why: str = "") -> None:
        out.append(f"- **{'agrees' if ok else 'differs'}**: {text}" + (f" {why}" if why and not ok else ""))

    if "sgemm" in by:
        r = by["sgemm"]
        say(r["reuse_inter"] > 0.99, f"MM (sgemm): {r['reuse_inter']:.1%} of re-references are inter-CTA "
            f"(LoSCache: more than 99% of MM's accesses have inter-CTA locality), and {r['lines_multi_sm']:.0%} of "
            "its lines are read by more than one SM.")
        rank = sorted((x["req_per_line"] for x in rows), reverse=True).index(r["req_per_line"]) + 1
        say(rank <= len(rows) // 4, f"MM's requests per line: {r['req_per_line']:.1f}, rank {rank} of {len(rows)} "
            "(LoSCache: MM's L2 lines are re-referenced most, the only application under 60% dead time).",
            "This count is before any L1 filtering and the models that outrank MM re-read tiny footprints "
            "(myocyte, gaussian) or one row per lane (atax, mvt); L2 accesses per line from the timing model "
            "will be the fair comparison.")
    if "lib" in by:
        r = by["lib"]
        say(r["reuse_intra"] > 0.99 and r["lines_multi_cta"] < 0.01,
            f"LIB: {r['reuse_intra']:.1%} of re-references are intra-CTA and {r['lines_multi_cta']:.1%} of its "
            "lines are touched by more than one CTA (LoSCache: all of LIB's accesses have intra-CTA locality).")
    if "bfs" in by:
        r = by["bfs"]
        regular = float(np.median([x["lines_per_warp_lanes"] for x in rows if x["class"] != "irregular"]))
        say(r["lines_per_warp_lanes"] > 2 * regular,
            f"BFS is irregular: {r['lines_per_warp_lanes']:.1f} lines per 32 active lanes against a median of "
            f"{regular:.1f} for the non-irregular models ({r['mem_warp_util']:.0%} of lanes active in its memory "
            f"instructions).")
    if "myocyte" in by:
        r = by["myocyte"]
        say(r["mem_warp_util"] < 0.1, f"myocyte: {r['mem_warp_util']:.1%} of the lanes are active in memory "
            f"instructions ({r['warp_util']:.1%} over all instructions); Atoofian's Table 1: MYC 4% (L1) and 2% (L2).")
    if "gaussian" in by:
        r = by["gaussian"]
        say(r["mem_warp_util"] >= 0.55, f"gaussian: {r['mem_warp_util']:.0%} of the lanes active in memory "
            "instructions; Atoofian's Table 1: GSS 65% at the L1 (37% at the L2).",
            "Rodinia's Fan2 runs 4x4-thread CTAs, so its warps never have more than 16 of 32 lanes, and the paper "
            "does not give its input size; the model's figure lies between the paper's L2 and L1 ones.")
    if "nw" in by:
        r = by["nw"]
        low = min(rows, key=lambda x: x["req_per_line"])
        say(r["req_per_line"] <= sorted(x["req_per_line"] for x in rows)[len(rows) // 4],
            f"NW: {r['req_per_line']:.1f} requests per line (LoSCache: NW's L2 is used least; its L2 energy "
            f"falls under 1%); lowest in this suite: {low['model']} ({low['req_per_line']:.1f}).")
    labelled = [r for r in rows if r["class"] == "regular-inter-CTA"]
    mostly_intra = [r for r in labelled if r["reuse_inter"] < 0.5]
    if labelled:
        say(not mostly_intra, "regular-inter-CTA models: inter-CTA share of re-references " + ", ".join(
            f"{r['model']} {r['reuse_inter']:.0%}" for r in labelled) + ".",
            "conv3d's and doitgen's kernels re-read most data inside the CTA (overlapping taps; doitgen's "
            "warp-uniform A loads and the 8 warps of a CTA reading the same C4 row); what they share between "
            "CTAs is a small set of lines read by all of them (doitgen's C4, conv3d's halo rows and planes), "
            "which is what ATA-Cache's inter-core locality and LoSCache's MM-like prediction see.")
    high = [n for n in ("btree", "cfd", "doitgen", "conv3d") if n in by]
    low = [n for n in ("hotspot3d", "srad") if n in by]
    if high and low:
        hi_share = min(by[n]["lines_multi_sm"] for n in high)
        lo_share = max(by[n]["lines_multi_sm"] for n in low)
        detail = ", ".join(f"{n} {by[n]['lines_multi_sm']:.0%}" for n in high + low)
        say(hi_share > lo_share, f"ATA-Cache's high inter-core-locality applications (b+tree, cfd, doitgen, conv3d) "
            f"share more lines between SMs than its low ones (HS3D, sradv1): {detail}.",
            "Lines shared by SMs over the whole run are not the same as lines replicated in L1s at the same "
            "time, which is what ATA-Cache classifies by; the simulated columns will settle it.")
    return out


def medium_rows(names: list[str] | None = None, progress=None) -> list[dict]:
    """Warp instructions, cycles and L2 accesses of every model at size medium on gtx480."""
    from gpucachex import workloads

    out = []
    for name in names or workloads.names():
        trace = workloads.make(name, "medium")
        row = {"model": name, "warp_insts": trace.summary()["warp_insts"], **simulated_metrics(trace, "gtx480")}
        out.append(row)
        if progress:
            progress(row)
    return out


def write_table(rows: list[dict], size: str, path: str | Path, medium: list[dict] | None = None) -> None:
    from gpucachex import workloads

    lines = [
        "# Workload models",
        "",
        "Generated by `python -m gpucachex.workloads.characterize` — do not edit by hand.",
        "",
        "Every model follows the index arithmetic, launch configuration and loops of the benchmark it names;",
        "`gpucachex.workloads.info(name)` gives its sizes and parameters, its docstring the details.",
        "",
        "| model | class | description | source |",
        "|---|---|---|---|",
    ]
    for name in workloads.names():
        m = workloads.spec(name)
        cell = [c.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|") for c in (m.description, m.source)]
        lines.append(f"| {m.name} | {m.klass} | {cell[0]} | {cell[1]} |")
    lines += [
        "",
        f"## Character at size `{size}`",
        "",
        "Measured on the generated traces, not assumed. **util**: active lanes / 32 over all warp instructions;",
        "**mem util**: the same over memory instructions (Atoofian's block utilisation); **footprint**: distinct",
        "128-B lines x 128 B; **req/inst**: 128-B line requests per global/local memory instruction after",
        "coalescing; **lines/32 lanes**: the same per 32 active lanes (1 = perfectly coalesced 4-B accesses;",
        "scattered accesses approach 32); **req/line**: requests per distinct line (re-references); **>1 CTA**,",
        "**>1 SM**: share of lines that some kernel touches from more than one CTA, and from more than one of",
        "15 SMs with CTAs assigned round-robin (inter-core locality); **reuse intra/inter/kernel**: where the",
        "re-references of 32-B sectors come from — the CTA that already touched the sector in this kernel,",
        "another CTA of the kernel, or only an earlier kernel (LoSCache's intra- and inter-CTA locality);",
        "**L1/L2 hit (func.)**: *functional* LRU hit rates (16 KB 4-way L1 per SM on its loads and local",
        "accesses, global stores evicting their line; 768 KB 16-way L2 on all requests, not filtered by the",
        "L1s) over an approximate loose-round-robin interleaving; **L1D/L2 hit (gtx480)**: the timing",
        "model's hit rates on the `gtx480` preset (L2 accesses are what the L1Ds miss, pending hits count",
        "as misses);",
        "**L2 acc/line**: the timing model's L2 accesses per distinct 128-B line (LoSCache's re-references);",
        "**n/a**: a share or rate over nothing (no re-reference to split, no access to hit).",
        "",
        "| model | class | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
        "|---|---|" + "---:|" * len(COLUMNS),
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['class']} | " + " | ".join(format_cell(f, r[c]) for c, _, f in COLUMNS) + " |")
    if medium:
        lines += [
            "", "## Size `medium`: long enough for warm-up and prediction phases", "",
            "On `gtx480`. AdmL1D decides after a warm-up of thousands of cycles and LoSCache predicts after 100",
            "L2 accesses (or when its predictor CTAs finish): at size `medium` both are a small part of every run.",
            "",
            "| model | warp insts | cycles | L2 accesses | simulated in |", "|---|---:|---:|---:|---:|",
        ]
        lines += [f"| {m['model']} | {m['warp_insts']:,} | {m['sim_cycles']:,} | {m['sim_l2_accesses']:,} | "
                  f"{m['sim_s']:.1f} s |" for m in medium]
    lines += ["", "## Compared with the papers", ""] + _observations(rows)
    lines += ["", "Known differences in the models themselves (see each model's docstring):", "",
              *(f"- {t}" for t in KNOWN_DIFFERENCES), ""]
    Path(path).write_text("\n".join(lines))


KNOWN_DIFFERENCES = [
    "Inputs are generated, not read: BFS's graph follows Rodinia's generator, b+tree's tree is bulk-loaded "
    "with random 50-100% node fill, cfd's mesh is a lattice with tetrahedral-like neighbours and local "
    "renumbering (Rodinia ships fvcorr.domn.097K), histogram's bytes are uniform like the SDK's rand() % 256.",
    "Arithmetic is modelled by instruction counts and classes (FFMA, MUFU, ...), not compiled SASS; myocyte's "
    "double-promoted arithmetic is modelled as FP32. Loads the compiler would merge (identical addresses, no "
    "store in between) are issued once, stores that may alias later loads stay in loops.",
    "Sizes are scaled: `large` is the benchmark's default input where that fits ~10 M warp instructions "
    "(LIB, cfd's 97K-element mesh, b+tree's 1 M keys, NW 2048); repeated launches (cfd's 2000 iterations, "
    "srad's 100, BlackScholes' 512 runs, myocyte's thousands of solver calls) are cut to a few.",
    "myocyte repeats one launch: the real solver's launches differ only in data, not in the access stream.",
    "Registers per thread (which bound occupancy) are typical nvcc values for these kernels, not measured from "
    "a compilation; the DSL's register numbers are virtual and only carry dependencies.",
    "Local memory is interleaved word by word over all threads of the launch; GPGPU-Sim interleaves over the "
    "threads that can be resident, which gives the same per-warp coalescing but reuses addresses across waves.",
    "BlackScholes models the classic SDK kernel (grid-stride loop over float arrays, <<<480, 128>>>).",
    "histogram's `tiny` size exceeds the ~20 k warp-instruction target (45 k): its merge kernel is fixed at "
    "256 CTAs of 256 threads by the source.",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Characterize the kernel models and write docs/workloads.md")
    ap.add_argument("--size", default="small", choices=["tiny", "small", "medium", "large"])
    ap.add_argument("--out", default="docs/workloads.md")
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--no-medium", action="store_true", help="skip the size-medium simulations")
    args = ap.parse_args(argv)
    names = args.models.split(",") if args.models else None

    def progress(r):
        print(f"{r['model']:>12}: {r['warp_insts']:>10,} warp insts, util {r['warp_util']:.0%}, "
              f">1 SM {r['lines_multi_sm']:.0%}, L1 {r['l1_hit']:.0%}, L2 {r['l2_hit']:.0%} "
              f"(generated in {r['gen_s']:.2f} s)", file=sys.stderr, flush=True)

    rows = table(args.size, names, progress)
    medium = None if args.no_medium else medium_rows(names, lambda m: print(
        f"{m['model']:>12} medium: {m['sim_cycles']:,} cycles, {m['sim_l2_accesses']:,} L2 accesses "
        f"({m['sim_s']:.1f} s)", file=sys.stderr, flush=True))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_table(rows, args.size, args.out, medium)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
