"""Any technique with any other, on any cache geometry: every combination the configuration accepts
runs to completion with every request answered and its counters consistent. Under the sanitizer
build of CI this also checks the C core's memory safety across combinations no other test names."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucachex import presets, simulate, workloads

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
        "l1d.sharing": draw(st.sampled_from(["private", "remote", "decoupled", "ata"])),
        "l1d.cluster_size": draw(st.sampled_from([c for c in (1, 2, 3, 5, 10, sms) if sms % c == 0])),
        "l1d.admission": draw(st.sampled_from(["always", "off", "admL1D"])),
        "l1d.admL1D.warmup_cycles": draw(st.sampled_from([1, 200, 2000])),
        "l1d.admL1D.b_threshold": draw(st.sampled_from([0.0, 0.5, 3.0])),
        "l1d.admL1D.scope": draw(st.sampled_from(["global", "per_sm"])),
        "l1d.power": draw(st.sampled_from(["none", "drowsy", "decay"])),
        "l2.power": draw(st.sampled_from(["none", "drowsy", "decay", "loscache", "ideal_gating"])),
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
    assert 0.0 <= r["l1_hit_rate"] <= 1.0
    for key in ("l1d_energy_j", "l2_energy_j", "cache_energy_j"):
        assert math.isfinite(r[key]) and r[key] >= 0.0, key
