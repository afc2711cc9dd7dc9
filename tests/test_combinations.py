"""Any technique with any other, on any cache geometry: every combination the configuration accepts
runs to completion with every request answered and its counters consistent. Under the sanitizer
build of CI this also checks the C core's memory safety across combinations no other test names."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucachex import _core, presets, simulate, workloads
from gpucachex.trace import MAX_DST, MAX_SRC, NO_REG, OpClass, Space, Trace

# Technique names per kind, from the core's registry, so that a technique users add is combined with
# every other one without editing this file.
TECHNIQUES = {kind: [t["name"] for t in _core.techniques() if t["kind"] == kind]
              for kind in ("l1d.admission", "l1d.power", "l2.power", "l1d.sharing")}

# Built once: a few kernel models with stores, local memory, atomics, gathers and several kernels.
TRACES = {name: workloads.make(name, "tiny") for name in ("lib", "histogram", "bfs", "sgemm", "nw", "hotspot3d")}


@st.composite
def configurations(draw):
    preset = draw(st.sampled_from(["gtx480", "loscache", "admL1D", "atoofian", "ata", "gtx1080"]))
    base = presets.get(preset)
    sms, channels = base["core.sms"], base["dram.channels"]
    line = draw(st.sampled_from([64, 128, 256]))
    l1_sector = draw(st.sampled_from([0, 32, 64]))
    cfg = {
        "l1d.sharing": draw(st.sampled_from(TECHNIQUES["l1d.sharing"])),
        "l1d.cluster_size": draw(st.sampled_from([c for c in (1, 2, 3, 5, 10, sms) if sms % c == 0])),
        "l1d.admission": draw(st.sampled_from(TECHNIQUES["l1d.admission"])),
        "l1d.admL1D.warmup_cycles": draw(st.sampled_from([1, 200, 2000])),
        "l1d.admL1D.b_threshold": draw(st.sampled_from([0.0, 0.5, 3.0])),
        "l1d.admL1D.scope": draw(st.sampled_from(["global", "per_sm"])),
        "l1d.power": draw(st.sampled_from(TECHNIQUES["l1d.power"])),
        "l2.power": draw(st.sampled_from(TECHNIQUES["l2.power"])),
        "l1d.allocate": draw(st.sampled_from(["miss", "fill"])),
        "l1d.line_bytes": line, "l2.line_bytes": line,
        "l1i.line_bytes": draw(st.sampled_from([s for s in (32, 64, 128) if s <= line])),
        "l1d.sector_bytes": l1_sector,
        "l2.sector_bytes": draw(st.sampled_from([s for s in (0, 32) if not l1_sector or s <= l1_sector])),
        "l1d.index": "mod",
        "l1d.ways": draw(st.sampled_from([1, 2, 4, 8])),
        "l1d.size_kb": 16,
        "l1d.mshr_entries": draw(st.sampled_from([1, 2, 32])),
        "l1d.mshr_merge": draw(st.sampled_from([1, 8])),
        "l1d.miss_queue": draw(st.sampled_from([2, 8])),
        "l1d.banks": draw(st.sampled_from([1, 4])),
        "l2.mshr_entries": draw(st.sampled_from([1, 32])),
        "l2.mshr_merge": draw(st.sampled_from([1, 4])),
        "l2.partitions": channels * draw(st.sampled_from([1, 2])),
        "l2.size_kb": 768,
        "l2.ways": draw(st.sampled_from([1, 16])),
        "dram.model": draw(st.sampled_from(["simple", "frfcfs"])),
        "dram.queue": draw(st.sampled_from([2, 16])),
        "icnt.buffer": draw(st.sampled_from([1, 64])),
        "core.scheduler": draw(st.sampled_from(["lrr", "gto", "two_level"])),
        "cluster.latency": draw(st.sampled_from([0, 4])),
        "l2.loscache.prediction_period": draw(st.sampled_from([1, 100])),
        "l2.loscache.table_entries": draw(st.sampled_from([1, 32])),
        "drowsy.window": draw(st.sampled_from([0, 10])),
        "drowsy.wakeup_cycles": draw(st.sampled_from([0, 2])),
        "l2.prefill": draw(st.booleans()),
    }
    return base.replace(**cfg)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configurations(), name=st.sampled_from(sorted(TRACES)), seed=st.integers(0, 1000))
def test_every_combination_runs_and_conserves_requests(cfg, name, seed):
    trace = TRACES[name]
    r = simulate(cfg, trace, seed=seed, detail=True)
    summary = trace.summary()
    assert r["warp_insts"] == summary["warp_insts"]
    assert r.raw["requests_live"] == 0  # every request was answered or retired
    for level in ("l1d", "l2"):
        assert r[f"{level}_hits"] + r[f"{level}_misses"] == r[f"{level}_accesses"]
        assert np.all(r.line_residency(level).sum(axis=1) == r["cycles"])
        assert (r[f"{level}_live_cycles"] + r[f"{level}_dead_nodata"] + r[f"{level}_dead_unused"]
                == r[f"{level}_line_cycles"])
    if r["l1d_accesses"]:
        assert 0.0 <= r["l1_hit_rate"] <= 1.0
    else:   # no L1D access (l1d.admission = off, say): no hit rate
        assert math.isnan(r["l1_hit_rate"]) and math.isnan(r["l1d_hit_rate"])
    for key in ("l1d_energy_j", "l2_energy_j", "cache_energy_j"):
        assert math.isfinite(r[key]) and r[key] >= 0.0, key


# ---- unusual traces -------------------------------------------------------------------------------
# Real traces carry what no kernel model emits: memory widths on instructions of any class, spaces
# on non-memory instructions, inactive warps, addresses at the top of the address space, registers
# the core never saw. Any trace Kernel.validate accepts must run to completion or be refused with a
# ValueError (a CTA that does not fit on an SM).

TOP = (1 << 64) - 1


@st.composite
def unusual_traces(draw):
    trace = TRACES[draw(st.sampled_from(sorted(TRACES)))]
    copied = ("pc", "op_class", "space", "flags", "mask", "dst", "src", "addresses")
    kernels = [k.replace(**{name: getattr(k, name).copy() for name in copied}) for k in trace.kernels]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 4))):
        i = int(rng.integers(len(kernels)))
        k = kernels[i]
        rows = rng.integers(0, k.n_insts, int(rng.integers(1, 40)))
        kind = draw(st.sampled_from(["op_class", "space", "flags", "mask", "registers", "pc", "addresses",
                                     "shmem", "nregs"]))
        if kind == "op_class":  # memory widths on any class, or loads becoming stores and atomics
            k.op_class[rows] = rng.integers(0, len(OpClass.NAMES), rows.size)
        elif kind == "space":
            k.space[rows] = rng.integers(0, len(Space.NAMES), rows.size)
        elif kind == "flags":
            k.flags[rows] = rng.integers(0, 256, rows.size)
        elif kind == "mask":  # only where no address depends on the lane count
            still = rows[k.width[rows] == 0]
            k.mask[still] = rng.choice(np.array([0, 1, 1 << 31, 0xFFFFFFFF], np.uint32), still.size)
        elif kind == "registers":
            k.dst[rows, int(rng.integers(MAX_DST))] = rng.choice([0, 1, 200, NO_REG - 1, NO_REG], rows.size)
            k.src[rows, int(rng.integers(MAX_SRC))] = rng.choice([0, 1, 200, NO_REG - 1, NO_REG], rows.size)
        elif kind == "pc":
            k.pc[rows] = rng.choice(np.array([0, 1, 0x7FFFFFFF, 0xFFFFFFFF], np.uint32), rows.size)
        elif kind == "addresses" and k.addresses.size:
            at = rng.integers(0, k.addresses.size, int(rng.integers(1, 64)))
            k.addresses[at] = rng.choice(np.array([0, 3, 1 << 63, TOP - 127, TOP - 2, TOP], np.uint64), at.size)
        elif kind == "shmem":
            kernels[i] = k.replace(shmem_bytes=int(rng.choice([0, 1, 48 * 1024, 1 << 20])))
        elif kind == "nregs":
            kernels[i] = k.replace(nregs=int(rng.choice([0, 1, 63, 255, 4096])))
    for k in kernels:
        # Kernel.validate refuses a load, store or atomic without a memory space and writes to read-only
        # memory (tested in test_trace_model.py); give such rows global memory.
        memory = np.isin(k.op_class, (OpClass.LOAD, OpClass.STORE, OpClass.ATOMIC))
        writes = np.isin(k.op_class, (OpClass.STORE, OpClass.ATOMIC)) & np.isin(k.space, (Space.CONST, Space.TEX))
        k.space[(memory & (k.space == Space.NONE)) | writes] = Space.GLOBAL
    return Trace(kernels, trace.opcodes, trace.memcpys, name=trace.name).validate()


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(trace=unusual_traces(), preset=st.sampled_from(["gtx480", "ata", "gtx1080"]),
       sharing=st.sampled_from(["private", "ata", "decoupled"]), l2_power=st.sampled_from(["none", "loscache"]))
def test_any_valid_trace_runs_or_is_refused_clearly(trace, preset, sharing, l2_power):
    base = presets.get(preset)
    cfg = base.replace(**{"l1d.sharing": sharing, "l2.power": l2_power,
                          "l1d.cluster_size": base["l1d.cluster_size"] if sharing == "private" else 5})
    try:
        r = simulate(cfg, trace)
    except ValueError as e:
        assert "does not fit on an SM" in str(e)
        return
    assert r["warp_insts"] == trace.summary()["warp_insts"]
    assert r.raw["requests_live"] == 0
    for level in ("l1d", "l2"):
        assert r[f"{level}_hits"] + r[f"{level}_misses"] == r[f"{level}_accesses"]
    assert math.isfinite(r["cache_energy_j"])
