"""The timing L1D and L2 order their lines for replacement as the policies say: a line is used for
replacement when it is allocated (its miss) and on hits, including requests merging into its fetch
(GPGPU-Sim's HIT_RESERVED), but not when its data arrives. Checked on one set against the
functional cache, which applies the policies access by access."""
import numpy as np
import pytest

import gpucachex
from gpucachex import presets, simulate
from tracebuild import KernelSpec, build, ld

LINE = 128
BASE = 0x1000000


def dependent_loads(lines, deps=None):
    """One lane loads word 0 of each line in turn; load i waits for the loads in deps[i] (default:
    the one before it), so the order of accesses is the list's."""
    prog = []
    for i, line in enumerate(lines):
        src = deps[i] if deps is not None else ((i,) if i else ())
        prog.append(ld(i + 1, [BASE + line * LINE], src=tuple(src)))
    return build([KernelSpec([[prog]])])


def functional_hits(lines, sets, ways, policy):
    addrs = np.array([BASE + line * LINE for line in lines], dtype=np.uint64)
    return gpucachex.cache_run(addrs, sets=sets, ways=ways, line_bytes=LINE, policy=policy)["hits"]


def one_set_l1d(policy, allocate):
    return presets.get("gtx480").replace(**{
        "core.sms": 1, "l1i.size_kb": 0, "l1d.size_kb": 4 * LINE / 1024, "l1d.ways": 4, "l1d.line_bytes": LINE,
        "l1d.policy": policy, "l1d.allocate": allocate})


# Jaleel et al.'s example for one 4-way set: a1 a2 a2 a1 b1 b2 b3 b4 a1 a2. SRRIP keeps a1 and a2
# (re-referenced) through the scan of b1..b4 and hits on both again; LRU loses them.
SCAN = [1, 2, 2, 1, 11, 12, 13, 14, 1, 2]


@pytest.mark.parametrize("allocate", ["miss", "fill"])
@pytest.mark.parametrize("policy, hits", [("srrip", 4), ("lru", 2)])
def test_l1d_keeps_srrips_insertion_value_until_a_re_reference(policy, hits, allocate):
    r = simulate(one_set_l1d(policy, allocate), dependent_loads(SCAN), energy=False)
    assert r["l1d_hits"] == hits == functional_hits(SCAN, 1, 4, policy)


@pytest.mark.parametrize("policy, hits", [("srrip", 4), ("lru", 2)])
def test_l2_keeps_srrips_insertion_value_until_a_re_reference(policy, hits):
    # One partition of 2 sets x 4 ways; even line numbers all map to set 0.
    lines = [2 * x for x in SCAN]
    cfg = presets.get("gtx480").replace(**{
        "core.sms": 1, "l1i.size_kb": 0, "l1d.cache_global": False, "l2.size_kb": 1.0, "l2.ways": 4,
        "l2.partitions": 1, "dram.channels": 1, "l2.policy": policy})
    r = simulate(cfg, dependent_loads(lines), energy=False)
    assert r["l2_hits"] == hits == functional_hits(lines, 2, 4, policy)


def test_lru_recency_comes_from_the_miss_not_from_the_fill():
    # One 2-way set: A, B, then C misses and B hits while C is fetched; D then evicts the line used
    # least recently. C was allocated at its miss, before B's hit, so C goes and B hits twice more
    # (3 hits, as the functional cache's order of accesses gives). Were C's use taken at its fill,
    # after B's hit, B would go instead (2 hits).
    lines = [0, 1, 2, 1, 3, 1, 1]
    deps = [(), (1,), (2,), (2,), (3, 4), (5,), (6,)]
    cfg = presets.get("gtx480").replace(**{
        "core.sms": 1, "l1i.size_kb": 0, "l1d.size_kb": 2 * LINE / 1024, "l1d.ways": 2, "l1d.line_bytes": LINE,
        "l1d.policy": "lru", "l1d.allocate": "miss"})
    r = simulate(cfg, dependent_loads(lines, deps), energy=False)
    assert (r["l1d_hits"], r["l1d_misses"]) == (3, 4)
    assert functional_hits(lines, 1, 2, "lru") == 3


def test_a_request_merging_into_a_fetch_is_a_use_of_the_line():
    # One 2-way set: A misses; B misses; a second load of A merges into A's fetch (a use of A after
    # B's allocation); C then evicts the line used least recently: B, so a last load of A hits.
    lines = [0, 1, 0, 2, 0]
    deps = [(), (), (), (1, 2, 3), (4,)]
    cfg = presets.get("gtx480").replace(**{
        "core.sms": 1, "l1i.size_kb": 0, "l1d.size_kb": 2 * LINE / 1024, "l1d.ways": 2, "l1d.line_bytes": LINE,
        "l1d.policy": "lru", "l1d.allocate": "miss"})
    r = simulate(cfg, dependent_loads(lines, deps), energy=False)
    assert r["l1d_pending_hits"] == 1
    assert r["l1d_hits"] == 1


@pytest.mark.parametrize("level", ["l1d", "l2"])
@pytest.mark.parametrize("bits, hits", [(1, 2), (2, 4)])
def test_policy_parameters_are_configuration_keys(level, bits, hits):
    # With one RRPV bit, SRRIP inserts at 0 like a hit and keeps nothing through the scan (2 hits, as
    # LRU); with two it keeps a1 and a2 (4 hits). The key reaches the timing cache of its own level.
    if level == "l1d":
        cfg, lines, sets = one_set_l1d("srrip", "miss"), SCAN, 1
    else:
        cfg, lines, sets = presets.get("gtx480").replace(**{
            "core.sms": 1, "l1i.size_kb": 0, "l1d.cache_global": False, "l2.size_kb": 1.0, "l2.ways": 4,
            "l2.partitions": 1, "dram.channels": 1, "l2.policy": "srrip"}), [2 * x for x in SCAN], 2
    r = simulate(cfg.replace(**{f"{level}.srrip.rrpv_bits": bits}), dependent_loads(lines), energy=False)
    addrs = np.array([BASE + line * LINE for line in lines], dtype=np.uint64)
    functional = gpucachex.cache_run(addrs, sets=sets, ways=4, line_bytes=LINE, policy="srrip", rrpv_bits=bits)
    assert r[f"{level}_hits"] == hits == functional["hits"]


def test_policy_parameters_are_checked():
    cfg = presets.get("gtx480")
    assert cfg["l1d.srrip.rrpv_bits"] == cfg["l2.srrip.rrpv_bits"] == 2
    for bad, words in ((0, "between 1 and 8"), (9, "between 1 and 8"), (2.5, "an integer")):
        with pytest.raises(ValueError, match=f"l2.srrip.rrpv_bits must be {words}"):
            cfg.replace(**{"l2.srrip.rrpv_bits": bad})
    with pytest.raises(TypeError, match="l2.srrip.rrpv_bits must be a number, got str 'x'"):
        cfg.replace(**{"l2.srrip.rrpv_bits": "x"})
    with pytest.raises(KeyError, match="unknown configuration key 'l1d.srrip.rrpv' .close: l1d.srrip.rrpv_bits"):
        cfg.replace(**{"l1d.srrip.rrpv": 3})


@pytest.mark.parametrize("last, hits", [(4, 5), (0, 4)])
def test_a_refused_miss_leaves_srrips_order_as_it_found_it(last, hits):
    # Two sets of 4 ways, one MSHR entry, four banks (each with its own latency pipeline, so a refused
    # request holds only its bank). A, B, C, D (lines 0, 4, 6, 8) fill set 0 at RRPV 2; B, C and D hit
    # (RRPV 0). F (line 1, set 1) takes the MSHR entry; E (line 2, set 0) is refused until F's fill,
    # while A hits (RRPV 0). When E is taken every line of set 0 is at 0, so SRRIP ages them all
    # alike and evicts A, the first way: a last load of B hits, one of A misses. A refused attempt that
    # kept its ageing (A at 3, the others at 1, before A's hit) made E evict B instead.
    lines = [0, 4, 6, 8, 4, 6, 8, 1, 2, 0, last]
    deps = [(), (1,), (2,), (3,), (4,), (4,), (4,), (5, 6, 7), (5, 6, 7), (5, 6, 7), (8, 9, 10)]
    cfg = presets.get("gtx480").replace(**{
        "core.sms": 1, "l1i.size_kb": 0, "l1d.size_kb": 8 * LINE / 1024, "l1d.ways": 4, "l1d.line_bytes": LINE,
        "l1d.policy": "srrip", "l1d.allocate": "miss", "l1d.mshr_entries": 1, "l1d.latency_queue": True,
        "l1d.banks": 4})
    r = simulate(cfg, dependent_loads(lines, deps), energy=False)
    assert r["l1d_fail_mshr_entry"] > 0
    assert r["l1d_hits"] == hits


# ---- every registered policy in the timing model ----------------------------------------------

@pytest.mark.parametrize("policy", [p["name"] for p in gpucachex.policies()])
def test_every_policy_runs_in_both_timing_caches_and_keeps_their_counts(policy):
    # The contract a policy added to csrc/policies/registry.c is checked against automatically: it
    # drives the L1D and the L2 of a timing run (small caches, so that it picks victims), every request
    # is answered, each cache's hits and misses add up to its accesses, and a second run is identical.
    cfg = presets.get("gtx480").replace(**{"l1d.policy": policy, "l2.policy": policy, "l1d.size_kb": 2,
                                           "l1d.ways": 4, "l2.size_kb": 48, "l2.ways": 4})
    r = simulate(cfg, "hotspot3d:tiny", seed=1, energy=False)
    assert r.raw["requests_live"] == 0
    for level in ("l1d", "l2"):
        assert r[f"{level}_hits"] + r[f"{level}_misses"] == r[f"{level}_accesses"] > 0
        assert r[f"{level}_evictions"] > 0
    assert simulate(cfg, "hotspot3d:tiny", seed=1, energy=False).metrics == r.metrics
