"""The timing model on hand-built kernels: known answers for latencies, the scoreboard, each
reservation-fail reason, shared-memory bank conflicts and barriers; conservation; determinism; and
the checks a cache architect would make."""
import math
import re
import signal
import threading

import numpy as np
import pytest

from gpucachex import _core, presets, simulate
from gpucachex.sim import Result
from gpucachex.trace import Trace
from tracebuild import KernelSpec, alu, build, chain, ld, lanes, st, Inst

# One SM, a perfect instruction cache and round numbers, so cycle counts can be worked by hand.
BASE = presets.get("gtx480").replace(**{
    "core.sms": 1, "l1i.size_kb": 0, "core.alu_latency": 4, "core.alu_interval": 1, "core.schedulers": 1,
    "l2.partitions": 6, "dram.channels": 6})


def one_warp(program, **spec):
    return build([KernelSpec([[program]], **spec)])


def run(trace, cfg=BASE, **kw) -> Result:
    return simulate(cfg, trace, **kw)


# ---- known answers ---------------------------------------------------------------------------

def test_independent_alu_instructions_issue_one_per_cycle():
    # The CTA is dispatched at the end of cycle 0; ten independent ALU instructions issue in
    # cycles 1..10; the kernel ends after the last issue: 11 cycles.
    r = run(one_warp([alu(dst=(i,)) for i in range(10)]))
    assert r["cycles"] == 11
    assert r["warp_insts"] == 10 and r["thread_insts"] == 320


def test_dependent_alu_instructions_wait_for_the_latency():
    # Each instruction reads the previous one's result: issues at 1, 5, 9, ... 37 (latency 4).
    prog = [alu(dst=(1,))] + [alu(dst=(i + 1,), src=(i,)) for i in range(1, 10)]
    r = run(one_warp(prog))
    assert r["cycles"] == 38
    # With latency 10 the chain takes 1 + 9 * 10 cycles of issue.
    r = run(one_warp(prog), BASE.replace(**{"core.alu_latency": 10}))
    assert r["cycles"] == 92


def test_a_branch_holds_its_warp_for_the_branch_latency():
    # ALU at 1, BRA at 2, the next ALU waits for the branch until 2 + latency, and so on: the EXIT
    # issues at 5 + 3 x latency and the warp is done exit_latency (1) cycle later.
    prog = [alu(dst=(1,)), Inst("BRA"), alu(dst=(2,)), Inst("BRA"), alu(dst=(3,)), Inst("BRA"), alu(dst=(4,)),
            Inst("EXIT")]
    for lat in (1, 4, 40):
        r = run(one_warp(prog), BASE.replace(**{"core.branch_latency": lat}))
        assert r["cycles"] == 5 + 3 * lat + 1 + 1
    # Another warp of the same scheduler issues while the branch holds the first one.
    other = [alu(dst=(i,)) for i in range(6)]
    r = run(build([KernelSpec([[[Inst("BRA"), alu(dst=(1,))], other]])]), BASE.replace(**{"core.branch_latency": 40}))
    assert r["cycles"] == 1 + 40 + 1


def test_a_warp_is_done_exit_latency_cycles_after_its_exit_issues():
    prog = [alu(dst=(1,)), Inst("EXIT")]
    base = run(one_warp(prog), BASE.replace(**{"core.exit_latency": 1}))["cycles"]
    assert base == 4  # ALU at 1, EXIT at 2, done at 3
    assert run(one_warp(prog), BASE.replace(**{"core.exit_latency": 100}))["cycles"] == base + 99
    # The CTA's slot is free only then: with one resident CTA, the second starts after the first's exit.
    two = build([KernelSpec([[prog], [prog]])])
    one_slot = BASE.replace(**{"core.max_ctas": 1})
    assert run(two, one_slot.replace(**{"core.exit_latency": 100}))["cycles"] == run(two, one_slot)["cycles"] + 2 * 99
    # A warp without an EXIT is done when its last instruction issues.
    assert run(one_warp([alu(dst=(1,))]), BASE.replace(**{"core.exit_latency": 100}))["cycles"] == 2


def test_initiation_interval_serializes_a_unit():
    # SFU instructions with an initiation interval of 8 issue at 1, 9, 17, 25.
    prog = [alu(dst=(i,), opcode="MUFU.RCP") for i in range(4)]
    r = run(one_warp(prog), BASE.replace(**{"core.sfu_interval": 8}))
    assert r["cycles"] == 26


def test_a_load_blocks_its_user_until_the_data_returns():
    prog = [ld(1, lanes(0x10000)), alu(dst=(2,), src=(1,))]
    r = run(one_warp(prog))
    assert r["loads"] == 1
    lat = r["avg_load_latency"]
    # L1 miss, L2 miss, DRAM: well over the L2 hit latency, and the user issues after it.
    assert lat > BASE["l2.latency"] + BASE["dram.latency"]
    assert r["cycles"] >= lat + 2
    # A second warp reading the same line later merges or hits: never slower than the first.
    r2 = run(one_warp([ld(1, lanes(0x10000)), alu(dst=(2,), src=(1,)), ld(3, lanes(0x10000)),
                       alu(dst=(4,), src=(3,))]))
    assert r2["l1d_hits"] == 1 and r2["l1d_misses"] == 1


def test_coalescing_counts_lines_and_words():
    # 32 lanes x 4 B contiguous = one 128 B line; a stride of 128 B = 32 lines; 8 B accesses
    # straddling two lines = two requests.
    assert run(one_warp([ld(1, lanes(0x20000))]))["l1d_accesses"] == 1
    assert run(one_warp([ld(1, lanes(0x20000, stride=128))]))["l1d_accesses"] == 32
    assert run(one_warp([ld(1, lanes(0x20000 + 64, stride=8), width=8)]))["l1d_accesses"] == 3
    # Partial masks: 4 active lanes reading one line are one access touching 4 words.
    r = run(one_warp([ld(1, lanes(0x20000, n=4))]))
    assert r["l1d_accesses"] == 1 and r["l1d_words_touched"] == 4


def test_shared_memory_bank_conflicts_serialize():
    free = [ld(1, lanes(0x0), opcode="LDS") for _ in range(8)]           # 32 banks, 32 words: no conflict
    conflict = [ld(1, lanes(0x0, stride=128), opcode="LDS") for _ in range(8)]  # every lane in bank 0
    a, b = run(one_warp(free)), run(one_warp(conflict))
    assert b["cycles"] - a["cycles"] >= 8 * 31 - 8
    assert a["l1d_accesses"] == 0  # shared memory does not touch the L1D
    # Lanes reading the same word are a broadcast, not a conflict.
    same = [ld(1, [0x40] * 32, opcode="LDS") for _ in range(8)]
    assert run(one_warp(same))["cycles"] == a["cycles"]


@pytest.mark.parametrize("queue", [2, 8])
def test_queued_shared_memory_instructions_take_their_bank_cycles_one_after_another(queue):
    # Eight independent LDS with every lane in bank 0 (32 cycles each), then their uses: the first
    # holds the banks from 1 to 33, the eighth from 225 to 257, and its result is ready 24 cycles
    # later, at 281, however many of them the LD/ST unit can hold at once.
    conflict = [ld(1 + i, lanes(0x0, stride=128), opcode="LDS") for i in range(8)]
    uses = [alu(dst=(50 + i,), src=(1 + i,)) for i in range(8)]
    r = run(one_warp(conflict + uses), BASE.replace(**{"core.ldst_queue": queue}))
    assert r["cycles"] == 1 + 8 * 32 + 24 + 1


def test_a_shared_memory_instruction_behind_a_global_one_starts_when_it_reaches_the_head():
    # A store of 32 lines hands its requests over at 2..33; the LDS behind it reads the banks at 34,
    # its result is ready at 34 + 1 + 24 and its use issues then.
    cfg = BASE.replace(**{"core.store_acks": False})
    prog = [st(lanes(0x100000, stride=128)), ld(2, lanes(0x0), opcode="LDS"), alu(dst=(52,), src=(2,))]
    assert run(one_warp(prog), cfg)["cycles"] == 34 + 1 + 24 + 1


def test_barrier_waits_for_every_warp_of_the_cta():
    slow = [alu(dst=(1,))] + [alu(dst=(i + 1,), src=(i,)) for i in range(1, 20)] + [Inst("BAR.SYNC")]
    fast = [Inst("BAR.SYNC"), alu(dst=(1,))]
    with_bar = run(build([KernelSpec([[slow, fast]])]))
    # Without the barrier the fast warp's work is done at once; with it the kernel still ends after
    # the slow chain (1 + 19 * 4 cycles) and the fast warp's last instruction comes after it.
    assert with_bar["cycles"] >= 1 + 19 * 4 + 2


@pytest.mark.parametrize("acks", [True, False])
def test_a_warp_that_has_issued_its_exit_no_longer_holds_the_barrier(acks):
    # Warp 0 stores at 1 and exits at 2; warp 1 reaches the barrier at 3 and passes at once: warp 0
    # is out of the barrier set though its store's acknowledgement is still on its way (Accel-Sim's
    # barrier_set_t::warp_exit). Warp 1's chain issues at 4, 8, ..., 160, its EXIT at 161, done at 162.
    B, X = Inst("BAR.SYNC"), Inst("EXIT")
    w1 = [B] + chain(40) + [X]
    cfg = BASE.replace(**{"core.store_acks": acks})
    assert run(build([KernelSpec([[[st(lanes(0x100000)), X], w1]])]), cfg)["cycles"] == 163
    # A load warp 0 never uses still holds the CTA, not the barrier: the kernel ends when it is answered.
    r = run(build([KernelSpec([[[ld(9, lanes(0x100000)), X], w1]])]), cfg)
    assert r["avg_load_latency"] > 163 and r["cycles"] == 2 + r["avg_load_latency"]


def test_write_evict_for_global_stores():
    addr = lanes(0x30000)
    prog = [ld(1, addr), alu(dst=(2,), src=(1,)), st(addr, src=(2,)), ld(3, addr), alu(dst=(4,), src=(3,))]
    r = run(one_warp(prog))
    # load miss, store hits and evicts the line, second load misses again
    assert (r["l1d_hits"], r["l1d_misses"], r["l1d_invalidations"]) == (1, 2, 1)
    assert r["l2_write_accesses"] == 1


def test_local_memory_is_write_back():
    addr = lanes(0x40000)
    prog = [ld(1, addr, opcode="LDL"), alu(dst=(2,), src=(1,)), st(addr, opcode="STL", src=(2,)),
            ld(3, addr, opcode="LDL"), alu(dst=(4,), src=(3,))]
    r = run(one_warp(prog))
    assert r["l1d_hits"] == 2 and r["l1d_misses"] == 1  # the store and the second load hit
    assert r["l2_write_accesses"] == 0  # the dirty line stays in the L1D


def test_atomics_bypass_the_l1d():
    prog = [ld(1, lanes(0x50000), opcode="ATOMG.E.ADD"), alu(dst=(2,), src=(1,))]
    r = run(one_warp(prog))
    assert r["l1d_accesses"] == 0 and r["l2_read_accesses"] == 1 and r["loads"] == 1


@pytest.mark.parametrize("addrs, requests", [
    (lanes(0x50000), 1),                                   # distinct words of one line: one request
    ([0x50000] * 32, 32),                                  # one word: a request per lane
    ([0x50000 + 4 * (l % 4) for l in range(32)], 8),       # 4 bins, 8 lanes each: 8 requests of 4 words
    (lanes(0x50000, n=16) + lanes(0x50000, n=16), 2),      # two lanes per word: 2 requests of 16 words
    ([0x50000 + 128 * (l % 2) for l in range(32)], 32),    # one word in each of two lines: 16 per line
])
def test_atomic_lanes_on_the_same_word_get_their_own_requests_as_in_gpgpusim(addrs, requests):
    # memory_coalescing_arch_atomic: a lane joins the first request for its line that does not touch
    # its bytes, so lanes updating the same word are serialised at the L2.
    prog = [ld(1, addrs, opcode="ATOMG.E.ADD"), alu(dst=(2,), src=(1,))]
    r = run(one_warp(prog))
    assert r["requests"] == requests and r["l2_accesses"] == requests and r["loads"] == 1
    # A load of the same addresses is one request per line.
    assert run(one_warp([ld(1, addrs), alu(dst=(2,), src=(1,))]))["requests"] == len({a >> 7 for a in addrs})


def test_cache_global_off_sends_global_loads_to_l2():
    prog = [ld(1, lanes(0x60000)), ld(2, lanes(0x60000, stride=-4 & 0xFFFFFFFF) if False else lanes(0x60000))]
    on = run(one_warp(prog))
    off = run(one_warp(prog), BASE.replace(**{"l1d.cache_global": False}))
    assert on["l1d_accesses"] == 2 and off["l1d_accesses"] == 0 and off["l2_accesses"] >= 2
    # .CG loads skip the L1D even when global loads are cached
    cg = run(one_warp([ld(1, lanes(0x60000), opcode="LDG.E.CG")]))
    assert cg["l1d_accesses"] == 0


@pytest.mark.parametrize("opcode, l1d_hits", [("LDG.E", 1), ("LDG.E.STRONG.SM", 1), ("LDG.E.STRONG.CTA", 1),
                                              ("LDG.E.STRONG.GPU", 0), ("LDG.E.STRONG.SYS", 0)])
def test_strong_loads_skip_the_l1d_only_at_gpu_and_system_scope(opcode, l1d_hits):
    # Two loads of one line: the second hits when the scope lets the L1D serve it.
    prog = [ld(1, lanes(0x60000), opcode=opcode), ld(2, lanes(0x60000), opcode=opcode, src=(1,))]
    r = run(one_warp(prog))
    assert r["l1d_hits"] == l1d_hits and r["l1d_accesses"] == 2 * l1d_hits and r["loads"] == 2


# ---- reservation fails, one reason at a time ------------------------------------------------

def many_lines(n, base=0x100000):
    return [ld(i % 200 + 1, lanes(base + 128 * 32 * i)) for i in range(n)]


def test_mshr_entry_fails():
    r = run(one_warp(many_lines(8)), BASE.replace(**{"l1d.mshr_entries": 2}))
    assert r["l1d_fails_mshr_entry"] > 0 and r["l1d_reservation_fails"] == r["l1d_fails_mshr_entry"]


def test_mshr_merge_fails():
    same = lanes(0x200000)
    warps = [[ld(1, same)] for _ in range(4)]
    r = run(build([KernelSpec([warps])]), BASE.replace(**{"l1d.mshr_merge": 1}))
    assert r["l1d_fails_mshr_merge"] > 0 and r["l1d_pending_hits"] == 0


def test_line_allocation_fails():
    # A direct-mapped single-line L1D: while one fetch is outstanding no other line can be placed.
    cfg = BASE.replace(**{"l1d.size_kb": 0.125, "l1d.ways": 1})
    r = run(one_warp(many_lines(4)), cfg)
    assert r["l1d_fails_line_alloc"] > 0


def test_miss_queue_fails():
    # All lines in L2 partition 0 (stride = interleave x partitions), which can fetch one line at a
    # time: its input buffer fills, the crossbar refuses, and the two-entry miss queue stays full.
    prog = [ld(1 + i, lanes(0x100000 + 256 * 6 * i)) for i in range(8)]
    cfg = BASE.replace(**{"l1d.miss_queue": 2, "icnt.buffer": 1, "l2.mshr_entries": 1})
    r = run(one_warp(prog), cfg)
    assert r["l1d_fails_miss_queue"] > 0


def test_failed_attempts_count_every_cycle_even_when_skipped():
    # One MSHR, eight misses: the LD/ST unit retries every cycle until each fetch returns, so the
    # fails are about 7 round trips long whether or not the model skips idle cycles.
    r = run(one_warp(many_lines(8)), BASE.replace(**{"l1d.mshr_entries": 1}))
    assert r["l1d_fails_mshr_entry"] >= 7 * BASE["l2.latency"]
    assert r["l1d_fails_mshr_entry"] < r["cycles"]


# ---- the L1D latency queue (l1d.latency_queue, GPGPU-Sim 4.0) ------------------------------------

@pytest.mark.parametrize("latency", [5, 20])
def test_latency_queue_makes_misses_spend_the_hit_latency_in_the_l1d(latency):
    miss = one_warp([ld(1, lanes(0x10000)), alu(dst=(2,), src=(1,))])
    then_hit = one_warp([ld(1, lanes(0x10000)), alu(dst=(2,), src=(1,)),
                         ld(3, lanes(0x10000)), alu(dst=(4,), src=(3,))])
    handover = BASE.replace(**{"l1d.hit_latency": latency})
    queued = handover.replace(**{"l1d.latency_queue": True})
    a, b = run(miss, handover), run(miss, queued)
    # the tags are checked after the hit latency, so the miss leaves for the L2 that much later
    assert b["avg_load_latency"] == a["avg_load_latency"] + latency
    assert (a["avg_l1_access_latency"], b["avg_l1_access_latency"]) == (1, 1 + latency)
    # a hit's data comes after the hit latency either way (plus the LD/ST unit's hand-over)
    c, d = run(then_hit, handover), run(then_hit, queued)
    for slow, fast in ((c, a), (d, b)):
        assert slow["avg_load_latency"] * 2 - fast["avg_load_latency"] == latency + 1
    assert (d["l1d_hits"], d["l1d_misses"]) == (c["l1d_hits"], c["l1d_misses"]) == (1, 1)


def test_latency_queue_holds_a_reservation_fail_at_its_head_and_counts_every_retry():
    # One MSHR, eight misses: as at hand-over, each miss after the first fails until the fetch
    # before it returns, now at the head of the pipeline, every cycle, skipped or not.
    cfg = BASE.replace(**{"l1d.mshr_entries": 1, "l1d.latency_queue": True})
    r = run(one_warp(many_lines(8)), cfg)
    assert r["l1d_fails_mshr_entry"] >= 7 * BASE["l2.latency"]
    assert r["l1d_fails_mshr_entry"] < r["cycles"]
    assert r["l1d_accesses"] == r["l1d_misses"] == 8 and r.raw["requests_live"] == 0


def test_a_full_latency_queue_stalls_the_ldst_unit_without_a_reservation_fail():
    # One MSHR, eight misses. Each later miss fails every cycle until the fetch before it returns,
    # at the head of the pipeline: with 2 slots the LD/ST unit waits for room behind it (a bank
    # conflict, not a reservation fail), with 8 it never waits. Only the head's retries count, as
    # many as at hand-over (if the LD/ST unit's waits counted, the 2-slot run would count about
    # twice as many).
    cfg = BASE.replace(**{"l1d.mshr_entries": 1})
    fails = {slots: run(one_warp(many_lines(8)), cfg.replace(**{"l1d.latency_queue": True, "l1d.hit_latency": slots}))
             ["l1d_fails_mshr_entry"] for slots in (2, 8)}
    handover = run(one_warp(many_lines(8)), cfg.replace(**{"l1d.hit_latency": 2}))["l1d_fails_mshr_entry"]
    assert fails[2] == fails[8] == handover > 0


def test_with_a_latency_queue_the_ldst_unit_hands_over_a_request_per_bank_a_cycle():
    # 32 lines read twice: the second read hits 32 times. At hand-over, or with one bank, one
    # request a cycle: the last hit is answered 32 + hit latency cycles after issue. With a latency
    # queue of 4 banks, as GPGPU-Sim 4.0, four a cycle: 8 + hit latency.
    lines32 = lanes(0x100000, stride=128)
    first = [ld(1, lines32), alu(dst=(2,), src=(1,))]
    again = first + [ld(3, lines32), alu(dst=(4,), src=(3,))]
    hit = BASE["l1d.hit_latency"]
    for queue, banks, expect in ((False, 1, 32 + hit), (False, 4, 32 + hit), (True, 1, 32 + hit), (True, 4, 8 + hit)):
        c = BASE.replace(**{"l1d.latency_queue": queue, "l1d.banks": banks, "l1d.mshr_entries": 64})
        a, b = run(one_warp(first), c), run(one_warp(again), c)
        assert b["l1d_hits"] == 32
        assert b["avg_load_latency"] * 2 - a["avg_load_latency"] == expect, (queue, banks)


def test_a_reservation_fail_holds_only_its_own_banks_pipeline():
    # A direct-mapped L1D of 128 sets in 2 banks. Z (line 1, bank 1) is read, then X and Y (lines 0
    # and 128: bank 0, both set 0), then Z again. Y cannot take X's line while X is fetched: a line-
    # allocation fail at the head of bank 0 until X's data is back. The second read of Z, in bank 1,
    # hits as soon as its pipeline time is up; with one bank it waits behind Y.
    Z, X, Y = 0x10080, 0x10000, 0x10000 + 128 * 128
    head = [ld(1, lanes(Z)), alu(dst=(2,), src=(1,)), ld(3, lanes(X)), ld(4, lanes(Y))]
    tail = [ld(5, lanes(Z)), alu(dst=(6,), src=(5,))]
    cfg = BASE.replace(**{"l1d.ways": 1, "l1d.latency_queue": True})
    z2 = {}
    for banks in (1, 2):
        c = cfg.replace(**{"l1d.banks": banks})
        with_z2, without = run(one_warp(head + tail), c), run(one_warp(head), c)
        assert with_z2["l1d_fails_line_alloc"] > 0
        z2[banks] = with_z2["avg_load_latency"] * 4 - without["avg_load_latency"] * 3
    assert z2[2] == BASE["l1d.hit_latency"] + 1
    assert z2[1] > BASE["l2.latency"]


# ---- store acknowledgements (core.store_acks) ------------------------------------------------------

ACKS = BASE.replace(**{"core.store_acks": True})
NO_ACKS = BASE.replace(**{"core.store_acks": False})


def test_stores_are_acknowledged_by_default_as_in_gpgpusim():
    assert BASE["core.store_acks"] is True
    assert all(presets.get(name)["core.store_acks"] is True for name in presets.names())


def test_a_store_holds_its_warp_until_the_l2_acknowledges_it():
    # One warp, one global store of a full line: without acknowledgements the warp ends when the
    # store has left; with them it ends when the acknowledgement arrives, and the run ends as long
    # after that as a one-load kernel's ends after its data.
    prog = [st(lanes(0x30000))]
    off, on = run(one_warp(prog), NO_ACKS), run(one_warp(prog), ACKS)
    load = run(one_warp([ld(1, lanes(0x30000))]), ACKS)
    assert off["stores_acked"] == 0 and on["stores_acked"] == 1
    lat = on["avg_store_ack_latency"]
    assert lat > BASE["l2.latency"]
    assert on["cycles"] == lat + (load["cycles"] - load["avg_load_latency"])
    assert on["cycles"] > off["cycles"] + BASE["l2.latency"]
    # the acknowledgement is a header: one flit back
    assert on["icnt_reply_flits"] - off["icnt_reply_flits"] == 1
    assert on.raw["requests_live"] == 0 and on["loads"] == 0


def test_an_acknowledgement_takes_a_load_hits_path_with_the_flits_swapped():
    # The store brings the line into the L2 (write-allocate); a later load of it (not cached in
    # the L1D) hits there. The store sends 5 flits and gets 1 back, the load sends 1 and gets 5:
    # the same path, the same flits, the same latency.
    line = lanes(0x30000)
    r = run(one_warp([st(line)] + chain(400) + [ld(1, line, opcode="LDG.E.CG"), alu(dst=(2,), src=(1,))]), ACKS)
    assert r["l2_hits"] == 1 and r["icnt_request_flits"] == r["icnt_reply_flits"] == 6
    assert r["avg_store_ack_latency"] == r["avg_load_latency"]


def test_a_store_that_stays_in_the_l1d_needs_no_acknowledgement():
    # Local memory is write-back: a store that hits its line stays in the L1D, nothing goes to the
    # L2, and the warp waits only for the LD/ST unit's cycle to reach the L1D (GPGPU-Sim waits
    # only for stores it sends below the L1D).
    addr = lanes(0x40000)
    prog = [ld(1, addr, opcode="LDL"), alu(dst=(2,), src=(1,)), st(addr, opcode="STL", src=(2,))]
    off, on = run(one_warp(prog), NO_ACKS), run(one_warp(prog), ACKS)
    assert on["l2_write_accesses"] == 0 and on["stores_acked"] == 1
    assert on["avg_store_ack_latency"] == 1 and on["cycles"] == off["cycles"]


def test_a_cta_leaves_only_after_its_stores_are_acknowledged():
    # Two one-store CTAs: with room for both they wait for their acknowledgements side by side;
    # with one CTA slot the second starts only after the first's acknowledgement has arrived.
    prog = [st(lanes(0x30000))]
    tr = build([KernelSpec([[prog], [prog]])])
    both, serial = run(tr, ACKS.replace(**{"core.max_ctas": 2})), run(tr, ACKS.replace(**{"core.max_ctas": 1}))
    assert both["stores_acked"] == serial["stores_acked"] == 2
    assert both["cycles"] < 1.1 * both["avg_store_ack_latency"]
    assert serial["cycles"] >= 2 * serial["avg_store_ack_latency"]
    # without acknowledgements neither waits: the slot frees as soon as the store has left
    assert run(tr, NO_ACKS.replace(**{"core.max_ctas": 1}))["cycles"] < BASE["l2.latency"]


def test_a_destination_register_on_a_store_is_not_held_for_its_acknowledgement():
    # An acknowledgement carries no data, so a register a trace lists as a store's destination is
    # not the store's to write: its reader waits for nothing, with or without acknowledgements.
    weird = Inst("STG.E", (5,), (), tuple(lanes(0x30000)), 4, (1 << 32) - 1)
    prog = [weird, alu(dst=(6,), src=(5,))]
    for cfg in (ACKS, NO_ACKS):
        r = run(one_warp(prog), cfg)
        assert r["warp_insts"] == 2 and r.raw["requests_live"] == 0
    # the reader issues at once, as after a store without the register
    plain = [st(lanes(0x30000)), alu(dst=(6,))]
    assert run(one_warp(prog), ACKS)["cycles"] == run(one_warp(plain), ACKS)["cycles"]


def test_store_acks_takes_only_a_bool():
    for bad in (2, "yes", None):
        with pytest.raises(TypeError, match=r"core\.store_acks must be a bool, got"):
            BASE.replace(**{"core.store_acks": bad})


# ---- conservation -------------------------------------------------------------------------------

def mixed_trace(seed=0, ctas=6, warps=4):
    rng = np.random.default_rng(seed)
    programs = []
    for c in range(ctas):
        cta = []
        for w in range(warps):
            prog = []
            for i in range(30):
                base = int(rng.integers(0, 1 << 14)) * 128
                kind = i % 5
                if kind == 0:
                    prog.append(ld(1 + i % 8, lanes(base)))
                elif kind == 1:
                    prog.append(st(lanes(base), src=(1 + (i - 1) % 8,)))
                elif kind == 2:
                    prog.append(ld(9 + i % 4, lanes(base, stride=int(rng.integers(4, 300)) // 4 * 4)))
                elif kind == 3:
                    prog.append(ld(20, lanes(0x800000 + 128 * c), opcode="LDL"))
                else:
                    prog.append(alu(dst=(30,), src=(1 + i % 8,)))
            cta.append(prog)
        programs.append(cta)
    return build([KernelSpec(programs, name="mix1"), KernelSpec(programs[:3], name="mix2")])


@pytest.mark.parametrize("acks", [False, True])
@pytest.mark.parametrize("preset", ["gtx480", "ata", "gtx1080", "atoofian"])
def test_conservation(preset, acks):
    trace = mixed_trace()
    r = simulate(presets.get(preset, **{"core.store_acks": acks}), trace, detail=True)
    s = trace.summary()
    assert r["warp_insts"] == s["warp_insts"] and r["thread_insts"] == s["thread_insts"]
    for level in ("l1d", "l2"):
        assert r[f"{level}_hits"] + r[f"{level}_misses"] == r[f"{level}_accesses"]
        assert r[f"{level}_read_accesses"] + r[f"{level}_write_accesses"] == r[f"{level}_accesses"]
        # residencies of every line sum to the run's cycles
        res = r.line_residency(level)
        assert np.all(res.sum(axis=1) == r["cycles"])
        assert r[f"{level}_resid_on"] + r[f"{level}_resid_drowsy"] + r[f"{level}_resid_off"] == r[f"{level}_line_cycles"]
        # dead time and live time partition the line-cycles
        assert (r[f"{level}_live_cycles"] + r[f"{level}_dead_nodata"] + r[f"{level}_dead_unused"]
                == r[f"{level}_line_cycles"])
        # every access and every reservation fail (a refused attempt) looked up the tags
        fails = sum(r[f"{level}_fail_{x}"] for x in ("line_alloc", "mshr_entry", "mshr_merge", "miss_queue"))
        assert r[f"{level}_tag_lookups"] == r[f"{level}_accesses"] + fails
    # every store the L2 accepts writes its data array, a line still being fetched included
    assert r["l2_data_writes"] == r["l2_write_accesses"]
    assert r.raw["requests_live"] == 0  # every request was answered or retired
    assert r["loads"] == sum(int(np.count_nonzero((k.op_class == 7) & (k.width > 0) & (k.space != 3) & (k.mask > 0)))
                             for k in trace.kernels)
    stores = sum(int(np.count_nonzero((k.op_class == 8) & (k.width > 0) & (k.space != 3) & (k.mask > 0)))
                 for k in trace.kernels)
    assert r["stores_acked"] == (stores if acks else 0)


def test_timeseries_adds_up():
    trace = mixed_trace()
    r = run(trace, BASE.replace(**{"sim.timeseries_interval": 100}))
    ts = r.timeseries
    assert ts["thread_insts"].sum() == r["thread_insts"]
    assert ts["l1d_accesses"].sum() == r["l1d_accesses"]
    assert ts["cycle"].iloc[-1] == r["cycles"]
    assert (ts["cycle"].diff().dropna() <= 100).all()


# ---- determinism --------------------------------------------------------------------------------

def test_same_config_and_seed_give_identical_results():
    trace = mixed_trace(3)
    cfg = presets.get("gtx480").replace(**{"l2.policy": "random"})
    a, b = simulate(cfg, trace, seed=5), simulate(cfg, trace, seed=5)
    assert a.metrics == b.metrics
    assert a.raw["timeseries"] == b.raw["timeseries"]


SMALL_LINES = {"l1d.line_bytes": 64, "l2.line_bytes": 64, "l1i.line_bytes": 64, "l2.mshr_entries": 2,
               "l2.partitions": 6, "l2.size_kb": 24.0}


@pytest.mark.parametrize("preset, overrides, workload", [
    ("gtx480", {}, "bfs"),
    # a random victim is drawn before the checks that may refuse the request
    ("gtx480", {"l1d.policy": "random", "l1d.mshr_entries": 2}, "bfs"),
    # a refused request's retries look its set up, and may find a line whose decay cycle has come
    ("admL1D", {**SMALL_LINES, "l2.power": "decay"}, "vectoradd"),
    ("gtx480", {"l1d.power": "decay", "decay.interval": 300, "l1d.mshr_entries": 2}, "bfs"),
])
def test_where_the_cycle_loop_stops_changes_no_result(preset, overrides, workload):
    """The loop skips cycles in which nothing can change, and stops at every time-series sample: a
    sample every cycle, every 7 cycles or at the default interval gives the same run."""
    from gpucachex import workloads

    trace = workloads.make(workload, "tiny")
    cfg = presets.get(preset, **overrides)
    runs = [simulate(cfg.replace(**{"sim.timeseries_interval": n}), trace, seed=s)
            for s in (0, 29) for n in (1, 7, cfg["sim.timeseries_interval"])]
    for first, *others in (runs[:3], runs[3:]):
        assert first["l1d_reservation_fails"] > 0
        for other in others:
            assert other.metrics == first.metrics


def test_dram_latency_jitter_adds_a_seeded_uniform_delay_to_each_dram_access():
    # One warp reads 64 lines one after another (each load's user before the next load), so every
    # load meets an idle DRAM and its latency is the fixed one plus its access's own jitter.
    prog = []
    for i in range(64):
        prog += [ld(1, lanes(0x100000 + 4096 * i)), alu(dst=(2,), src=(1,))]
    trace = one_warp(prog)
    cfg = BASE.replace(**{"dram.model": "simple"})
    plain = run(trace, cfg)
    assert plain["dram_reads"] == 64 and {run(trace, cfg, seed=s)["cycles"] for s in (1, 2)} == {plain["cycles"]}
    jitter = 40
    extra = []
    for seed in (0, 1, 2):
        r = run(trace, cfg.replace(**{"dram.latency_jitter": jitter}), seed=seed)
        assert r.metrics == run(trace, cfg.replace(**{"dram.latency_jitter": jitter}), seed=seed).metrics
        added = (r["avg_load_latency"] - plain["avg_load_latency"]) * 64
        assert added == r["cycles"] - plain["cycles"]  # the loads are the run's critical path
        assert 0 <= added <= 64 * jitter
        extra.append(added / 64)
    # uniform on 0..40: a mean of 20 per access, 1.5 cycles standard error over 64 accesses
    assert all(12 < e < 28 for e in extra) and len(set(extra)) == 3


def test_parallel_threads_give_the_same_results_as_sequential():
    trace = mixed_trace(4)
    cfgs = [presets.get(p) for p in ("gtx480", "ata", "gtx1080", "atoofian")]
    sequential = [simulate(c, trace).metrics for c in cfgs]
    parallel = [None] * len(cfgs)

    def work(i):
        parallel[i] = simulate(cfgs[i], trace).metrics

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cfgs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel == sequential


def test_ctrl_c_stops_a_run_within_moments_and_the_next_run_is_unaffected():
    # A run of many seconds; Ctrl-C (here interrupt_main, 0.3 s in) reaches simulate's thread, which
    # asks the core to stop: the KeyboardInterrupt comes at once, not when the run would have ended.
    import _thread
    import time

    from gpucachex import workloads

    long_run = workloads.make("atax", "medium")
    # interrupt_main does nothing while SIGINT is ignored, as it is in a shell's background jobs: handle
    # it here as an interactive Python does.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            simulate(presets.get("gtx480"), long_run)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, handler)
    assert time.perf_counter() - start < 3.0
    assert run(one_warp([alu(dst=(1,))]))["warp_insts"] == 1


def test_a_stop_event_set_from_another_thread_stops_a_run():
    # A thread that cannot get Ctrl-C (a sweep's caller, for runs on its pool) stops a run through
    # simulate's stop event; anything else as `stop` is refused before the run.
    import time

    from gpucachex import workloads

    long_run = workloads.make("atax", "medium")
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            simulate(presets.get("gtx480"), long_run, stop=stop)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 3.0
    with pytest.raises(TypeError, match="stop must be a threading.Event"):
        simulate(presets.get("gtx480"), mixed_trace(), stop=True)


def test_the_core_stops_when_its_stop_flag_is_set():
    # The flag is progress[1]; the core checks it every cycle and reports where it stopped.
    from gpucachex.sim import _kernel_dicts

    flag = np.array([0, 1], dtype=np.uint64)
    trace = mixed_trace()
    with pytest.raises(KeyboardInterrupt, match=r"stopped at cycle \d+ of kernel 1"):
        _core.simulate(BASE.to_dict(), _kernel_dicts(trace), [], 0, False, progress=flag)
    flag[1] = 0
    assert _core.simulate(BASE.to_dict(), _kernel_dicts(trace), [], 0, False, progress=flag)["cycles"] > 0


def test_a_run_stalled_past_its_patience_stops_naming_the_key_to_raise_and_the_run_limit_names_its_own():
    # A DRAM latency longer than sim.deadlock_cycles: nothing moves for longer than the patience.
    slow = BASE.replace(**{"sim.deadlock_cycles": 1000, "dram.latency": 5000})
    with pytest.raises(RuntimeError, match=r"no progress \(over sim\.deadlock_cycles = 1000 cycles without "
                                           r"progress; raise it if a configured latency is that long\) at cycle"):
        simulate(slow, mixed_trace())
    assert simulate(slow.replace(**{"sim.deadlock_cycles": 10000}), mixed_trace())["cycles"] > 5000
    with pytest.raises(RuntimeError, match=r"sim\.max_cycles = 100 reached in kernel 1"):
        simulate(BASE.replace(**{"sim.max_cycles": 100}), mixed_trace())


# ---- what a cache architect checks ------------------------------------------------------------

def streaming(ctas=30, warps=8, loads=8):
    return build([KernelSpec([[[ld(1 + j, lanes(0x1000000 + ((c * warps + w) * loads + j) * 128))
                                for j in range(loads)] for w in range(warps)] for c in range(ctas)],
                             name="stream")])


def test_streaming_kernel_has_l2_hit_rate_near_zero():
    r = simulate(presets.get("gtx480"), streaming())
    assert r["l2_accesses"] > 1000
    assert r["l2_hit_rate"] < 0.05 and r["l1d_hit_rate"] < 0.05


def test_working_set_that_fits_in_l1_has_hit_rate_near_one():
    # each warp re-reads the same 4 KB forty times
    prog = [ld(1 + (i % 32), lanes(0x2000000 + 128 * (i % 32))) for i in range(32 * 40)]
    r = simulate(presets.get("gtx480"), build([KernelSpec([[prog]])]))
    assert r["l1d_hit_rate"] > 0.95


def test_halving_dram_bandwidth_slows_a_streaming_kernel():
    # From a quarter of the GTX 480's bandwidth, where DRAM rather than the L1D MSHRs bounds the stream.
    cfg = presets.get("gtx480")
    cfg = cfg.replace(**{"dram.bytes_per_cycle": cfg["dram.bytes_per_cycle"] / 4})
    fast = simulate(cfg, streaming())
    slow = simulate(cfg.replace(**{"dram.bytes_per_cycle": cfg["dram.bytes_per_cycle"] / 2}), streaming())
    assert slow["cycles"] > 1.2 * fast["cycles"]
    assert slow["dram_reads"] == fast["dram_reads"]


def test_a_busy_l2_partition_does_not_hold_an_sm_port_it_has_not_started_to_use():
    # SM 0 loads 32 lines of L2 partition 0 at once: their replies keep that partition's port busy
    # for 32 x 5 flits. SM 1 then loads a line of partition 0 (its reply waits behind SM 0's), a
    # line of partition 1 twelve cycles later, and works for 600 cycles once that one arrives.
    # Partition 1's reply shares nothing with SM 0's traffic, so SM 1 (and the kernel, which it
    # ends) finishes exactly as without SM 0's burst. A crossbar that let partition 0 book SM 1's
    # port for the cycle its queued reply will leave would keep that port idle until then, and
    # partition 1's reply would wait for it.
    cfg = BASE.replace(**{"core.sms": 2, "l2.partitions": 2, "dram.channels": 2, "l2.prefill": True})
    base = 0x400000
    assert cfg["l2.index"] == "mod" and cfg["l2.interleave_bytes"] == 256
    burst = [base + 512 * k + 128 * j for k in range(16) for j in range(2)]  # partition 0, 16 sets
    sm1 = (chain(10) + [ld(50, lanes(base + 0x10000))] + chain(3)
           + [ld(51, lanes(base + 0x10000 + 256)), alu(dst=(52,), src=(51,))] + chain(150))
    copy = [(0, base, 0x20000)]
    alone = run(build([KernelSpec([[chain(1)], [sm1]])], memcpys=copy), cfg)
    both = run(build([KernelSpec([[[ld(1, burst)]], [sm1]])], memcpys=copy), cfg)
    assert both["l2_hits"] == alone["l2_hits"] + 32 and both["dram_reads"] == 0
    assert both["avg_load_latency"] > 1.5 * alone["avg_load_latency"]  # SM 0's burst did queue
    assert both["cycles"] == alone["cycles"]


def test_allocate_on_fill_takes_no_line_out_of_service():
    # Under allocate-on-miss every outstanding miss holds a reserved line; under allocate-on-fill
    # none does, so there are no line-allocation fails and the hit rate does not fall as MSHRs grow.
    trace = mixed_trace(7, ctas=15)
    for alloc in ("miss", "fill"):
        cfg = presets.get("gtx480").replace(**{"l1d.allocate": alloc})
        r = simulate(cfg.replace(**{"l1d.mshr_entries": 128}), trace)
        assert r.raw["requests_live"] == 0
        if alloc == "fill":
            assert r["l1d_fails_line_alloc"] == 0


@pytest.mark.parametrize("gap,delay", [(32, 1), (35, 1), (35, 4)])
def test_allocate_on_fill_finds_its_line_again_at_each_fill(gap, delay):
    # One 1-way set of 32-byte sectors, allocate on fill. Warp 0 reads sector 0 of A (an L2 hit,
    # A is copied in) and, before that fill, sector 1 of A: the entry waits for two fetches. Warp 1
    # reads sector 0 of B (a DRAM miss), whose fill lands between A's two fills and evicts A's
    # line. A's second fill must find no line of A and choose one again; put into the line B now
    # holds, it would mark B's sector 1 valid, and warp 1's later read of it would hit without
    # ever being fetched.
    a, b = 0x40000, 0x80000
    w0 = [ld(110, lanes(a, n=8))] + chain(gap) + [ld(111, lanes(a + 32, n=8))]
    w1 = chain(delay) + [ld(112, lanes(b, n=8))] + chain(400) + [ld(113, lanes(b + 32, n=8))]
    trace = build([KernelSpec([[w0, w1]])], memcpys=[(0, a, 4096)])
    cfg = BASE.replace(**{"l1d.size_kb": 0.125, "l1d.ways": 1, "l1d.sector_bytes": 32, "l1d.allocate": "fill",
                          "l2.prefill": True})
    r = run(trace, cfg, detail=True)
    assert r["l1d_pending_hits"] == 1  # A's second read waited in the entry: two fetches
    assert r["l1d_fills"] == 4 and r["l1d_evictions"] == 3  # A s0, B s0 (evicts A), A s1 (evicts B), B s1
    assert r["l1d_hits"] == 0 and r["l2_hits"] == 3  # B's sector 1 came from the L2
    assert r["l1d_live_cycles"] + r["l1d_dead_nodata"] + r["l1d_dead_unused"] == r["l1d_line_cycles"]


def test_queues_too_short_for_a_write_back_are_refused_when_built():
    # A miss that evicts a dirty line queues its fetch and the write-back together: with one entry
    # the L1D (or a DRAM channel) could never accept it, and the run would stall for good.
    with pytest.raises(ValueError, match=r"l1d\.miss_queue must be between 2 and 4096, got 1"):
        BASE.replace(**{"l1d.miss_queue": 1})
    with pytest.raises(ValueError, match=r"dram\.queue must be between 2 and"):
        BASE.replace(**{"dram.queue": 1})
    # With two entries the dirty local line is written back while its replacement is fetched.
    addr0, addr1 = lanes(0x40000), lanes(0x40000 + 128 * 32)
    prog = [ld(1, addr0, opcode="LDL"), alu(dst=(2,), src=(1,)), st(addr0, opcode="STL", src=(2,)),
            ld(3, addr1, opcode="LDL")]
    cfg = BASE.replace(**{"l1d.size_kb": 0.125, "l1d.ways": 1, "l1d.miss_queue": 2, "dram.queue": 2})
    r = run(one_warp(prog), cfg)
    assert r["l1d_writebacks"] == 1 and r.raw["requests_live"] == 0


def test_kernel_that_does_not_fit_an_sm():
    trace = build([KernelSpec([[[alu(dst=(1,))]]], shmem_bytes=64 * 1024)])
    with pytest.raises(ValueError, match=r"does not fit on an SM: .* needs 65536 of core\.shmem_bytes = 49152$"):
        simulate(presets.get("gtx480"), trace)
    # The limit and what one CTA needs of it: 16 warps of 8.
    with pytest.raises(ValueError, match=r"a CTA of 512 threads .* needs 16 of core\.max_warps = 8$"):
        simulate(presets.get("gtx480", **{"core.schedulers": 2, "core.max_warps": 8}), "bfs:tiny")


def test_occupancy_limits_concurrency():
    # 16 one-warp CTAs, each a chain of 30 dependent instructions of latency 20 (600 cycles): with
    # 8 resident CTAs the chains overlap (two waves of about 600 cycles); with 1 they run one after
    # another (16 x 600).
    prog = [alu(dst=(1,))] + [alu(dst=(i + 1,), src=(i,)) for i in range(1, 30)]
    trace = build([KernelSpec([[prog] for _ in range(16)])])
    cfg = BASE.replace(**{"core.alu_latency": 20})
    many = run(trace, cfg)
    one = run(trace, cfg.replace(**{"core.max_ctas": 1}))
    assert 2 * 580 < many["cycles"] < 2 * 640
    assert 16 * 580 < one["cycles"] < 16 * 640


@pytest.mark.parametrize("threads, nregs, over", [
    (48, 32, {"core.registers": 3 * 48 * 32}),    # a 48-thread CTA takes two warps' registers: 2, not 3
    (48, 32, {"core.max_threads": 3 * 48}),       # ... and two warps' thread slots: 2, not 3
    (32, 21, {"core.registers": 3 * 32 * 21}),    # 21 registers are allocated as 24: 2, not 3
    (512, 21, {}),                                # gtx480: 32768 / (512 x 24) = 2, not 3
])
def test_occupancy_counts_whole_warps_and_registers_in_fours_as_gpgpusim(threads, nregs, over):
    # GPGPU-Sim's max_cta gives 2 resident CTAs in each case, so 6 CTAs whose warps each run one
    # ALU chain of 20 x 100 cycles take three waves of it.
    cfg = BASE.replace(**{"core.alu_latency": 100, **over})
    warps = -(-threads // 32)
    def cycles(n):
        programs = [[chain(20) for _ in range(warps)] for _ in range(n)]
        return run(build([KernelSpec(programs, threads_per_cta=threads, nregs=nregs)]), cfg)["cycles"]
    wave = cycles(1)
    assert 3 * wave - 60 < cycles(6) < 3 * wave + 60


@pytest.mark.parametrize("scheduler", ["lrr", "gto", "two_level"])
def test_every_scheduler_runs_everything(scheduler):
    trace = mixed_trace(2)
    r = simulate(presets.get("gtx480").replace(**{"core.scheduler": scheduler}), trace)
    assert r["warp_insts"] == trace.summary()["warp_insts"]


def test_schedulers_differ_in_issue_order():
    # Independent chains in four warps: GTO runs one warp greedily, LRR interleaves; both finish.
    chains = [[alu(dst=(1,))] + [alu(dst=(i + 1,), src=(i,)) for i in range(1, 8)] for _ in range(4)]
    trace = build([KernelSpec([chains])])
    lrr = run(trace, BASE.replace(**{"core.scheduler": "lrr"}))
    gto = run(trace, BASE.replace(**{"core.scheduler": "gto"}))
    assert lrr["warp_insts"] == gto["warp_insts"] == 32
    assert lrr["cycles"] <= gto["cycles"]


def test_prefill_from_memcpy_makes_first_reads_hit_in_l2():
    trace = build([KernelSpec([[[ld(1, lanes(0x7000000))]]])], memcpys=[(0, 0x7000000, 4096)])
    cold = run(trace)
    warm = run(trace, BASE.replace(**{"l2.prefill": True}))
    assert cold["l2_hits"] == 0 and warm["l2_hits"] == 1
    assert warm["cycles"] < cold["cycles"]


def test_prefill_fills_the_copied_words_of_a_line_that_holds_some():
    # Kernel 1 stores one word of X: the L2 allocates X's line holding that word only (lazy, no
    # fetch). A host copy before kernel 2 (l2.prefill) finds X's line present; as GPGPU-Sim's
    # tag_array::fill it fills the copied words the line lacks, so kernel 2's full-line loads of X
    # (and of Y, a line the copy installs) hit.
    x, y = 0x100000, 0x110000
    k1 = KernelSpec([[[alu(dst=(1,)), st([x], src=(1,))]]])
    k2 = KernelSpec([[[alu(dst=(1,)), ld(2, lanes(x), src=(1,)), ld(3, lanes(y), src=(2,))]]])
    trace = build([k1, k2], memcpys=[(1, x, 2 * 0x10000)])
    cold = run(trace)
    warm = run(trace, BASE.replace(**{"l2.prefill": True}))
    assert (cold["l2_hits"], cold["l2_misses"], cold["dram_reads"]) == (0, 3, 2)
    assert (warm["l2_hits"], warm["l2_misses"], warm["dram_reads"]) == (2, 1, 0)
    # With 32-byte L2 sectors, a copy of X's first 64 bytes fills those two sectors of its line
    # only: a load of them hits, a load of its last sector misses.
    sectored = BASE.replace(**{"l2.sector_bytes": 32, "l1d.cache_global": False, "l2.prefill": True})
    k2 = KernelSpec([[[alu(dst=(1,)), ld(2, lanes(x, n=16), src=(1,)), ld(3, lanes(x + 96, n=8), src=(2,))]]])
    r = run(build([k1, k2], memcpys=[(1, x, 64)]), sectored)
    assert (r["l2_hits"], r["l2_misses"], r["dram_reads"]) == (1, 2, 1)


def test_sectored_l1_fetches_only_the_sectors_it_needs():
    cfg = presets.get("ata").replace(**{"core.sms": 30})
    half = one_warp([ld(1, lanes(0x100000, n=8)), alu(dst=(2,), src=(1,)), ld(3, lanes(0x100000 + 64, n=8)),
                     alu(dst=(4,), src=(3,))])
    r = simulate(cfg, half)
    assert r["l1d_misses"] == 2  # the second read needs sectors the first did not fetch
    assert r["l1d_fill_sectors"] == 2


@pytest.mark.parametrize("line", [32, 64, 256])
@pytest.mark.parametrize("preset", ["gtx480", "ata", "atoofian"])
def test_every_line_size_runs_to_completion(preset, line):
    # The caches' line sizes move together (the L1I's no longer than the L2's); every request is
    # answered or retired, whatever the size.
    cfg = presets.get(preset).replace(**{"l1d.line_bytes": line, "l2.line_bytes": line,
                                         "l1i.line_bytes": min(line, 128)})
    r = simulate(cfg, mixed_trace())
    assert r.raw["requests_live"] == 0
    assert r["l1d_hits"] + r["l1d_misses"] == r["l1d_accesses"]


def test_an_instruction_line_shorter_than_the_l2_line_fetches_its_own_sector():
    # 32 B instruction lines (two 16 B instructions each) in 128 B L2 lines of 32 B sectors: 16
    # instructions are 8 instruction lines in 2 L2 lines, and each miss asks for the sector that holds
    # it, so every one of the 8 goes to DRAM; asking for the L2 line's first sector every time would
    # let 6 of them hit after the first fetch of each L2 line.
    cfg = BASE.replace(**{"l1i.size_kb": 2, "l1i.line_bytes": 32, "l2.sector_bytes": 32})
    r = run(one_warp([alu(dst=(1 + i % 4,)) for i in range(16)]), cfg)
    assert r["l1i_misses"] == 8
    assert r["dram_reads"] == 8 and r["l2_hits"] == 0


def test_bad_workload_and_seed():
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 2\*\*64 - 1, got -1"):
        simulate(BASE, one_warp([alu(dst=(1,))]), seed=-1)
    # a 65-bit seed is refused, not masked into the run of another seed (2**64 + 7 -> 7)
    with pytest.raises(ValueError, match="got 18446744073709551623"):
        simulate(BASE, one_warp([alu(dst=(1,))]), seed=2**64 + 7)
    with pytest.raises(ValueError, match="seed must be an integer from 0 to 2\\*\\*64 - 1, got 18446744073709551623"):
        _core.simulate(BASE.to_dict(), [], [], 2**64 + 7)
    with pytest.raises(ValueError, match="has no kernel to simulate"):
        simulate(BASE, Trace(kernels=[], opcodes=[], name="empty"))
    with pytest.raises(ValueError, match=r"neither an existing path nor a built-in workload name \(built-in: sgemm, "):
        simulate(BASE, "no-such-workload-or-file")
    with pytest.raises(ValueError, match=r"'hotspot3:small' is neither .* \(close: hotspot3d, hotspot"):
        simulate(BASE, "hotspot3:small")
    with pytest.raises(TypeError, match="config must be a Config or a preset name"):
        simulate(42, one_warp([alu(dst=(1,))]))
    # a flag given a string would be taken as True ("no" included)
    for flag in ("detail", "energy", "progress"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False, got 'no'"):
            simulate(BASE, one_warp([alu(dst=(1,))]), **{flag: "no"})
    assert "l2_energy_j" not in simulate(BASE, one_warp([alu(dst=(1,))]), energy=np.False_).metrics
    # per-line residency: only the levels that have lines, and only when recorded
    detailed = simulate(BASE, one_warp([alu(dst=(1,))]), detail=True)
    assert detailed.line_residency("l2").shape == (BASE.l2_lines, 3)
    with pytest.raises(ValueError, match="level must be 'l1d' or 'l2', got 'L2'"):
        detailed.line_residency("L2")
    with pytest.raises(ValueError, match=r"not recorded: simulate\(..., detail=True\)"):
        simulate(BASE, one_warp([alu(dst=(1,))])).line_residency("l2")


def test_detail_is_a_bool_in_the_core_too():
    # The core took detail's truth value: "no", "False" or [0] recorded per-line residencies.
    from gpucachex.sim import _kernel_dicts

    kernels = _kernel_dicts(one_warp([alu(dst=(1,))]))
    for bad in ("no", "False", [0], 1):
        with pytest.raises(TypeError, match=f"detail must be a bool, got {re.escape(repr(bad))}"):
            _core.simulate(BASE.to_dict(), kernels, [], 0, bad)
    assert "l2_line_residency" in _core.simulate(BASE.to_dict(), kernels, [], 0, True)
    assert "l2_line_residency" not in _core.simulate(BASE.to_dict(), kernels, [], 0, False)
    assert "l2_line_residency" not in _core.simulate(BASE.to_dict(), kernels)


def test_a_kernel_name_that_is_not_utf8_runs_and_labels_errors():
    # A .traceg file whose header has no kernel name is named after its file, and a file name that
    # is not UTF-8 decodes with surrogates; the core ran the whole simulation with an encoding
    # error pending, then raised it (or a SystemError) instead of the result.
    program = [alu(dst=(1,)), alu(dst=(2,), src=(1,))]
    plain = run(one_warp(program, name="kernel-1"))
    odd = run(one_warp(program, name="kernel-\udcff"))
    assert odd.metrics == plain.metrics
    from gpucachex.sim import _kernel_dicts

    kernels = _kernel_dicts(one_warp(program, name="kernel-\udcff"))
    kernels[0]["shmem_bytes"] = 1 << 31
    with pytest.raises(ValueError, match=r"kernel 1 \(kernel-\\udcff\) does not fit on an SM"):
        _core.simulate(BASE.to_dict(), kernels, [], 0, False)


def test_an_unknown_metric_names_the_close_ones():
    r = run(one_warp([alu(dst=(1,))]))
    with pytest.raises(KeyError, match=r"no metric 'l1_hitrate' in this result \(close: l1_hit_rate"):
        r["l1_hitrate"]


def test_a_rate_or_mean_over_nothing_is_nan_not_zero():
    # An ALU-only kernel has no L1D or L2 access, no load and no store: a hit rate, a latency or a
    # utilisation over nothing is undefined; a 0 would read as measured (every access missed, loads
    # take no time) and pull averages over runs down.
    r = run(one_warp([alu(dst=(1,))]))
    assert r["l1d_accesses"] == r["l2_accesses"] == r["loads"] == r["stores_acked"] == 0
    undefined = ["avg_load_latency", "avg_l1_access_latency", "avg_store_ack_latency", "l1d_r_to_a"] + [
        f"{level}_{m}" for level in ("l1d", "l2")
        for m in ("hit_rate", "miss_rate", "block_utilisation", "inter_access_cycles")]
    assert [k for k in undefined if not math.isnan(r[k])] == []
    # what is defined stays a number, and two identical runs still compare equal
    assert r["ipc"] == 32 / r["cycles"] and r["l1d_hit_rate"] is not None
    assert r["l1d_dead_time_fraction"] == 1.0 and r["l1d_on_fraction"] == 1.0
    assert run(one_warp([alu(dst=(1,))])).metrics == r.metrics
    # one load: its latency and the L1D's rates are defined again
    r = run(one_warp([ld(1, lanes(0x1000))]))
    assert r["l1d_hit_rate"] == 0.0 and r["l1d_miss_rate"] == 1.0 and r["avg_load_latency"] > 0
    assert math.isnan(r["avg_store_ack_latency"]) and math.isnan(r["l1d_inter_access_cycles"])


def test_a_technique_metric_over_nothing_is_nan_not_zero():
    # No load, fill or prediction: the shared-L1D means and rates and LoSCache's accuracy are undefined.
    alu_only = one_warp([alu(dst=(1,))])
    cfg = BASE.replace(**{"core.sms": 2, "l1d.cluster_size": 2, "l1d.sharing": "ata", "l2.power": "loscache"})
    r = run(alu_only, cfg)
    assert r["l2_predictions"] == r["l1d_global_fills"] == 0
    for key in ("l1_hit_rate", "l1_latency_avg", "l1d_replication", "l1d_replicated_fill_fraction",
                "l2_prediction_accuracy"):
        assert math.isnan(r[key]), key
    # A NaN from the core is one object too: identical runs compare equal (an AdmL1D run that ended
    # before its decision has no decision cycle).
    assert run(alu_only, cfg).metrics == r.metrics
    adm = BASE.replace(**{"l1d.admission": "admL1D"})
    assert run(alu_only, adm).metrics == run(alu_only, adm).metrics
    # a load and its fill: defined again
    r = run(one_warp([ld(1, lanes(0x1000))]), cfg)
    assert r["l1_hit_rate"] == 0.0 and r["l1_latency_avg"] == r["avg_load_latency"] and r["l1d_replication"] == 1.0


def test_the_fermi_index_spreads_a_4kb_row_pitch_in_the_l1d():
    # One warp reads 32 rows of a 4 KB-pitch matrix, a row a lane (atax's uncoalesced row walk), then
    # the same rows again. In the 16 KB 4-way L1D (32 sets) the modulo index puts all 32 lines in
    # one set, so the second load finds at most the last four; GPGPU-Sim's Fermi hash puts four rows
    # in each of eight sets, and the second load hits on every line.
    rows = [0x100000 + 4096 * i for i in range(32)]
    trace = one_warp([ld(1, rows), ld(2, rows, src=(1,))])
    mod = run(trace, BASE.replace(**{"l1d.index": "mod"}))
    fermi = run(trace, BASE.replace(**{"l1d.index": "fermi"}))
    assert mod["l1d_accesses"] == fermi["l1d_accesses"] == 64
    assert mod["l1d_hits"] <= 4 and mod["l1d_fails_line_alloc"] > 0
    assert fermi["l1d_hits"] == 32 and fermi["l1d_fails_line_alloc"] == 0


# ---- sectored L1D (l1d.sector_bytes): sectors, not lines, hit, miss and leave -------------------

SECTORED = BASE.replace(**{"l1d.sector_bytes": 32})


@pytest.mark.parametrize("alloc", ["miss", "fill"])
def test_a_valid_sector_hits_while_its_line_fetches_another(alloc):
    # Sector 0 of A is loaded and used; sector 1 then misses, and while it is fetched sector 0 is
    # read again. As in GPGPU-Sim's sector cache it hits, whether or not the miss reserved the line:
    # it neither waits in the MSHR entry nor counts as a miss.
    a = 0x50000
    prog = [ld(1, lanes(a, n=8)), alu(dst=(2,), src=(1,)), ld(3, lanes(a + 32, n=8)),
            ld(4, lanes(a, n=8)), alu(dst=(5,), src=(4,))]
    r = run(one_warp(prog), SECTORED.replace(**{"l1d.allocate": alloc}))
    assert (r["l1d_hits"], r["l1d_misses"], r["l1d_pending_hits"]) == (1, 2, 0)
    assert r["avg_load_latency"] < 150  # the hit does not wait for the sector-1 fetch (about 400)


@pytest.mark.parametrize("inflight", [False, True])
def test_a_global_store_evicts_only_the_sectors_it_writes(inflight):
    # Sectors 0 and 1 of A are valid (or sector 1 is still being fetched); a global store to sector
    # 0 is a hit and write-evicts that sector only: reloading it misses, sector 1 stays.
    a = 0x70000
    prog = [ld(1, lanes(a, n=8)), alu(dst=(2,), src=(1,)), ld(3, lanes(a + 32, n=8))]
    if not inflight:
        prog.append(alu(dst=(9,), src=(3,)))
    prog += [st(lanes(a, n=8)), alu(dst=(4,)), ld(5, lanes(a, n=8)), alu(dst=(6,), src=(5,)),
             ld(7, lanes(a + 32, n=8)), alu(dst=(8,), src=(7,), ), alu(dst=(10,), src=(3,))]
    r = run(one_warp(prog), SECTORED)
    assert r["l1d_write_accesses"] == 1 and r["l1d_invalidations"] == 1
    assert r["l1d_read_accesses"] == 4
    assert r["l1d_hits"] == 2  # the store and the second read of sector 1
    assert r["l1d_misses"] == 3 and r["l1d_evictions"] == 0  # sector 0, sector 1, sector 0 again


def test_a_local_store_to_a_missing_sector_writes_the_dirty_line_back():
    # A local line holds dirty sector 0 (8 words). A local store to bytes 16..47 also needs sector
    # 1, which is not there: a miss. The line leaves with its dirty sector written back (8 words, not
    # the whole line), then the store goes to the L2 (8 words); nothing is lost.
    a = 0x40000
    prog = [ld(1, lanes(a, n=8), opcode="LDL"), alu(dst=(2,), src=(1,)),
            st(lanes(a, n=8), opcode="STL"), alu(dst=(3,)),
            st(lanes(a + 16, n=8), opcode="STL"), alu(dst=(4,))]
    r = run(one_warp(prog), SECTORED)
    assert (r["l1d_hits"], r["l1d_misses"]) == (1, 2)  # the first store hits; the load and the second miss
    assert r["l1d_writebacks"] == 1
    assert r["l2_write_accesses"] == 2 and r["l2_write_words_touched"] == 16


def test_a_local_store_to_a_line_being_fetched_writes_back_the_dirty_sector_it_evicts():
    # As above, but sector 1 of the local line is being fetched when the store to bytes 16..47 comes:
    # the line keeps its reservation, loses sector 0, and sector 0's dirty words are written back
    # before the store goes to the L2 (8 + 8 words); the store is a miss.
    a = 0x40000
    prog = [ld(1, lanes(a, n=8), opcode="LDL"), alu(dst=(2,), src=(1,)),
            st(lanes(a, n=8), opcode="STL"), alu(dst=(3,)),
            ld(5, lanes(a + 32, n=8), opcode="LDL"), st(lanes(a + 16, n=8), opcode="STL"), alu(dst=(6,), src=(5,))]
    r = run(one_warp(prog), SECTORED)
    assert r["l1d_writebacks"] == 1 and r["l1d_invalidations"] == 1
    assert r["l2_write_accesses"] == 2 and r["l2_write_words_touched"] == 16
    assert r.raw["requests_live"] == 0


def test_a_sectored_line_writes_back_only_its_dirty_sectors():
    # A local line with one dirty sector is evicted by four others of its set: its writeback
    # carries that sector (8 words, one sector), not the line; unsectored, the whole line goes.
    a = 0x40000
    prog = [ld(1, lanes(a, n=8), opcode="LDL"), alu(dst=(2,), src=(1,)),
            st(lanes(a, n=8), opcode="STL"), alu(dst=(3,))]
    for k in range(1, 5):
        prog += [ld(10 + k, lanes(a + k * 4096, n=8), opcode="LDL"), alu(dst=(20 + k,), src=(10 + k,))]
    for cfg, words, sectors in ((SECTORED, 8, 1), (BASE, 32, 4)):
        r = run(one_warp(prog), cfg)
        assert r["l1d_writebacks"] == 1 and r["l2_write_accesses"] == 1
        assert (r["l2_write_words_touched"], r["l2_write_sectors"]) == (words, sectors)


# A 1 KB direct-mapped L2 slice of 8 sets: B is the next line of A's set.
TINY_L2 = BASE.replace(**{"l2.partitions": 1, "dram.channels": 1, "l2.ways": 1, "l2.size_kb": 1.0})
L2A, L2B = 0x100000, 0x100000 + 8 * 128


def l2_written_back_bytes(r):
    """DRAM bytes the L2 wrote back: every DRAM byte that no fill read."""
    return r["dram_bytes"] - 32 * r["l2_fill_sectors"]


@pytest.mark.parametrize("write", ["store", "atomic"])
def test_a_sectored_l2_line_writes_back_only_the_sectors_holding_written_words(write):
    # A is read whole (4 sectors from DRAM), one word of it is written, then B evicts it. A sectored
    # L2 writes back only the 32 B sector holding that word (GPGPU-Sim's sector cache writes back
    # its modified sectors), not the clean sectors it fetched; an unsectored L2 writes back the line.
    w = st([L2A], src=(1,)) if write == "store" else ld(3, [L2A], opcode="ATOMG.E.ADD", src=(1,))
    prog = [ld(1, lanes(L2A)), w, ld(2, lanes(L2B), src=(1,))]
    for sector_bytes, written in ((32, 32), (0, 128)):
        r = run(one_warp(prog), TINY_L2.replace(**{"l2.sector_bytes": sector_bytes}))
        assert r["l2_writebacks"] == 1 and r["dram_writes"] == 1 and r["l2_fill_sectors"] == 8
        assert l2_written_back_bytes(r) == written
    # A line that only a store allocated holds only the written words: one sector either way.
    for sector_bytes in (32, 0):
        r = run(one_warp([st([L2A]), ld(2, lanes(L2B))]), TINY_L2.replace(**{"l2.sector_bytes": sector_bytes}))
        assert r["l2_writebacks"] == 1 and l2_written_back_bytes(r) == 32


def test_a_sectored_l2_line_a_power_technique_drops_writes_back_only_its_written_sectors():
    # As above, but cache decay switches A off (the lookup of B's read finds it past its interval)
    # before B takes its line: the power-off writeback follows the same rule.
    prog = [ld(1, lanes(L2A)), st([L2A], src=(1,))] + chain(100) + [ld(2, lanes(L2B), src=(1,))]
    cfg = TINY_L2.replace(**{"l2.sector_bytes": 32, "l2.power": "decay", "decay.interval": 100})
    r = run(one_warp(prog), cfg)
    assert r["l2_decay_dirty_lines"] == 1 and r["l2_writebacks"] == 1 and l2_written_back_bytes(r) == 32


# ---- L2 refusals, by reason ------------------------------------------------------------------

def test_l2_mshr_merge_fails_last_the_whole_fetch():
    # Eight SMs miss in their L1Ds on the same line. With one request per L2 MSHR entry, the second
    # request to reach the partition is refused every cycle until the first one's DRAM fetch returns,
    # cycles the model fast-forwards included: at least dram.latency refusals, all of them merge fails.
    cfg = BASE.replace(**{"core.sms": 8, "l2.mshr_merge": 1})
    trace = build([KernelSpec([[[ld(1, lanes(0x300000))]] for _ in range(8)])])
    r = run(trace, cfg)
    assert r["l2_fail_mshr_merge"] >= cfg["dram.latency"]
    assert r["l2_fail_line_alloc"] == r["l2_fail_mshr_entry"] == r["l2_fail_miss_queue"] == 0
    assert r["l2_stalls"] == r["l2_fail_mshr_merge"]
    # With the default merge of 4 per entry, eight requests to one line still wait: fewer refusals.
    r4 = run(trace, BASE.replace(**{"core.sms": 8}))
    assert 0 < r4["l2_fail_mshr_merge"] < r["l2_fail_mshr_merge"]


def test_l2_miss_queue_and_mshr_entry_fails():
    # One warp loads 32 lines of one partition: with a 2-request DRAM queue the misses that reach the
    # channel wait for room, and the L2 takes no new miss meanwhile (miss-queue fails); with 2 L2
    # MSHR entries and a deep queue they wait for an entry. With 128 B interleaving over BASE's 6
    # partitions, lines 12 apart all fall in partition 0. A 1-cycle L2 latency lets the first misses
    # reach DRAM while the warp still sends the others.
    prog = [ld(1 + i, lanes(0x400000 + i * 128 * 6 * 2)) for i in range(32)]
    cfg = BASE.replace(**{"l2.interleave_bytes": 128, "l2.latency": 1})
    q = run(one_warp(prog), cfg.replace(**{"dram.queue": 2}))
    assert q["l2_fail_miss_queue"] > 0 and q["l2_fail_mshr_entry"] == 0
    e = run(one_warp(prog), cfg.replace(**{"l2.mshr_entries": 2}))
    assert e["l2_fail_mshr_entry"] > 0 and e["l2_fail_miss_queue"] == 0
    for r in (q, e):
        reasons = sum(r[f"l2_fail_{x}"] for x in ("line_alloc", "mshr_entry", "mshr_merge", "miss_queue"))
        assert reasons == r["l2_stalls"]


def test_a_sector_miss_to_a_line_being_fetched_sends_its_own_fetch():
    # Sectored L2 (32 B sectors): SMs 0 and 1 miss on sector 0 and sector 1 of one line, SM 2 on
    # sector 0 again. As in GPGPU-Sim's sector cache, the sector-1 request fetches its sector at once
    # into the reserved line instead of waiting for the sector-0 fetch; the second sector-0 request
    # merges. Nothing is refused, and the three loads take about the same time.
    cfg = BASE.replace(**{"core.sms": 3, "l1d.sector_bytes": 32, "l2.sector_bytes": 32})
    addrs = [0x500000, 0x500020, 0x500000]
    trace = build([KernelSpec([[[ld(1, lanes(a, n=8))]] for a in addrs])])  # 8 lanes: one 32 B sector
    r = run(trace, cfg)
    assert r["l2_stalls"] == 0
    assert r["l2_accesses"] == 3 and r["l2_misses"] == 3 and r["l2_pending_hits"] == 1
    assert r["dram_reads"] == r["l2_fills"] == 2
    one = run(build([KernelSpec([[[ld(1, lanes(0x500000, n=8))]]])]), cfg)
    # Waiting for the first fetch before sending the second would add a whole DRAM round trip.
    assert r["cycles"] < one["cycles"] + cfg["dram.latency"] // 2


def test_a_store_into_an_l2_line_being_fetched_writes_its_data_array():
    # A load misses in the L2 and its line is fetched; a store to the same line arrives before the
    # data. Its words go into the line at once (the fill brings the others): a data-array write
    # with its energy, and the line's second access, exactly as when the store comes after the fill.
    a = 0x100000
    cfg = BASE.replace(**{"l1d.cache_global": False})
    early = [ld(2, lanes(a, n=16)), st(lanes(a + 64, n=16), src=(3,))]
    late = [ld(2, lanes(a, n=16)), alu(dst=(4,), src=(2,)), st(lanes(a + 64, n=16), src=(3,))]
    runs = [run(one_warp(p), cfg) for p in (early, late)]
    assert runs[0]["l2_pending_hits"] == 1 and runs[1]["l2_pending_hits"] == 0
    for r in runs:
        assert r["l2_write_accesses"] == r["l2_data_writes"] == 1
        assert r["l2_data_write_energy_j"] > 0
        assert r["l2_A2_3"] == 1  # one line accessed twice in its lifetime


def test_a_read_miss_needs_room_for_two_requests_in_the_miss_queue():
    # A full-line store takes the SM's crossbar port for five flits; the load miss behind it waits in
    # the miss queue. As GPGPU-Sim's rd_miss_base, the next load miss is refused while the queue has
    # room for fewer than two requests (the miss and a writeback it might cause): with two entries it
    # waits for the first miss to leave, with three it goes in at once.
    prog = [st(lanes(0x400000)), ld(1, lanes(0x500000)), ld(2, lanes(0x600000))]
    fails = {q: run(one_warp(prog), BASE.replace(**{"l1d.miss_queue": q}))["l1d_fail_miss_queue"] for q in (2, 3)}
    assert fails[2] > 0 and fails[3] == 0


@pytest.mark.parametrize("alloc", ["miss", "fill"])
@pytest.mark.parametrize("second, short", [(0x600000, {"l1d.mshr_entries": 1}), (0x500000, {"l1d.mshr_merge": 1})],
                         ids=["entry", "merge"])
def test_a_full_miss_queue_is_the_reason_before_a_full_mshr(alloc, second, short):
    # As above, the second load miss is refused while the two-entry miss queue is short. Give it
    # also no MSHR entry (another line) or no room in the first load's entry (the same line):
    # GPGPU-Sim checks the miss queue first (rd_miss_base), the MSHR after (send_read_request), so
    # its miss-queue fails are the same as with MSHRs to spare, and only the wait for the first
    # fill after them counts against the MSHR.
    prog = [st(lanes(0x400000)), ld(1, lanes(0x500000)), ld(2, lanes(second))]
    cfg = BASE.replace(**{"l1d.miss_queue": 2, "l1d.allocate": alloc})
    roomy, tight = run(one_warp(prog), cfg), run(one_warp(prog), cfg.replace(**short))
    assert roomy["l1d_fails_miss_queue"] == roomy["l1d_reservation_fails"] > 0
    assert tight["l1d_fails_miss_queue"] == roomy["l1d_fails_miss_queue"]
    mshr = tight["l1d_fails_mshr_entry"] + tight["l1d_fails_mshr_merge"]
    assert mshr > 0 and tight["l1d_reservation_fails"] == tight["l1d_fails_miss_queue"] + mshr


def test_l1d_miss_queue_max_is_the_most_requests_the_miss_queue_held():
    # Three full-line stores, then a load miss, one a cycle. The first store leaves at once and holds
    # the SM's crossbar port for five flits; the other two wait in the miss queue behind it. The miss
    # joins them only with room for two more requests: with 8 entries (3 held), not with 3 or 2 (2).
    prog = [st(lanes(0x400000 + 128 * i)) for i in range(3)] + [ld(1, lanes(0x500000))]
    for q, most in ((2, 2), (3, 2), (8, 3)):
        assert run(one_warp(prog), BASE.replace(**{"l1d.miss_queue": q}))["l1d_miss_queue_max"] == most
    assert run(one_warp(prog[3:]))["l1d_miss_queue_max"] == 1  # a miss alone


def test_a_store_to_a_set_being_fetched_whole_waits_in_gpgpusim_3():
    # Four loads reserve the four ways of one set; a store to a fifth line of that set follows. With
    # l1d.store_blocked_by_reserved_set (GPGPU-Sim 3.x, the Fermi presets) the tag probe refuses it
    # until a fill frees a way, every cycle a line-allocation fail; otherwise (4.x) it goes at once.
    stride = 32 * 128  # BASE's 32 sets of 128 B lines: the same set
    prog = [ld(1 + i, lanes(0x100000 + stride * i)) for i in range(4)] + [st(lanes(0x100000 + stride * 4), src=(9,))]
    assert presets.get("gtx480")["l1d.store_blocked_by_reserved_set"] and not presets.get("ata")[
        "l1d.store_blocked_by_reserved_set"]
    waits = run(one_warp(prog), BASE.replace(**{"l1d.store_blocked_by_reserved_set": True}))
    goes = run(one_warp(prog), BASE.replace(**{"l1d.store_blocked_by_reserved_set": False}))
    assert goes["l1d_fail_line_alloc"] == 0 and waits["l1d_fail_line_alloc"] > 100
    assert waits["l1d_accesses"] == goes["l1d_accesses"] == 5 and waits["cycles"] > goes["cycles"]


def test_a_kernel_with_more_registers_than_any_sm_has_is_refused_by_name():
    # Rounding 2^32 - 1 registers per thread up to a multiple of four must not wrap to zero.
    trace = build([KernelSpec([[chain(2)]], nregs=2**32 - 1)])
    with pytest.raises(ValueError, match="core.registers"):
        run(trace)
