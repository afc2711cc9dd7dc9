"""Shared L1D clusters (l1d.sharing = private, remote, decoupled, ata) on hand-built kernels: known
answers worked by hand for each organisation, the fall-back of a remote read to the L2, the
invariants every organisation keeps, and the comparisons the ATA-Cache paper makes."""
import numpy as np
import pytest

from gpucachex import energy, presets, simulate
from approx import approx_j
from tracebuild import KernelSpec, alu, build, chain, ld, lanes, st

# Two SMs forming one cluster, a perfect instruction cache, round numbers (gtx480: 16 KB 4-way
# L1D of 32 sets, 128 B lines, 20-cycle hits, 32 B flits).
LAT = 4
BASE = presets.get("gtx480").replace(**{
    "core.sms": 2, "l1d.cluster_size": 2, "l1i.size_kb": 0, "core.schedulers": 1, "l2.partitions": 6,
    "dram.channels": 6, "cluster.latency": LAT, "cluster.flits_per_cycle": 1})
MODES = ["private", "remote", "decoupled", "ata"]

A = 0x10000            # line address 512: 512 // 32 sets = 16, even: its decoupled home is SM 0
B = A + 32 * 128       # line address 544: 17, odd: home SM 1
REQ_FLITS = 1          # an 8-byte request header
DATA_FLITS = 5         # 8 + 128 bytes of data in 32-byte flits


def use(reg):
    return alu(dst=(200,), src=(reg,))


def two_sms(p0, p1):
    """CTA 0 runs p0 on SM 0 and CTA 1 runs p1 on SM 1 (round-robin dispatch)."""
    return build([KernelSpec([[p0], [p1]])])


def run(trace, mode="private", **over):
    return simulate(BASE.replace(**{"l1d.sharing": mode, **over}), trace)


def latency_sum(r):
    return r["l1_latency_avg"] * r["loads"]


# ---- the same line read by two SMs of a cluster ---------------------------------------------

# SM 0 reads A; about 600 cycles later, after SM 0's fill, SM 1 reads A twice.
SAME_LINE = two_sms([ld(101, lanes(A)), use(101)],
                    chain(150) + [ld(101, lanes(A)), use(101), ld(102, lanes(A)), use(102)])


def test_private_misses_twice_ata_hits_remotely_the_second_time():
    p, a = run(SAME_LINE, "private"), run(SAME_LINE, "ata")
    # private: each SM misses once (SM 1's second read hits its own copy); both misses go to L2
    assert (p["l1d_misses"], p["l1d_hits"], p["l1d_remote_hits"], p["l2_read_accesses"]) == (2, 1, 0, 2)
    # ATA: SM 1's first read misses locally, the aggregated tag array finds SM 0's copy, and the
    # data comes over the crossbar and is filled locally, so its second read is a local hit
    assert (a["l1d_misses"], a["l1d_hits"], a["l1d_remote_hits"], a["l2_read_accesses"]) == (2, 1, 1, 1)
    assert a["l1d_remote_reads"] == 1 and a["l1d_remote_fallbacks"] == 0
    assert a["l1_hit_rate"] == pytest.approx(2 / 3) and p["l1_hit_rate"] == pytest.approx(1 / 3)
    assert p["cluster_flits"] == 0 and a["cluster_flits"] == REQ_FLITS + DATA_FLITS
    # one aggregated comparison with the other tag array per global read the L1Ds accepted
    assert a["l1d_remote_tag_lookups"] == 3
    # replication sampled at fills: SM 1's fill copies SM 0's line, in both organisations
    assert p["l1d_replication"] == a["l1d_replication"] == 1.5


def test_ata_remote_hit_latency_worked_by_hand():
    # Latencies of single loads, from issue to answer: M (a miss, SM 0 alone), H (a local hit).
    alone = run(two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))]), "ata")
    twice = run(two_sms([ld(101, lanes(A)), use(101), ld(102, lanes(A)), use(102)], [alu(dst=(1,))]), "ata")
    m = latency_sum(alone)
    h = latency_sum(twice) - m
    assert h == BASE["l1d.hit_latency"] + 1  # the LD/ST unit hands the request over the cycle after issue
    for lat in (4, 10):
        r = run(SAME_LINE, "ata", **{"cluster.latency": lat})
        remote = latency_sum(r) - m - h
        # tag comparison (1) + the read request (1 flit + lat) + the remote data array (the hit
        # latency, idle banks) + the data back (5 flits + lat); the local fill answers at arrival
        assert remote == h + 1 + (REQ_FLITS + lat) + (DATA_FLITS + lat)


def test_ata_waits_for_a_line_another_l1d_is_fetching():
    # SM 1 misses on A 4k cycles after SM 0 did, while SM 0's fetch is still out: the aggregated
    # tag array sees SM 0's reserved tag, so SM 1's fetch waits in SM 0's MSHR entry instead of
    # going to the L2, and the data reaches SM 1 over the crossbar right after SM 0's fill.
    rows = []
    for k in (5, 10, 20):
        for lat in (4, 10):
            tr = two_sms([ld(101, lanes(A)), use(101)], chain(k) + [ld(102, lanes(A)), use(102)])
            p, a = run(tr, "private", **{"cluster.latency": lat}), run(tr, "ata", **{"cluster.latency": lat})
            assert (p["l2_read_accesses"], a["l2_read_accesses"]) == (2, 1)
            assert (a["l1d_remote_waits"], a["l1d_remote_pending_hits"], a["l1d_remote_hits"]) == (1, 1, 0)
            assert a["l1d_remote_reads"] == 0 and a["l1d_remote_fallbacks"] == 0
            assert a["cluster_flits"] == REQ_FLITS + DATA_FLITS and a.raw["requests_live"] == 0
            # like a merged miss, the wait is neither a hit nor a remote hit
            assert a["l1_hit_rate"] == p["l1_hit_rate"] == 0
            rows.append((k, lat, latency_sum(a)))
    # SM 1's answer comes a fixed time after SM 0's fill: the later it asks, the shorter it waits;
    # only the data's way back (5 flits + latency) crosses the network after the fill.
    ends = {(k, lat): s + 4 * k for k, lat, s in rows}
    assert len({ends[k, 4] for k in (5, 10, 20)}) == 1
    assert all(ends[k, 10] - ends[k, 4] == 10 - 4 for k in (5, 10, 20))


def test_ata_waits_only_on_an_l1d_that_fetches_from_the_l2():
    # Three SMs in one cluster: SM 1 fetches A from the L2; SM 0 misses next and waits on SM 1;
    # SM 2 misses last, and of the other L1Ds it looks at SM 0 first, whose fetch waits itself, so
    # it waits on SM 1 too. Both then get the data straight from SM 1's fill: each crosses the
    # network once after it, so the latencies grow by 2 cycles per cycle of cluster latency (a wait
    # on SM 0 would have made SM 2's data cross twice: 3 per cycle).
    tr = build([KernelSpec([[chain(5) + [ld(101, lanes(A)), use(101)]], [[ld(102, lanes(A)), use(102)]],
                            [chain(10) + [ld(103, lanes(A)), use(103)]]])])
    sums = {}
    for lat in (4, 10):
        a = run(tr, "ata", **{"core.sms": 3, "l1d.cluster_size": 3, "cluster.latency": lat})
        assert a["l2_read_accesses"] == 1 and a["l1d_remote_waits"] == 2 and a["loads"] == 3
        assert a["l1d_remote_pending_hits"] == 2 and a.raw["requests_live"] == 0
        sums[lat] = latency_sum(a)
    assert sums[10] - sums[4] == 2 * (10 - 4)


def test_ata_a_wait_that_finds_the_fetch_full_goes_to_the_l2_and_is_no_fallback():
    # Two requests per MSHR entry, a 50-cycle cluster network. SM 0 misses A; SM 1 misses A just after
    # and is sent to wait in SM 0's entry, which has room then. SM 0's second load of A merges into
    # its own entry before SM 1's read arrives: the entry is full, so the read goes to the L2 (a
    # refused wait; the line did not change, so no fallback). When SM 0's second load comes after
    # the read's arrival, the read waits.
    def ata(gap):
        tr = two_sms([ld(101, lanes(A))] + chain(gap) + [ld(102, lanes(A)), use(101), use(102)],
                     chain(3) + [ld(111, lanes(A)), use(111)])
        return run(tr, "ata", **{"l1d.mshr_merge": 2, "cluster.latency": 50})

    full, room = ata(8), ata(20)
    assert (full["l1d_remote_wait_refusals"], full["l1d_remote_fallbacks"], full["l1d_remote_waits"]) == (1, 0, 0)
    assert full["l2_read_accesses"] == 2
    assert (room["l1d_remote_wait_refusals"], room["l1d_remote_waits"], room["l2_read_accesses"]) == (0, 1, 1)


def test_ata_a_read_that_waits_on_arrival_marks_its_own_fetch_as_waiting():
    # Sectored L1Ds (32 B sectors), a 100-cycle cluster network. SM 1 holds sector 0 of A; SM 0
    # misses it and, seeing it in SM 1's tags, sends a read (cycle ~300). Before the read arrives SM 1
    # evicts A with a store and misses sectors 0-1 again, so the read finds A being fetched and waits
    # in SM 1's fetch. SM 0 then fetches sector 2 from the L2, and SM 1 misses sector 2 while that
    # fetch is under way: SM 0's fetch already waits on SM 1, so SM 1 must not wait on it (each
    # would wait for the other forever); it reads the L2 too.
    s0, s01, s2 = lanes(A, n=8), lanes(A, n=16), lanes(A + 64, n=8)
    tr = two_sms(chain(75) + [ld(101, s0)] + chain(28) + [ld(102, s2), use(101), use(102)],
                 [ld(111, s0), use(111)] + chain(25) + [st(s0), ld(112, s01)] + chain(20) +
                 [ld(113, s2), use(112), use(113)])
    for acks in (True, False):
        r = run(tr, "ata", **{"l1d.sector_bytes": 32, "cluster.latency": 100, "core.store_acks": acks})
        assert r["l1d_remote_waits"] == r["l1d_remote_pending_hits"] == 1 and r["l1d_remote_hits"] == 0
        # SM 1: sector 0, sectors 0-1 after the store, sector 2; SM 0: sector 2
        assert r["l2_read_accesses"] == 4 and r["loads"] == 5 and r.raw["requests_live"] == 0


def l1_access_sum(r):
    return r["avg_l1_access_latency"] * r["loads"]


@pytest.mark.parametrize("lat", [4, 10])
def test_l1_access_latency_ends_at_an_l1d_answer_or_when_the_miss_leaves_for_the_l2(lat):
    # The ATA-Cache paper's "L1 cache latency": issue to the completion of the L1D accesses of a
    # load, worked by hand for a miss alone (SM 0), a local hit after it, and SAME_LINE (SM 0
    # misses, then SM 1 reads A twice).
    hit = BASE["l1d.hit_latency"] + 1                # issue, then the LD/ST unit's hand-over
    miss_alone = two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))])
    twice = two_sms([ld(101, lanes(A)), use(101), ld(102, lanes(A)), use(102)], [alu(dst=(1,))])
    expect = {
        # a miss is complete when its fetch leaves for the L2, the cycle after issue
        "private": (1, hit, 1 + 1 + hit),
        # the same; SM 1's first read is a remote hit: tag comparison, request, remote data array, data back
        "ata": (1, hit, 1 + (hit + 1 + (REQ_FLITS + lat) + (DATA_FLITS + lat)) + hit),
        # the L2 request waits for the probe round trip (probe out, lookup, miss answer back, queue)
        "remote": (1 + (1 + (1 + lat) + 1 + (1 + lat)), hit, None),
        # every request crosses to its home (A's is SM 0) the cycle after the hand-over; a hit is
        # answered there after the hit latency, and SM 1's answers cross back
        "decoupled": (2 + REQ_FLITS + lat, 1 + REQ_FLITS + lat + hit, None),
    }
    for mode, (miss, local_hit, same_line) in expect.items():
        over = {"cluster.latency": lat}
        m = run(miss_alone, mode, **over)
        assert l1_access_sum(m) == miss, mode
        assert l1_access_sum(run(twice, mode, **over)) - miss == local_hit, mode
        assert m["avg_l1_access_latency"] < m["avg_load_latency"], mode  # the L2's time is not in it
        if same_line is not None:
            assert l1_access_sum(run(SAME_LINE, mode, **over)) == same_line, mode
    # a read that waits for another L1D's fetch is complete once it waits there (one crossing),
    # however long that fetch still takes
    for k in (5, 20):
        tr = two_sms([ld(101, lanes(A)), use(101)], chain(k) + [ld(102, lanes(A)), use(102)])
        a = run(tr, "ata", **{"cluster.latency": lat})
        assert a["l1d_remote_waits"] == 1
        assert l1_access_sum(a) == 1 + (1 + 1 + REQ_FLITS + lat)


def test_with_a_latency_queue_misses_and_ata_comparisons_wait_for_the_hit_latency():
    # l1d.latency_queue (GPGPU-Sim 4.0): the tags, the aggregated ones included, are checked after the
    # hit latency, so a miss's access and an ATA remote read start that much later; the remote data
    # array still takes the hit latency; a home checks its tags at the end of its own pipeline.
    hit = BASE["l1d.hit_latency"] + 1
    queued = {"cluster.latency": LAT, "l1d.latency_queue": True}
    miss_alone = two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))])
    assert l1_access_sum(run(miss_alone, "private", **queued)) == hit
    assert l1_access_sum(run(miss_alone, "decoupled", **queued)) == 2 + REQ_FLITS + LAT + BASE["l1d.hit_latency"]
    a = run(SAME_LINE, "ata", **queued)
    remote = hit + 1 + (REQ_FLITS + LAT) + BASE["l1d.hit_latency"] + (DATA_FLITS + LAT)
    assert a["l1d_remote_hits"] == 1 and l1_access_sum(a) == hit + remote + hit
    # against hand-over: SM 0's miss and SM 1's remote hit take the hit latency longer, SM 1's local hit not
    assert latency_sum(a) - latency_sum(run(SAME_LINE, "ata", **{"cluster.latency": LAT})) == 2 * (hit - 1)


def test_an_ata_miss_routed_to_another_l1d_needs_no_miss_queue_slot():
    # SM 1's six stores keep its 2-slot miss queue full (each takes 5 flits at its crossbar port);
    # its load right behind them misses. A miss the aggregated tag array sends to SM 0's copy of A
    # goes over the cluster network, not to the L2, so it meets no miss-queue fail; a miss on B,
    # which no L1D holds, and any private miss wait for a slot like the stores.
    stores = [st(lanes(0x80000 + 128 * i)) for i in range(6)]
    queue = {"l1d.miss_queue": 2}

    def fails(target, mode):
        tr = two_sms([ld(101, lanes(A)), use(101)], chain(150) + stores + [ld(102, lanes(target)), use(102)])
        only_stores = two_sms([ld(101, lanes(A)), use(101)], chain(150) + stores + [alu(dst=(102,)), use(102)])
        r = run(tr, mode, **queue)
        assert r.raw["requests_live"] == 0
        return r["l1d_fail_miss_queue"] - run(only_stores, mode, **queue)["l1d_fail_miss_queue"], r

    added, a = fails(A, "ata")
    assert added == 0 and a["l1d_remote_hits"] == 1
    assert fails(B, "ata")[0] > 0 and fails(A, "private")[0] > 0


def test_remote_sharing_fetches_wait_for_a_free_miss_queue_slot_after_the_probes():
    # SM 0: eight independent load misses, then eight stores, with a two-entry miss queue. Each miss
    # waits out the probe round trip in its MSHR entry while the stores fill the queue; its fetch then
    # waits for a free slot, so the queue never holds more than two.
    loads = [ld(1 + i, lanes(0x100000 + 128 * i)) for i in range(8)]
    stores = [st(lanes(0x200000 + 128 * i)) for i in range(8)]
    tr = two_sms(loads + stores + [use(1 + i) for i in range(8)], [alu(dst=(1,))])
    queue = {"l1d.miss_queue": 2}
    p, r = run(tr, "private", **queue), run(tr, "remote", **queue)
    assert p["l1d_miss_queue_max"] == r["l1d_miss_queue_max"] == 2
    assert r["l1d_probes"] == 8 and r["l1d_remote_hits"] == 0 and r["l2_read_accesses"] == 8
    assert r["l2_write_accesses"] == 8 and r.raw["requests_live"] == 0
    # a waiting fetch takes its slot first: more miss-queue fails than private's
    assert r["l1d_fail_miss_queue"] > p["l1d_fail_miss_queue"]


def test_ata_fallbacks_wait_for_a_free_miss_queue_slot():
    # A 300-cycle cluster network and a two-entry miss queue. SM 1 holds L0..L7 and write-evicts them
    # later; SM 0 misses on them in between: the aggregated tags route the eight reads to SM 1 with no
    # miss-queue slot, and they come back as fallbacks to the L2 while SM 0's stores keep its queue
    # full. They wait for free slots: the queue never holds more than two.
    slow = {"cluster.latency": 300, "l1d.miss_queue": 2}
    m = int(latency_sum(run(two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))]), "ata", **slow)))
    lines = [0x100000 + 128 * i for i in range(8)]
    sm1 = ([ld(150 + i, lanes(a)) for i, a in enumerate(lines)] + [use(150 + i) for i in range(8)] + chain(60)
           + [st(lanes(a)) for a in lines])
    sm0 = (chain((m + 60) // 4) + [ld(150 + i, lanes(a)) for i, a in enumerate(lines)]
           + [st(lanes(0x300000 + 128 * i)) for i in range(200)] + [use(150 + i) for i in range(8)])
    r = run(two_sms(sm0, sm1), "ata", **slow)
    assert (r["l1d_remote_fallbacks"], r["l1d_remote_hits"]) == (8, 0)
    assert r["l1d_miss_queue_max"] == 2 and r.raw["requests_live"] == 0
    assert r["l2_read_accesses"] == 16 and r["l2_write_accesses"] == 208


@pytest.mark.parametrize("queued", [False, True])
def test_ata_compares_the_other_tag_arrays_at_every_attempt_refused_ones_included(queued):
    # Two MSHR entries and 40 independent misses per SM: most attempts are refused (MSHR-entry fails)
    # and retried every cycle. Each attempt looks up the local tags and, in the aggregated tag array,
    # the other L1D's in parallel: one remote comparison per local lookup in a cluster of two.
    prog = [ld(1 + i, lanes(0x100000 + 4096 * i)) for i in range(40)]
    r = run(two_sms(prog, list(prog)), "ata", **{"l1d.mshr_entries": 2, "l1d.latency_queue": queued})
    assert r["l1d_reservation_fails"] > 10 * r["l1d_accesses"]
    assert r["l1d_remote_tag_lookups"] == r["l1d_tag_lookups"] == r["l1d_accesses"] + r["l1d_reservation_fails"]


def test_a_switched_off_l1d_serves_no_remote_read():
    # Sectored L1Ds with AdmL1D (global scope, threshold 0): SM 2's misses fail in the warm-up, so every
    # L1D is switched off at cycle 1000. SM 1 holds sector 0 of A and is fetching sector 1 then, so
    # the switch-off cannot drop that line yet; SM 0's ATA read of sector 0, sent before the decision
    # and arriving after it, must not read the gated data array: it falls back to the L2.
    s0, s1 = lanes(A, n=8), lanes(A + 32, n=8)
    cfg = BASE.replace(**{"core.sms": 4, "cluster.latency": 300, "l1d.sector_bytes": 32, "l1d.sharing": "ata",
                          "l1d.mshr_entries": 2, "l1d.admission": "admL1D", "admL1D.b_threshold": 0.0,
                          "admL1D.warmup_cycles": 1000})
    failer = [ld(1 + i, lanes(0x400000 + 4096 * i)) for i in range(4)] + [use(1), use(2), use(3), use(4)]
    sm0 = chain(200) + [ld(101, s0), use(101)]
    sm1 = [ld(111, s0), use(111)] + chain(180) + [ld(112, s1), use(112)]
    r = simulate(cfg, build([KernelSpec([[sm0], [sm1], [failer], [[alu(dst=(1,))]]])]))
    assert r["admL1D_decision_cycle"] == 1000 and r["admL1D_sm1_off"] == 1
    assert r["l1d_remote_reads"] == 0 and r["l1d_remote_hits"] == 0 and r["l1d_remote_fallbacks"] == 1


def test_remote_sharing_delays_the_l2_request_by_the_probe_round_trip():
    one = two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))])
    for lat in (4, 9):
        p, r = run(one, "private", **{"cluster.latency": lat}), run(one, "remote", **{"cluster.latency": lat})
        # the probe leaves the cycle after the miss (1), crosses (1 flit + lat), is looked up (1),
        # the miss answer crosses back (1 flit + lat), then the fetch enters the miss queue (1)
        assert r["l1_latency_avg"] - p["l1_latency_avg"] == 1 + (1 + lat) + 1 + (1 + lat)
        assert r["l1d_probes"] == 1 and r["l1d_remote_tag_lookups"] == 1 and r["cluster_flits"] == 2
        assert r["l2_read_accesses"] == p["l2_read_accesses"] == 1


def test_remote_sharing_hit_comes_from_the_probed_cache():
    r = run(SAME_LINE, "remote")
    assert (r["l1d_remote_hits"], r["l1d_probes"], r["l2_read_accesses"], r["l1d_hits"]) == (1, 2, 1, 1)
    # SM 0's probe finds nothing (1 + 1 flit); SM 1's finds the line (1 flit, data back in 5)
    assert r["cluster_flits"] == 2 + REQ_FLITS + DATA_FLITS


def test_remote_sharing_takes_the_first_of_two_data_answers():
    # Clusters of three: SMs 0 and 1 read A together (both probes miss, both go to the L2); later
    # SM 2 misses and probes both, which both answer with the data: the first fills SM 2's line,
    # the second is dropped.
    three = {"core.sms": 3, "l1d.cluster_size": 3}
    read = [ld(101, lanes(A)), use(101)]
    tr = build([KernelSpec([[read], [read], [chain(150) + read + [ld(102, lanes(A)), use(102)]]])])
    r = run(tr, "remote", **three)
    assert (r["l1d_probes"], r["l1d_remote_reads"], r["l1d_remote_hits"]) == (6, 2, 1)
    assert r["l2_read_accesses"] == 2 and r["l1d_hits"] == 1 and r.raw["requests_live"] == 0
    # six 1-flit probes, four 1-flit miss answers, two 5-flit data answers
    assert r["cluster_flits"] == 6 + 4 + 2 * DATA_FLITS


@pytest.mark.parametrize("addr,home", [(A, 0), (B, 1)])
def test_decoupled_sends_every_request_to_the_home_cache(addr, home):
    tr = two_sms([ld(101, lanes(addr)), use(101)], chain(150) + [ld(101, lanes(addr)), use(101)])
    r = run(tr, "decoupled")
    per = r.raw["l1d_per_cache"]
    # both SMs' reads are served by the home L1D: a miss and then a hit; no copy elsewhere
    assert per["accesses"][home] == 2 and per["accesses"][1 - home] == 0
    assert per["hits"][home] == 1 and r["l1d_home_requests"] == 2
    assert r["l2_read_accesses"] == 1 and r["l1d_replication"] == 1.0
    # every request crosses the crossbar, its own SM's too; only another SM's answer crosses back
    assert r["cluster_flits"] == 2 * REQ_FLITS + DATA_FLITS


def test_decoupled_store_goes_to_its_home_and_evicts_there():
    tr = two_sms([ld(101, lanes(B)), use(101), st(lanes(B), src=(101,)), ld(102, lanes(B)), use(102)],
                 [alu(dst=(1,))])
    r = run(tr, "decoupled")
    per = r.raw["l1d_per_cache"]
    assert per["write_accesses"] == [0, 1] and per["read_accesses"] == [0, 2]
    assert per["invalidations"] == [0, 1] and r["l2_write_accesses"] == 1
    # write-evict at the home: the store hits and drops the line, the next read misses again
    assert (r["l1d_hits"], r["l1d_misses"]) == (1, 2)
    # two reads and a store with 128 bytes of data (5 flits) go to SM 1; two answers come back
    assert r["cluster_flits"] == 2 * REQ_FLITS + DATA_FLITS + 2 * DATA_FLITS


def test_decoupled_store_is_acknowledged_to_the_sm_that_made_it():
    # SM 1 stores to A, whose home is SM 0: the store crosses the cluster network to SM 0's L1D,
    # which sends it to the L2; the L2's acknowledgement goes straight back to SM 1 (the crossbar
    # knows the requester), so the cluster network carries only the store.
    tr = two_sms([alu(dst=(1,))], [st(lanes(A))])
    off, on = run(tr, "decoupled", **{"core.store_acks": False}), run(tr, "decoupled")
    assert on["stores_acked"] == 1 and on.raw["requests_live"] == 0
    assert on["cluster_flits"] == off["cluster_flits"] == DATA_FLITS
    assert on["icnt_reply_flits"] == off["icnt_reply_flits"] + 1
    assert on["cycles"] > off["cycles"] + BASE["l2.latency"]


def test_ata_writes_only_in_the_local_cache():
    # SM 1 holds A; SM 0 writes A: write-evict in SM 0's L1D only, so SM 1's copy stays and its
    # next read hits locally (GPU L1Ds are not coherent; ATA does not change that).
    tr = two_sms(chain(150) + [st(lanes(A))],
                 [ld(101, lanes(A)), use(101)] + chain(200) + [ld(102, lanes(A)), use(102)])
    r = run(tr, "ata")
    per = r.raw["l1d_per_cache"]
    assert per["write_accesses"] == [1, 0] and per["hits"] == [0, 1]
    assert r["cluster_flits"] == 0 and r["l2_write_accesses"] == 1


def test_ata_falls_back_to_l2_when_the_remote_line_changed_before_the_read():
    # A slow cluster network (300 cycles) leaves a wide window: SM 1 compares tags and finds A in
    # SM 0's L1D, but SM 0's store evicts A before SM 1's read arrives there.
    slow = {"cluster.latency": 300}
    m = latency_sum(run(two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))]), "ata", **slow))
    load1 = int(m) + 120            # SM 1 reads A 120 cycles after SM 0's fill ...
    store0 = int(m) + 240           # ... and SM 0 stores to A 120 cycles later
    tr = two_sms([ld(101, lanes(A)), use(101)] + chain((store0 - int(m)) // 4) + [st(lanes(A))],
                 chain(load1 // 4) + [ld(102, lanes(A)), use(102)])
    r = run(tr, "ata", **slow)
    assert r["l1d_remote_fallbacks"] == 1 and r["l1d_remote_hits"] == 0 and r["l1d_remote_reads"] == 0
    assert r["l2_read_accesses"] == 2 and r["loads"] == 2 and r.raw["requests_live"] == 0
    # without the store the same read is a remote hit
    tr = two_sms([ld(101, lanes(A)), use(101)], chain(load1 // 4) + [ld(102, lanes(A)), use(102)])
    r = run(tr, "ata", **slow)
    assert r["l1d_remote_fallbacks"] == 0 and r["l1d_remote_hits"] == 1


# ---- sharing with line power techniques -------------------------------------------------------

def sm0_line_a(r):
    """(ON, DROWSY, OFF) cycles of the line of SM 0's L1D that holds A (the one ON the longest)."""
    res = r.line_residency("l1d")
    res = res[:len(res) // 2]  # SM 0's lines come first, then SM 1's
    return res[int(np.argmax(res[:, 0]))].tolist()


@pytest.mark.parametrize("mode", ["ata", "remote"])
def test_another_l1d_never_finds_a_line_past_its_decay_cycle(mode):
    # SAME_LINE: SM 1 reads A about 400 cycles after SM 0's fill. Decay switches lines off lazily, when
    # a lookup touches their set, so the other L1D's tag check must apply it too: SM 0's copy is gone,
    # SM 1's read goes to the L2, and SM 0's line was ON for the interval only (one decay, no revival).
    r = simulate(BASE.replace(**{"l1d.sharing": mode, "l1d.power": "decay", "decay.interval": 100}), SAME_LINE,
                 detail=True)
    assert (r["l1d_remote_hits"], r["l1d_remote_reads"], r["l2_read_accesses"]) == (0, 0, 2)
    assert r["l1d_decay_lines"] == 1 and r["l1d_hits"] == 1
    assert sm0_line_a(r) == [100, 0, r["cycles"] - 100]
    # an interval longer than the gap keeps the copy: a remote hit, and SM 0's line ON to the end
    r = simulate(BASE.replace(**{"l1d.sharing": mode, "l1d.power": "decay", "decay.interval": 10000}), SAME_LINE,
                 detail=True)
    assert (r["l1d_remote_hits"], r["l2_read_accesses"], r["l1d_decay_lines"]) == (1, 1, 0)
    assert sm0_line_a(r)[1:] == [0, r["cycles"] - sm0_line_a(r)[0]] and sm0_line_a(r)[0] > 300


def test_ata_a_line_that_decays_before_the_remote_read_arrives_sends_it_to_the_l2():
    # A 300-cycle cluster network: SM 1 compares tags 120 cycles after SM 0's fill and finds A, but
    # A decays 200 cycles after the fill, before SM 1's read reaches SM 0: the read falls back.
    slow = {"cluster.latency": 300}
    m = latency_sum(run(two_sms([ld(101, lanes(A)), use(101)], [alu(dst=(1,))]), "ata", **slow))
    tr = two_sms([ld(101, lanes(A)), use(101)], chain((int(m) + 120) // 4) + [ld(102, lanes(A)), use(102)])
    r = run(tr, "ata", **slow, **{"l1d.power": "decay", "decay.interval": 200})
    assert (r["l1d_remote_fallbacks"], r["l1d_remote_hits"], r["l1d_remote_reads"]) == (1, 0, 0)
    assert r["l1d_decay_lines"] == 1 and r["l2_read_accesses"] == 2
    r = run(tr, "ata", **slow, **{"l1d.power": "decay", "decay.interval": 100000})
    assert (r["l1d_remote_fallbacks"], r["l1d_remote_hits"], r["l1d_decay_lines"]) == (0, 1, 0)


@pytest.mark.parametrize("mode", ["ata", "remote"])
def test_a_remote_read_wakes_a_drowsy_line_and_waits_for_it(mode):
    # Drowsy L1Ds (window 0): SM 0's copy of A is drowsy long before SM 1's read. Tags never sleep, so
    # the remote tag check finds it; the remote data read wakes it and waits the wake-up, like a local hit.
    lat = {}
    for wake in (0, 2):
        r = simulate(BASE.replace(**{"l1d.sharing": mode, "l1d.power": "drowsy", "drowsy.wakeup_cycles": wake}),
                     SAME_LINE, detail=True)
        assert r["l1d_remote_hits"] == 1 and r["l2_read_accesses"] == 1
        # wake-ups: both fills, then SM 0's line for the remote read and SM 1's for its local hit
        assert (r["l1d_drowsy_fill_wakeups"], r["l1d_drowsy_access_wakeups"]) == (2, 2)
        assert r["l1d_drowsy_wait_cycles"] == 2 * wake
        # SM 0's line: ON the cycle of its fill, then from the remote read until one cycle after its data
        assert sm0_line_a(r) == [2 + wake, r["cycles"] - 2 - wake, 0]
        lat[wake] = latency_sum(r)
    assert lat[2] - lat[0] == 2 * 2  # the remote read's wake-up and SM 1's local hit's


def test_the_replication_sample_applies_no_decay_in_the_other_l1ds():
    # Private L1Ds, a cluster of 2 or one SM each. SM 0 reads A (or loads and stores local line L,
    # dirty); A decays 100 cycles after its fill. About 400 cycles later SM 1 fills B, in the same
    # set of its own L1D. The replication sample at that fill looks at SM 0's set: it must change
    # nothing there (no invalidation, no writeback of the dirty line, whose decay is then only
    # found at the end of the run, when writebacks are not simulated), so the cluster size changes
    # nothing but the sample.
    L = A + 64 * 128  # same set as A and B
    reads = two_sms([ld(101, lanes(A)), use(101)], chain(100) + [ld(102, lanes(B)), use(102)] + chain(500))
    local = two_sms([ld(101, lanes(L), opcode="LDL"), use(101), st(lanes(L), opcode="STL", src=(101,))],
                    chain(150) + [ld(102, lanes(B)), use(102)] + chain(500))
    for tr, dirty in ((reads, 0), (local, 1)):
        runs = [run(tr, "private", **{"l1d.cluster_size": size, "l1d.power": "decay", "decay.interval": 100})
                for size in (1, 2)]
        for r in runs:
            assert (r["l1d_decay_lines"], r["l1d_decay_dirty_lines"]) == (2, dirty)
            assert (r["l1d_invalidations"], r["l1d_writebacks"], r["l2_write_accesses"]) == (0, 0, 0)
        assert runs[0].metrics == runs[1].metrics


@pytest.mark.parametrize("interval,copies", [(100, 1.0), (10000, 1.5)])
def test_the_replication_sample_sees_a_line_past_its_decay_cycle_as_gone(interval, copies):
    # SAME_LINE, private: SM 1 fills A about 600 cycles after SM 0 did. With a 100-cycle interval SM 0's
    # copy decayed long before (its set was not looked up since, so it is still there, switched off
    # only lazily): SM 1's fill copies nothing. A longer interval keeps it: SM 1's fill replicates it.
    r = run(SAME_LINE, "private", **{"l1d.power": "decay", "decay.interval": interval})
    assert r["l1d_global_fills"] == 2 and r["l1d_replication"] == copies


@pytest.mark.parametrize("size", [2, 10])
@pytest.mark.parametrize("power", [{"l1d.power": "decay", "decay.interval": 200},
                                   {"l1d.power": "decay", "decay.interval": 50, "l1d.allocate": "fill"},
                                   {"l2.power": "decay", "decay.interval": 200}])
def test_private_l1ds_with_decay_do_not_depend_on_the_cluster_size(size, power):
    # The replication sample is only measured: with private L1Ds only it may differ between cluster sizes.
    trace = random_trace(2)
    cfg = presets.get("ata").replace(**power)
    one = simulate(cfg.replace(**{"l1d.cluster_size": 1}), trace).metrics
    r = simulate(cfg.replace(**{"l1d.cluster_size": size}), trace).metrics
    differ = {k for k in one if one[k] != r[k] and not (one[k] != one[k] and r[k] != r[k])}
    assert differ <= {"l1d_replication", "l1d_replicated_fill_fraction"}, {k: (one[k], r[k]) for k in differ}


def test_shared_memory_local_and_atomics_behave_as_private():
    prog = [ld(101, lanes(0x100), opcode="LDS"), ld(102, lanes(0x40000), opcode="LDL"), use(102),
            ld(103, lanes(A), opcode="ATOMG.E.ADD"), use(103), ld(104, lanes(0x40000), opcode="LDL"), use(104)]
    tr = two_sms(prog, prog)
    base = run(tr, "private").metrics
    for mode in MODES[1:]:
        r = run(tr, mode)
        assert r["cluster_flits"] == 0 and r["l1d_remote_hits"] == 0
        for key in ("cycles", "l1d_accesses", "l1d_hits", "l2_accesses", "l1_latency_avg"):
            assert r[key] == base[key], (mode, key)


# ---- invariants ----------------------------------------------------------------------------

def random_trace(seed=0, ctas=12, warps=4, lines=64):
    """Warps reading, and sometimes writing, lines of a small shared pool (plenty of inter-core
    reuse and of writes racing with remote reads) plus private local memory."""
    rng = np.random.default_rng(seed)
    programs = []
    for c in range(ctas):
        cta = []
        for w in range(warps):
            prog = []
            for i in range(40):
                base = 0x100000 + int(rng.integers(0, lines)) * 128
                kind = int(rng.integers(0, 10))
                if kind < 6:
                    prog.append(ld(1 + i % 16, lanes(base, n=int(rng.integers(1, 33)))))
                elif kind < 7:
                    prog.append(st(lanes(base), src=(1 + (i - 1) % 16,)))
                elif kind < 8:
                    prog.append(ld(20, lanes(0x800000 + 128 * (c * warps + w)), opcode="LDL"))
                else:
                    prog.append(alu(dst=(30,), src=(1 + i % 16,)))
            cta.append(prog)
        programs.append(cta)
    return build([KernelSpec(programs, name="share1"), KernelSpec(programs[: ctas // 2], name="share2")])


@pytest.mark.parametrize("acks", [False, True])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("preset,size", [("ata", 10), ("ata", 3), ("gtx480", 5)])
def test_every_organisation_conserves_requests(mode, preset, size, acks):
    trace = random_trace(1)
    cfg = presets.get(preset).replace(**{"l1d.sharing": mode, "l1d.cluster_size": size, "core.store_acks": acks})
    r = simulate(cfg, trace, detail=True)
    s = trace.summary()
    assert r["warp_insts"] == s["warp_insts"] and r["thread_insts"] == s["thread_insts"]
    assert r.raw["requests_live"] == 0
    stores = sum(int(np.count_nonzero((k.op_class == 8) & (k.width > 0) & (k.space != 3) & (k.mask > 0)))
                 for k in trace.kernels)
    assert r["stores_acked"] == (stores if acks else 0)
    assert r["l1d_hits"] + r["l1d_misses"] == r["l1d_accesses"]
    # a remote hit is a fetch served by another L1D, and every fetch belongs to an access that missed
    assert r["l1d_remote_hits"] <= r["l1d_misses"]
    # every load's L1D access completes, no later than its answer
    assert r.raw["l1_access_loads"] == r["loads"] > 0
    assert 0 < r["avg_l1_access_latency"] <= r["avg_load_latency"]
    assert np.all(r.line_residency("l1d").sum(axis=1) == r["cycles"])
    assert 0 < r["l1d_miss_queue_max"] <= cfg["l1d.miss_queue"]
    if mode == "decoupled":
        assert r["l1d_replication"] == 1.0
    if mode == "private":
        assert r["cluster_flits"] == 0
    else:
        assert r["cluster_flits"] > 0
    if mode == "ata":
        assert r["l1d_remote_reads"] == r["l1d_remote_hits"]


@pytest.mark.parametrize("mode", MODES[1:])
def test_a_cluster_of_one_is_private(mode):
    trace = random_trace(2)
    cfg = presets.get("ata").replace(**{"l1d.cluster_size": 1})
    p = simulate(cfg, trace).metrics
    r = simulate(cfg.replace(**{"l1d.sharing": mode}), trace).metrics
    assert r == p


@pytest.mark.parametrize("mode", MODES)
def test_sharing_is_deterministic(mode):
    trace = random_trace(3)
    cfg = presets.get("ata").replace(**{"l1d.sharing": mode, "l2.policy": "random"})
    a, b = simulate(cfg, trace, seed=4), simulate(cfg, trace, seed=4)
    assert a.metrics == b.metrics


def test_sharing_composes_with_allocate_on_fill():
    trace = random_trace(4)
    for mode in MODES:
        r = simulate(presets.get("ata").replace(**{"l1d.sharing": mode, "l1d.allocate": "fill"}), trace)
        assert r.raw["requests_live"] == 0 and r["l1d_fails_line_alloc"] == 0


def test_decoupled_home_contention_serializes_hits():
    # Ten SMs of a cluster read line A, then all read it again at once: private serves the
    # second round in ten L1Ds at once; decoupled serves it in A's one home, which takes one
    # request a cycle and whose reply port sends one 5-flit answer after another.
    cfg = presets.get("gtx480").replace(**{"core.sms": 10, "l1d.cluster_size": 10, "l1i.size_kb": 0})
    # The chain does not wait for the first read, so every SM's second read issues in the same cycle.
    first = [ld(150, lanes(A))]
    once = build([KernelSpec([[first + [use(150)]] for _ in range(10)])])
    twice = build([KernelSpec([[first + chain(150) + [ld(151, lanes(A)), use(151), use(150)]] for _ in range(10)])])
    second = {}
    for mode in ("private", "decoupled"):
        c = cfg.replace(**{"l1d.sharing": mode})
        r = simulate(c, twice)
        # (decoupled: the home's MSHR entry holds 8 of the first round; the other two retry and hit)
        assert r["l1d_hits"] == (10 if mode == "private" else 12)
        second[mode] = latency_sum(r) - latency_sum(simulate(c, once))
    assert second["private"] == 10 * (BASE["l1d.hit_latency"] + 1)
    # Nine answers cross back (each request and answer crossing: 1 + 4 and 5 + 4 cycles), and the
    # k-th answer waits 5 k cycles for the reply port less the k cycles its request arrived later.
    assert second["decoupled"] - second["private"] >= 9 * (1 + LAT + DATA_FLITS + LAT) + sum(4 * k for k in range(9))


def test_bad_sharing_configuration():
    with pytest.raises(ValueError, match=r"l1d.sharing must be one of private, remote, decoupled, ata, got 'shared'"):
        BASE.replace(**{"l1d.sharing": "shared"})
    with pytest.raises(ValueError, match=r"core.sms \(30\) must be a multiple of l1d.cluster_size \(4\)"):
        simulate(presets.get("ata").replace(**{"l1d.cluster_size": 4}), SAME_LINE)


# ---- energy of the added structures ---------------------------------------------------------

def test_sharing_energy_overheads():
    from gpucachex.techniques import sharing

    trace = random_trace(5)
    cfg = presets.get("ata")
    runs = {m: simulate(cfg.replace(**{"l1d.sharing": m}), trace) for m in MODES}
    assert runs["private"]["l1d_overhead_energy_j"] == 0.0
    for mode in MODES[1:]:
        r = runs[mode]
        parts = sharing.overhead_parts(r.metrics, r.config, energy.EnergyParams())
        assert r["l1d_overhead_energy_j"] == approx_j(sum(parts.values()))
        # crossbar flits times the energy of a flit
        flit_j = cfg["icnt.flit_bytes"] * 8 * sharing.XBAR_PJ_PER_BIT_MM * sharing.XBAR_MM * 1e-12
        assert parts["crossbar_dynamic_j"] == approx_j(r["cluster_flits"] * flit_j)
        # the paper's 5.55 mW (30 SMs in 3 clusters of 10) over the run
        leak_w = sharing.PAPER_LEAKAGE_MW * 1e-3 * (sharing.XBAR_AREA_MM2 + (mode == "ata") * sharing.CMP_AREA_MM2) / (
            sharing.XBAR_AREA_MM2 + sharing.CMP_AREA_MM2)
        assert parts["crossbar_static_j"] + parts.get("comparator_static_j", 0.0) == approx_j(
            leak_w * r["seconds"])
    assert runs["ata"]["l1d_remote_tag_lookups"] > 0
    assert sharing.overhead_parts(runs["ata"].metrics, runs["ata"].config, energy.EnergyParams())[
        "remote_tag_dynamic_j"] > 0
    # no crossbar in a cluster of one
    one = cfg.replace(**{"l1d.sharing": "ata", "l1d.cluster_size": 1})
    r = simulate(one, trace)
    assert r["l1d_overhead_energy_j"] == 0.0

    # At 32 nm the 45 nm numbers scale as the L1D's own terms do: wire energy as its data reads,
    # leakage as its data array's; numbers given in `extra` are the node's, unscaled.
    r = runs["ata"]
    e45, e32 = energy.compute(r), energy.compute(r, {"node_nm": 32})
    p45 = sharing.overhead_parts(r.metrics, r.config, energy.EnergyParams())
    p32 = sharing.overhead_parts(r.metrics, r.config, energy.EnergyParams(node_nm=32))
    read_ratio = e32["l1d_data_read_energy_j"] / e45["l1d_data_read_energy_j"]
    leak_ratio = e32["l1d_static_on_energy_j"] / e45["l1d_static_on_energy_j"]
    assert 0.5 < leak_ratio < read_ratio < 0.6
    assert p32["crossbar_dynamic_j"] == approx_j(read_ratio * p45["crossbar_dynamic_j"])
    for part in ("crossbar_static_j", "comparator_static_j"):
        assert p32[part] == pytest.approx(leak_ratio * p45[part]), part
    assert p32["remote_tag_dynamic_j"] == approx_j(
        p45["remote_tag_dynamic_j"] * e32["l1d_tag_energy_j"] / e45["l1d_tag_energy_j"])
    given = {"sharing.xbar_pj_per_bit_mm": sharing.XBAR_PJ_PER_BIT_MM, "sharing.leakage_mw": sharing.PAPER_LEAKAGE_MW}
    at32_given = sharing.overhead_parts(r.metrics, r.config, energy.EnergyParams(node_nm=32, extra=given))
    for part in ("crossbar_dynamic_j", "crossbar_static_j", "comparator_static_j"):
        assert at32_given[part] == pytest.approx(p45[part]), part



def test_sharing_overheads_by_hand_for_clusters_of_five():
    # The paper's 5.55 mW leak in 3 clusters of 10 SMs, split by area: the crossbars 1.02 / 1.04 of
    # it, the comparators 0.02 / 1.04. Per cluster of 5, a crossbar has (5/10)^2 of the crosspoints
    # and the comparators 5x4 / (10x9) of the pairs of L1Ds, and 30 SMs make 6 clusters.
    from gpucachex.techniques import sharing

    cfg = presets.get("ata", **{"l1d.sharing": "ata", "l1d.cluster_size": 5})
    m = {"seconds": 2e-3, "cluster_flits": 1000, "l1d_remote_tag_lookups": 300}
    parts = sharing.overhead_parts(m, cfg, energy.EnergyParams())
    per_cluster_mw = 5.55 / 3
    xbar_w = per_cluster_mw * 1.02 / 1.04 * 0.25 * 6 * 1e-3
    cmp_w = per_cluster_mw * 0.02 / 1.04 * (20 / 90) * 6 * 1e-3
    assert parts["crossbar_static_j"] == pytest.approx(xbar_w * 2e-3, rel=1e-9, abs=0)
    assert parts["comparator_static_j"] == pytest.approx(cmp_w * 2e-3, rel=1e-9, abs=0)
    # a 40-byte flit: 320 bits over 2 mm at 310 / 2560 pJ per bit and mm
    assert parts["crossbar_dynamic_j"] == pytest.approx(1000 * 320 * 2 * 310 / 2560 * 1e-12, rel=1e-9, abs=0)
    # the 64 KB 64-way L1D uses the 64 KB 16-way entry with its tag energy x 4: 5.530 x 4 pJ a lookup
    assert parts["remote_tag_dynamic_j"] == pytest.approx(300 * 5.530 * 4 * 1e-12, rel=1e-9, abs=0)
    # an L1D entry given in the energy parameters prices the remote lookups, as it does the local ones
    mine = energy.CacheEnergy(2.0, 100.0, 200.0, 0.1, 0.02)
    parts = sharing.overhead_parts(m, cfg, energy.EnergyParams(l1d=mine))
    assert parts["remote_tag_dynamic_j"] == pytest.approx(300 * 2.0 * 1e-12, rel=1e-9, abs=0)

# ---- the experiment and the notebook -------------------------------------------------------

def _frame(rows):
    import pandas as pd

    # the L1 access latency is a fifth of the full latency, plus 1 for decoupled-sharing's rows
    return pd.DataFrame([dict(zip(("workload", "l1d.sharing", "ipc", "l1_latency_avg", "l1d_replication"), r),
                              avg_l1_access_latency=r[3] / 5 + (r[1] == "decoupled"),
                              seed=0, l1_hit_rate=0.5, l1d_remote_hits=0, l2_accesses=10, cluster_flits=0)
                         for r in rows])


def test_experiment_classifies_by_measured_replication_and_averages_ratios():
    from gpucachex.experiments import ata as exp

    frame = _frame([
        ("hi", "private", 100, 50, 2.0), ("hi", "remote", 90, 60, 2.0), ("hi", "decoupled", 80, 100, 1.0),
        ("hi", "ata", 120, 55, 2.0),
        ("lo", "private", 100, 50, 1.2), ("lo", "remote", 90, 60, 1.2), ("lo", "decoupled", 50, 150, 1.0),
        ("lo", "ata", 100, 50, 1.2),
    ])
    assert exp.locality_classes(frame).to_dict() == {"hi": "high", "lo": "low"}
    # 1.5 copies of a line at its fill is high locality already
    edge = _frame([("edge", "private", 100, 50, 1.5), ("edge", "ata", 100, 50, 1.5)])
    assert exp.locality_classes(edge).to_dict() == {"edge": "high"}
    summ = exp.summary(frame).set_index("workload")
    assert summ.loc["hi", "ipc_ata"] == pytest.approx(1.2) and summ.loc["lo", "l1_latency_decoupled"] == 3.0
    cmp = exp.paper_comparison(summ.reset_index()).set_index("quantity")["ours"]
    assert cmp["ata_ipc_vs_private_high"] == pytest.approx(0.2)
    assert cmp["ata_ipc_vs_decoupled_low"] == pytest.approx(1.0)           # 1.0 / 0.5
    assert cmp["decoupled_l1_latency_vs_private"] == pytest.approx(1.5)    # mean of 2 and 3, minus 1
    assert cmp["ata_l1_latency_vs_private"] == pytest.approx(0.05)         # mean of 1.1 and 1.0
    assert cmp["decoupled_l1_latency_vs_private_max"] == pytest.approx(2.0)
    # the paper's measure, from avg_l1_access_latency: decoupled 21/10 and 31/10, ATA 11/10 and 10/10
    assert summ.loc["lo", "l1_access_decoupled"] == pytest.approx(3.1)
    assert cmp["decoupled_l1_access_latency_vs_private"] == pytest.approx(1.6)
    assert cmp["ata_l1_access_latency_vs_private"] == pytest.approx(0.05)
    assert cmp["decoupled_l1_access_latency_vs_private_max"] == pytest.approx(2.1)


def test_experiment_averages_ratios_over_seeds_and_keeps_their_spread():
    import pandas as pd

    from gpucachex.experiments import ata as exp

    rows = [("w", "private", 100, 50, 2.0), ("w", "remote", 90, 60, 2.0), ("w", "decoupled", 80, 100, 1.0),
            ("w", "ata", 110, 55, 2.0)]
    seed1 = [(w, m, {"private": 100, "remote": 90, "decoupled": 100, "ata": 95}[m], lat, rep)
             for w, m, _, lat, rep in rows]
    frame = pd.concat([_frame(rows), _frame(seed1).assign(seed=1)], ignore_index=True)
    summ = exp.summary(frame).set_index("workload")
    assert summ.loc["w", "seeds"] == 2
    # per seed: ATA 1.10 and 0.95 of private; ATA over decoupled 110/80 and 95/100
    assert summ.loc["w", "ipc_ata"] == pytest.approx(1.025)
    assert (summ.loc["w", "ipc_ata_min"], summ.loc["w", "ipc_ata_max"]) == pytest.approx((0.95, 1.10))
    assert summ.loc["w", "ipc_ata_vs_decoupled"] == pytest.approx((110 / 80 + 95 / 100) / 2)
    assert summ.loc["w", "ipc_ata_vs_decoupled_min"] == pytest.approx(0.95)
    assert summ.loc["w", "ipc_private_min"] == summ.loc["w", "ipc_private_max"] == 1.0
    # Each row is normalised to the private run of its own seed (the bars' spread over seeds).
    norm = exp.normalized(frame, "ipc").set_index(["seed", "l1d.sharing"])["ipc_norm"]
    assert len(norm) == len(frame)
    assert (norm[0, "ata"], norm[1, "ata"], norm[1, "decoupled"]) == pytest.approx((1.10, 0.95, 1.0))


@pytest.mark.slow
def test_experiment_runs_end_to_end(tmp_path, monkeypatch):
    import tomllib
    from pathlib import Path

    from gpucachex import experiments

    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("ata_suite", "ata_cluster_size", "ata_bandwidth"):
        text = (Path(experiments.__file__).resolve().parents[2] / "experiments" / f"{name}.toml").read_text()
        spec = tomllib.loads(text)
        assert spec["preset"] == "ata" and "quick" in spec
        (specs / f"{name}.toml").write_text(text.replace('size = "small"', 'size = "tiny"'))
    monkeypatch.setenv("GPUCACHEX_EXPERIMENTS", str(specs))
    ctx = experiments.Context(tmp_path / "out", quick=True, jobs=2)
    experiments.get("ata").run(ctx)
    names = {o.name for o in ctx.outputs}
    assert {"ata_fig3_l1_latency", "ata_fig8_ipc", "ata_fig10_l1_latency", "ata_fig10b_l1_access_latency",
            "ata_cluster_size", "ata_bandwidth",
            "ata_paper_comparison", "ata_summary"} <= names
    assert all(Path(p).is_file() for o in ctx.outputs for p in o.paths)


@pytest.mark.slow
def test_notebook_runs(tmp_path, monkeypatch):
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parents[1] / "notebooks" / "ata.ipynb"
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("GPUCACHEX_NOTEBOOK_SIZE", "tiny")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()


def test_experiment_figures_keep_the_suites_workload_order():
    """Figs. 3, 8 and 10 show the workloads in the suite's order, in every figure alike: sorting the rows by
    organisation must keep the order of the rows within one (a quicksort does not beyond 16 rows)."""
    import matplotlib.pyplot as plt

    from gpucachex.experiments import ata as exp

    names = [f"w{i:02d}" for i in range(12)]
    rows = []
    for seed in range(3):
        for mode in exp.MODES:
            for i, w in enumerate(names):
                rep = 2.0 if i < 6 else 1.0
                rows.append((w, mode, 100 + i + 10 * (mode == "ata"), 50 + i, rep, seed))
    frame = _frame([r[:5] for r in rows]).assign(seed=[r[5] for r in rows])
    for fig in (exp.figure3(frame), exp.figure8(frame), exp.figure10(frame), exp.figure10_l1_access(frame)):
        ticks = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]
        assert ticks == [names[:6] + ["mean"], names[6:] + ["mean"]], [t.get_text() for t in fig.texts]
        plt.close(fig)
