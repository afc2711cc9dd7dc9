"""LoSCache, Ideal-Gating and the dead-time analysis on hand-built kernels with known answers: the
predicted count of a PC, gating after the predicted last access, early gating and the adaptive
threshold, bypass of prediction 1, the exact access that ends the prediction phase, predictor
priority in issue order; then invariants on the kernel models and the energy overhead."""
import math

import pytest

from gpucachex import energy, presets, simulate, workloads
from gpucachex.config import Config
from gpucachex.techniques import loscache as los_energy
from approx import approx_j
from tracebuild import KernelSpec, alu, build, ld, lanes, st

# One SM holding one CTA at a time, global loads straight to the L2 (no L1D hit hides an access), a
# perfect instruction cache. With one resident CTA, the predictor is the first CTA, it runs alone,
# and the phase ends when it finishes (the period is far away) unless a test says otherwise.
ONE = presets.get("loscache").replace(**{
    "core.sms": 1, "core.max_ctas": 1, "core.schedulers": 1, "l1i.size_kb": 0, "l1d.cache_global": False,
    "l2.power": "loscache", "l2.loscache.prediction_period": 1_000_000})

PC = 0x100


def block(i):
    return 0x100000 + 0x10000 * i  # distinct L2 lines, spread over the partitions


def reads(addr, n, pc=PC, delay=10):
    """A warp that waits `delay` dependent ALU instructions (so that the table update at the end of
    the phase is back before its first request), then reads `addr` n times, each read depending on
    the previous one (so each is a separate L2 access)."""
    prog = [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, delay)]
    reg = 1
    for _ in range(n):
        prog.append(ld(reg + 1, lanes(addr), src=(reg,), pc=pc))
        reg += 1
    return prog


def kernel(counts):
    """CTA c (one warp) reads its own block counts[c] times with the same PC."""
    return build([KernelSpec([[reads(block(c), n)] for c, n in enumerate(counts)])])


def test_a_pc_read_three_times_is_predicted_three_and_gated_after_the_third_access():
    r = simulate(ONE, kernel([3, 3, 3, 3]))
    # The predictor (CTA 0) read its block 3 times: the table's one entry predicts 3.
    assert (r["loscache_table_inserts"], r["loscache_predicted_pcs"], r["loscache_prediction_sum"]) == (1, 1, 3)
    assert r["loscache_phase_ends_predictors"] == 1 and r["loscache_phase_accesses"] == 3
    # CTAs 1-3: each block is gated after its third read; nothing came back for it.
    assert r["l2_gatings"] == 3 and r["l2_invalidations"] == 3
    assert r["l2_early_gatings"] == 0 and r["l2_off_hits"] == 0
    assert (r["l2_correct_predictions"], r["l2_under_predictions"], r["l2_over_predictions"]) == (3, 0, 0)
    assert r["l2_prediction_accuracy"] == 1.0
    assert r["loscache_unpredicted"] == 1  # the predictor's own block stays on: no prediction existed yet
    # Gating after the last access takes no access away: 4 fills, 8 hits.
    assert (r["l2_accesses"], r["l2_hits"], r["dram_reads"]) == (12, 8, 4)
    # Table update: one request and one answer of one flit each.
    assert (r["loscache_table_updates"], r["loscache_update_flits"]) == (1, 2)


def test_a_predictor_that_waits_for_its_store_acknowledgement_predicts_the_store_pc():
    # Each CTA writes its own block once with one PC. Without acknowledgements the predictor
    # finishes as soon as its store has left, so the phase ends before the store reaches the L2:
    # the table's block has no line and the PC gets no prediction. With them (core.store_acks, the
    # default, as GPGPU-Sim) the predictor finishes when the L2 has taken the store: the line's count
    # is 1, and the other CTAs' stores bypass the L2 (a prediction of 1), correctly.
    prog = [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, 10)]
    trace = build([KernelSpec([[prog + [st(lanes(block(c)), src=(1,), pc=PC)]] for c in range(4)])])
    off = simulate(ONE.replace(**{"core.store_acks": False}), trace)
    assert (off["loscache_table_inserts"], off["loscache_predicted_pcs"], off["loscache_phase_accesses"]) == (1, 0, 0)
    assert off["loscache_unpredicted"] == 4 and off["l2_bypasses"] == 0
    on = simulate(ONE, trace)
    assert ONE["core.store_acks"] is True
    assert (on["loscache_predicted_pcs"], on["loscache_prediction_sum"], on["loscache_phase_accesses"]) == (1, 1, 1)
    assert on["l2_bypasses"] == 3 and on["dram_writes"] == 3 and on["l2_correct_predictions"] == 3
    assert on["loscache_unpredicted"] == 1 and on["stores_acked"] == 4


def test_gated_lines_are_off_and_all_lines_start_off():
    base = simulate(ONE.replace(**{"l2.power": "none"}), kernel([3, 3, 3, 3]))
    r = simulate(ONE, kernel([3, 3, 3, 3]), detail=True)
    assert base["l2_on_fraction"] == 1.0
    assert r["l2_resid_on"] + r["l2_resid_off"] + r["l2_resid_drowsy"] == r["l2_lines"] * r["cycles"]
    # Only the four blocks' lines were ever powered; each from its fill on. The three gated lines
    # are off from their last read (no dead time left on them); the predictor's block, never
    # predicted, stays on to the end. So on-time = live time + the dead time after last reads.
    assert (r.line_residency("l2")[:, 0] > 0).sum() == 4
    assert r["l2_resid_on"] == r["l2_live_cycles"] + r["l2_dead_unused"]


def test_under_prediction_causes_an_early_gating_and_a_threshold_increase():
    # The predictor reads its block twice, the others three times: predicted 2, one read too few.
    adaptive = simulate(ONE, kernel([2, 3, 3, 3]))
    assert adaptive["loscache_prediction_sum"] == 2
    # CTA 1: gated after 2 reads, its third read matches the kept tag: an early gating, served as a
    # miss (a DRAM read), and the PC's threshold becomes 1; CTAs 2 and 3 then carry 2 + 1 = 3.
    assert adaptive["l2_early_gatings"] == 1 and adaptive["l2_off_hits"] == 1
    assert adaptive["loscache_threshold_raises"] == 1 and adaptive["loscache_threshold_sum"] == 1
    assert (adaptive["l2_correct_predictions"], adaptive["l2_under_predictions"]) == (2, 1)
    assert adaptive["dram_reads"] == 1 + 2 + 1 + 1
    naive = simulate(ONE.replace(**{"loscache.adaptive": False}), kernel([2, 3, 3, 3]))
    # Naive: every block is gated one read early.
    assert naive["l2_early_gatings"] == 3 and naive["loscache_threshold_raises"] == 0
    assert (naive["l2_correct_predictions"], naive["l2_under_predictions"]) == (0, 3)
    assert naive["dram_reads"] == 1 + 3 * 2
    assert adaptive["l2_prediction_accuracy"] > naive["l2_prediction_accuracy"]


def test_a_block_refilled_under_its_kept_tag_starts_its_intervals_again():
    # Naive mode, predicted 2 for blocks read 3 times: CTAs 1-3 each read their block twice, it is
    # gated with its tag kept, and the third read refills the same line. An inter-access interval
    # lies within one residency: the predictor's block and each other block give one pair (their
    # first two reads); the refilled block's read pairs with nothing (it was not in the L2 meanwhile).
    naive = simulate(ONE.replace(**{"loscache.adaptive": False}), kernel([2, 3, 3, 3]))
    base = simulate(ONE.replace(**{"l2.power": "none"}), kernel([2, 3, 3, 3]))
    assert naive["l2_early_gatings"] == 3 and naive["l2_off_hits"] == 3
    assert base["l2_interval_count"] == 1 + 3 * 2 and naive["l2_interval_count"] == 1 + 3 * 1
    assert base["l2_I0"] == naive["l2_I0"] == 0


def test_an_early_gating_raises_the_threshold_in_the_table_that_predicted_even_through_a_home_l1d():
    # Two SMs in a decoupled-sharing cluster: every global read goes to its line's home L1D, which
    # fetches it from the L2 as its own miss. One-way L1Ds, so reads of lines of one set miss in turn.
    # SM 0's predictor reads P (PC A), Q (PC C), P: its table is [A -> 2, C -> 1]. SM 1's reads R (C),
    # S (A), R, S: its table is [C -> 2, A -> 2]. CTA 2 (on SM 0) reads T three times with PC A, the
    # lines of all these blocks homed at SM 1: T is gated after its 2nd L2 access and the 3rd is an
    # early gating. It raises PC A's threshold in SM 0's table, which predicted 2, as with private
    # L1Ds, although the L2 request is SM 1's fetch (whose table holds another PC at that entry).
    sets = 128

    def homed_at_sm1(i):  # set 0 of a 1-way 16 KB L1D, line address / sets odd: home SM 1
        return (0x100 * sets + (2 * i + 1) * sets) * 128

    def loads(items, delay=10):
        prog = [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, delay)]
        return prog + [ld(2 + j, lanes(a), src=(1 + j,), pc=pc) for j, (a, pc) in enumerate(items)]

    a, c, d = 0x100, 0x200, 0x300
    p, q, r_, s, t, u = (homed_at_sm1(i) for i in range(6))
    trace = build([KernelSpec([[loads([(p, a), (q, c), (p, a)])],
                               [loads([(r_, c), (s, a), (r_, c), (s, a)])],
                               [loads([(t, a), (u, d), (t, a), (u, d), (t, a)], delay=400)]])])
    cfg = presets.get("gtx480").replace(**{
        "core.sms": 2, "l1d.cluster_size": 2, "l1i.size_kb": 0, "core.schedulers": 1, "core.max_ctas": 1,
        "l1d.ways": 1, "l1d.index": "mod", "l2.power": "loscache", "l2.loscache.prediction_period": 1_000_000})
    for mode in ("private", "decoupled"):
        r = simulate(cfg.replace(**{"l1d.sharing": mode}), trace)
        assert (r["loscache_predicted_pcs"], r["loscache_prediction_sum"]) == (4, 7), mode
        assert (r["l2_gatings"], r["l2_early_gatings"]) == (1, 1), mode
        assert r["loscache_threshold_raises"] == 1 and r["loscache_threshold_sum"] == 1, mode
    assert r["l1d_home_requests"] == 12


def test_the_threshold_stops_at_max_threshold():
    # Predicted 2 for data read 6 times: each CTA's block is gated early until the threshold
    # reaches its cap.
    r = simulate(ONE.replace(**{"loscache.max_threshold": 2}), kernel([2, 6, 6, 6, 6]))
    assert r["loscache_threshold_sum"] == 2
    assert r["loscache_threshold_raises"] == 2
    uncapped = simulate(ONE.replace(**{"loscache.max_threshold": 62}), kernel([2, 6, 6, 6, 6]))
    assert uncapped["loscache_threshold_raises"] > 2


def test_a_target_above_the_counters_maximum_is_never_reached():
    # Blocks read 70 times: the predictor's 6-bit count saturates at p = 63. CTA 1's block is gated
    # at its 63rd read and its 64th is an early gating that raises the threshold to 1; the later
    # CTAs carry 63 + 1 = 64, which the saturating counter never reaches: their blocks are not gated
    # (a target capped at 63 would gate each of them early again, with one more raise each).
    r = simulate(ONE, kernel([70] * 6))
    assert r["loscache_prediction_sum"] == 63
    assert (r["l2_gatings"], r["l2_early_gatings"], r["l2_off_hits"]) == (1, 1, 1)
    assert r["loscache_threshold_raises"] == 1 and r["loscache_threshold_sum"] == 1
    assert r["dram_reads"] == 6 + 1  # one fill per block, and CTA 1's refill
    # Every stay had 70 accesses, more than its target (63, then 64): under-predictions.
    assert (r["l2_correct_predictions"], r["l2_under_predictions"], r["l2_over_predictions"]) == (0, 5, 0)


def test_a_stay_is_judged_against_the_target_of_its_latest_predicted_access():
    # The predictor reads its block twice with PC: p = 2. In CTA 1 (all reads with PC), warp 0 reads
    # block A three times: gated after 2, its 3rd read is an early gating that raises the threshold
    # to 1. Warps 1 and 2 each read their block once before that (target 2), then, after a long
    # wait, B twice more and C once more (target 3). B is gated after its 3rd access and never comes
    # back: correct against 3 (against its first target, 2, it would be an under-prediction). C has
    # 2 accesses and stays on to the end: over-predicted against 3 (correct against 2).
    def wait(n):
        return [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, n)]

    def once_then_later(addr, n_after):
        long_wait = [alu(dst=(3,), src=(3,), pc=0x2000 + 16 * i) for i in range(1500)]
        later = [ld(4 + j, lanes(addr), src=(3 if j == 0 else 3 + j,), pc=PC) for j in range(n_after)]
        return wait(10) + [ld(2, lanes(addr), src=(1,), pc=PC)] + long_wait + later

    a, b, c = block(1), block(2), block(3)
    trace = build([KernelSpec([[reads(block(0), 2), wait(10), wait(10)],
                               [reads(a, 3), once_then_later(b, 2), once_then_later(c, 1)]])])
    r = simulate(ONE, trace)
    assert r["loscache_prediction_sum"] == 2 and r["loscache_threshold_raises"] == 1
    assert (r["l2_gatings"], r["l2_early_gatings"]) == (2, 1)  # A (then refilled) and B
    assert (r["l2_correct_predictions"], r["l2_under_predictions"], r["l2_over_predictions"]) == (1, 1, 1)


def test_a_prediction_of_one_bypasses_the_l2():
    r = simulate(ONE, kernel([1, 1, 1, 1]))
    assert r["loscache_prediction_sum"] == 1
    assert r["l2_bypasses"] == 3 and r["loscache_bypasses"] == 3
    assert r["l2_fills"] == 1 and r["dram_reads"] == 4 and r["l2_accesses"] == 4
    assert (r["l2_correct_predictions"], r["l2_under_predictions"]) == (3, 0)
    # A bypassed block that is read again was under-predicted (no tag is kept to tell the SM).
    again = simulate(ONE, build([KernelSpec([[reads(block(0), 1)], [reads(block(1), 1) + reads(block(1), 1, delay=1)]])]))
    assert again["loscache_bypass_under"] == 1 and again["l2_bypasses"] == 2


@pytest.mark.parametrize("period", [1, 3, 6])
def test_the_phase_ends_at_exactly_the_period_th_l2_access(period):
    # The predictor reads one block 10 times; the phase ends at the period-th L2 access, when that
    # block's counter holds exactly `period` (for period 1 the read is still a miss in flight: the
    # count includes requests waiting in the line's MSHR entry).
    cfg = ONE.replace(**{"loscache.prediction_period": period})
    r = simulate(cfg, kernel([10, 10]))
    assert r["loscache_phase_ends_period"] == 1 and r["loscache_phase_accesses"] == period
    assert r["loscache_prediction_sum"] == period


def test_per_sm_scope_ends_each_sms_phase_at_its_own_period_th_access():
    # Two SMs, each running one predictor that reads its own block 10 times. With the global scope
    # the one phase ends at the GPU's 3rd L2 access: the two blocks' counts add up to 3. With the
    # per-SM scope each SM's phase ends at the 3rd access of its own requests: each block counts 3.
    two = ONE.replace(**{"core.sms": 2, "loscache.prediction_period": 3})
    trace = kernel([10, 10])
    glob = simulate(two, trace)
    assert glob["loscache_phase_ends_period"] == 1 and glob["loscache_phase_accesses"] == 3
    assert (glob["loscache_predicted_pcs"], glob["loscache_prediction_sum"]) == (2, 3)
    per_sm = simulate(two.replace(**{"loscache.phase_scope": "per_sm"}), trace)
    assert per_sm["loscache_phase_ends_period"] == 2
    assert (per_sm["loscache_predicted_pcs"], per_sm["loscache_prediction_sum"]) == (2, 6)
    assert per_sm["loscache_phase_accesses"] == 6  # until the last SM's phase ended


def test_per_sm_scope_lets_an_sm_predict_while_another_predictor_still_runs():
    # SM 0's predictor reads its block once and finishes; SM 1's predictor reads its block 30 times.
    # SM 0 then runs CTAs 2-4, each reading a block once. Globally the phase lasts until SM 1's
    # predictor finishes, so CTAs 2-4 carry no prediction; per SM, SM 0's phase ends with its
    # predictor and CTAs 2-4 carry its prediction 1 and bypass the L2.
    two = ONE.replace(**{"core.sms": 2})
    trace = kernel([1, 30, 1, 1, 1])
    glob = simulate(two, trace)
    assert glob["loscache_phase_ends_predictors"] == 1
    assert glob["l2_bypasses"] == 0 and glob["loscache_predicted_requests"] == 0
    per_sm = simulate(two.replace(**{"loscache.phase_scope": "per_sm"}), trace)
    assert per_sm["loscache_phase_ends_predictors"] == 2
    assert per_sm["l2_bypasses"] == 3 and per_sm["l2_correct_predictions"] == 3
    # The phase lasted until SM 1's predictor finished in both runs.
    assert per_sm["loscache_phase_cycles"] == glob["loscache_phase_cycles"]


def test_predictor_priority_is_visible_in_issue_order():
    # Two resident CTAs of one warp each, eight independent loads per warp, loose round robin: the
    # predictor's eight requests come before the other CTA's first one only with priority.
    trace = build([KernelSpec([[[alu(dst=(1,))] + [ld(2 + i, lanes(block(8 * c + i))) for i in range(8)]]
                               for c in range(2)])])
    cfg = ONE.replace(**{"core.max_ctas": 2, "core.scheduler": "lrr"})
    for seed in range(4):  # whichever CTA the seed makes the predictor
        on = simulate(cfg, trace, seed=seed)
        off = simulate(cfg.replace(**{"loscache.predictor_priority": False}), trace, seed=seed)
        assert on["loscache_phase_predictor_requests"] == 8 and on["loscache_phase_requests"] == 16
        assert on["loscache_predictor_lead_requests"] == 8
        assert off["loscache_predictor_lead_requests"] <= 1


def test_the_predictor_is_a_seeded_random_cta_of_the_first_wave():
    # One SM with 4 resident CTAs: the predictor is one of CTAs 0-3. Predictors reading their block 1,
    # 2, 3 or 4 times predict that count; different seeds pick different CTAs, the same seed the same.
    cfg = ONE.replace(**{"core.max_ctas": 4})
    trace = kernel([1, 2, 3, 4, 1, 1, 1, 1])
    picks = {simulate(cfg, trace, seed=s)["loscache_prediction_sum"] for s in range(12)}
    assert picks <= {1, 2, 3, 4} and len(picks) > 1
    assert simulate(cfg, trace, seed=5).metrics == simulate(cfg, trace, seed=5).metrics


# ---- dead time ------------------------------------------------------------------------------------

def test_dead_time_follows_the_paper_definition():
    base = ONE.replace(**{"l2.power": "none"})
    once = simulate(base, build([KernelSpec([[reads(block(0), 1)]])]))
    # Data read once is dead from its fill on: Total_Dead_Time / (Execution_Time x Num_Cache_Lines) = 1.
    assert once["l2_live_cycles"] == 0 and once["l2_dead_time_fraction"] == 1.0
    assert once["l2_dead_nodata"] + once["l2_dead_unused"] == once["l2_lines"] * once["cycles"]

    def twice(gap):
        # read, `gap` dependent ALU instructions (4 cycles each), read again: the data is live from
        # its fill to the second read.
        prog = reads(block(0), 1) + [alu(dst=(2,), src=(2,), pc=0x400 + 16 * i) for i in range(gap)]
        prog.append(ld(3, lanes(block(0)), src=(2,), pc=0x800))
        return simulate(base, build([KernelSpec([[prog]])]))

    a, b = twice(10), twice(110)
    assert a["l2_live_cycles"] > 0
    assert b["l2_live_cycles"] - a["l2_live_cycles"] == 100 * 4  # exactly the inserted delay
    assert b["l2_dead_unused"] == a["l2_dead_unused"]            # last read to the end: unchanged
    for r in (a, b):
        total = r["l2_lines"] * r["cycles"]
        assert r["l2_live_cycles"] + r["l2_dead_nodata"] + r["l2_dead_unused"] == total
        assert r["l2_dead_time_fraction"] == pytest.approx(1 - r["l2_live_cycles"] / total)
        assert r["l2_dead_time_fraction"] == pytest.approx(r["l2_dead_nodata_fraction"] + r["l2_dead_unused_fraction"])


def test_a_store_into_a_line_being_fetched_begins_its_residency():
    # A read misses; a store to another word of its line reaches the L2 while the line is fetched.
    # The stored words are the line's data from then on: it is live from the store to the fill that
    # answers the read (the last access), not dead until the fill, and Ideal-Gating keeps it on then.
    base = ONE.replace(**{"l2.power": "none"})
    read_only = [ld(1, lanes(block(0)), pc=0x100)]
    with_store = read_only + [st(lanes(block(0) + 64, n=1), pc=0x110)]
    a = simulate(base, build([KernelSpec([[read_only]])]))
    b = simulate(base, build([KernelSpec([[with_store]])]))
    assert a["l2_live_cycles"] == 0
    assert b["l2_pending_hits"] == 1 and b["dram_reads"] == 1  # the store went into the fetched line
    assert b["l2_live_cycles"] > 0
    for r in (a, b):
        assert r["l2_live_cycles"] + r["l2_dead_nodata"] + r["l2_dead_unused"] == r["l2_lines"] * r["cycles"]
    ideal = simulate(base.replace(**{"l2.power": "ideal_gating"}), build([KernelSpec([[with_store]])]))
    assert ideal["l2_resid_on"] == b["l2_live_cycles"]


# ---- Ideal-Gating -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sgemm", "bfs", "vectoradd"])
def test_ideal_gating_is_on_exactly_while_data_is_live_and_keeps_baseline_timing(name):
    trace = workloads.make(name, size="tiny")
    cfg = presets.get("loscache")
    base = simulate(cfg, trace)
    ideal = simulate(cfg.replace(**{"l2.power": "ideal_gating"}), trace)
    for key in ("cycles", "l2_hits", "l2_misses", "dram_reads", "l2_live_cycles", "l2_dead_unused"):
        assert ideal[key] == base[key], key
    assert ideal["l2_resid_on"] == base["l2_live_cycles"]
    assert ideal["l2_on_fraction"] == pytest.approx(1 - base["l2_dead_time_fraction"])
    assert ideal["l2_dynamic_energy_j"] == approx_j(base["l2_dynamic_energy_j"])
    assert ideal["l2_energy_j"] < base["l2_energy_j"]


# ---- LoSCache on kernel models ----------------------------------------------------------------------

@pytest.mark.parametrize("scope", ["global", "per_sm"])
@pytest.mark.parametrize("name", ["sgemm", "bfs", "nw", "histogram", "fwt"])
def test_loscache_invariants_on_kernel_models(name, scope):
    trace = workloads.make(name, size="tiny")
    cfg = presets.get("loscache", **{"l2.power": "loscache", "l2.loscache.phase_scope": scope})
    r = simulate(cfg, trace)
    lines = r["l2_lines"] * r["cycles"]
    assert r["l2_resid_on"] + r["l2_resid_off"] + r["l2_resid_drowsy"] == lines
    assert r["l2_hits"] + r["l2_misses"] == r["l2_accesses"]
    assert r["l2_correct_predictions"] + r["l2_under_predictions"] + r["l2_over_predictions"] == r["l2_predictions"]
    if r["l2_predictions"]:
        assert 0.0 <= r["l2_prediction_accuracy"] <= 1.0
    else:   # tiny kernels can end every per-SM phase before a table is read
        assert math.isnan(r["l2_prediction_accuracy"])
    assert r["loscache_phases"] == len(trace.kernels)
    ends = r["loscache_phase_ends_period"] + r["loscache_phase_ends_predictors"] + r["loscache_phase_ends_kernel"]
    # One phase end per kernel, or per SM in each kernel with the per-SM scope.
    assert ends == len(trace.kernels) * (cfg["core.sms"] if scope == "per_sm" else 1)
    assert r["l2_gatings"] == r["l2_invalidations"]
    assert r["loscache_early_gatings"] >= r["l2_off_hits"]
    ideal = simulate(cfg.replace(**{"l2.power": "ideal_gating"}), trace)
    base = simulate(cfg.replace(**{"l2.power": "none"}), trace)
    # Lines can only be on while they hold data; the oracle is on only while data is live.
    assert ideal["l2_resid_on"] <= r["l2_resid_on"] + r["l2_live_cycles"]
    assert r["l2_energy_j"] < base["l2_energy_j"]
    assert simulate(cfg, trace).metrics == r.metrics


def test_loscache_on_a_sectored_l2_gates_a_line_once_its_last_sector_arrived():
    # The ata preset's L2 has 32 B sectors: a line can wait for several fetches, and the requests
    # whose sectors came first are answered before the line is complete. A count reached then gates
    # the line only after the fill that completes it (a line being fetched cannot be powered off):
    # every gating counted is a real power-off, and the line-cycles still add up.
    trace = workloads.make("histogram", size="small")
    r = simulate(presets.get("ata", **{"l2.power": "loscache"}), trace)
    assert r["l2_gatings"] > 1000
    assert r["l2_gatings"] == r["l2_invalidations"]
    assert r["l2_live_cycles"] + r["l2_dead_nodata"] + r["l2_dead_unused"] == r["l2_line_cycles"]
    assert r["l2_correct_predictions"] + r["l2_under_predictions"] + r["l2_over_predictions"] == r["l2_predictions"]


def test_ideal_gating_after_a_prefill_is_on_exactly_while_data_is_live():
    # Kernel 1 stores 64 lines and ends; a host copy before kernel 2 fills the L2 (l2.prefill, as
    # GPGPU-Sim's perf_sim_memcpy) and replaces them. The oracle must see the replaced lines'
    # data leave: it stays on exactly while data is live, as without the copy.
    cfg = ONE.replace(**{"l1d.cache_global": False, "l2.size_kb": 96.0, "l2.partitions": 6, "l2.ways": 16,
                         "l2.prefill": True, "l2.power": "ideal_gating"})
    k1 = [st(lanes(0x100000 + 128 * i), src=(1,)) for i in range(64)] + [alu(dst=(2 + i % 2,)) for i in range(200)]
    k2 = [ld(2, lanes(0x900000))]
    trace = build([KernelSpec([[k1]]), KernelSpec([[k2]])], memcpys=[(1, 0x400000, 2 * 96 * 1024)])
    r = simulate(cfg, trace)
    assert r["l2_resid_on"] == r["l2_live_cycles"]


def test_a_host_copy_refills_lines_gated_with_their_tag_kept():
    # Kernel 1: every CTA reads its block twice; CTAs 1-3's blocks are gated after their 2nd read,
    # tags kept, no data. A host copy over blocks 1-4 before kernel 2 (l2.prefill) must fill those
    # lines as well as block 4's new one: kernel 2's reads of blocks 1-4 all hit (a kept tag taken
    # for present data would make them early gatings served from DRAM), as in the baseline.
    k1 = KernelSpec([[reads(block(c), 2)] for c in range(4)])
    k2 = KernelSpec([[reads(block(c), 1, pc=0x200)] for c in (1, 2, 3, 4)])
    trace = build([k1, k2], memcpys=[(1, block(1), 4 * 0x10000)])
    cfg = ONE.replace(**{"l2.prefill": True})
    base = simulate(cfg.replace(**{"l2.power": "none"}), trace)
    r = simulate(cfg, trace)
    assert (base["l2_hits"], base["l2_misses"], base["dram_reads"]) == (8, 4, 4)
    assert (r["l2_hits"], r["l2_misses"], r["dram_reads"]) == (8, 4, 4)
    assert r["l2_early_gatings"] == 0 and r["l2_off_hits"] == 0
    # Kernel 1's three gatings, and kernel 2's: its predictor (block 1) read its copied line once,
    # so blocks 2-4 are gated after their one read. Every one was correct.
    assert r["l2_gatings"] == 6
    assert (r["l2_correct_predictions"], r["l2_under_predictions"], r["l2_over_predictions"]) == (6, 0, 0)
    assert r["l2_resid_on"] + r["l2_resid_off"] + r["l2_resid_drowsy"] == r["l2_lines"] * r["cycles"]


def test_a_gated_block_the_host_copy_rewrites_does_not_come_back():
    # One partition of 4 sets x 2 ways. Kernel 1: block B (set 0) is read twice and gated after its
    # 2nd read (predicted 2), tag kept. A host copy over B refills its line with new data; kernel 2
    # reads B (a hit), Z1 and Z2 (set 0: B is evicted) and B again, a miss. The data B held in
    # kernel 1 was replaced by the host's, not needed again: its stay was correct. (Remembered as
    # "correct unless the block comes back", as when another block takes the kept tag, the miss
    # would count it as an under-prediction.)
    cfg = ONE.replace(**{"l2.partitions": 1, "dram.channels": 1, "l2.size_kb": 1.0, "l2.ways": 2,
                         "l2.prefill": True})
    b, z1, z2, p = 0x100000, 0x100000 + 512, 0x100000 + 1024, 0x100000 + 128

    def loads(addrs, pc):
        wait = [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, 10)]
        return wait + [ld(2 + j, lanes(a), src=(1 + j,), pc=pc) for j, a in enumerate(addrs)]

    k1 = KernelSpec([[loads([p, p], PC)], [loads([b, b], PC)]])
    k2 = KernelSpec([[loads([b, z1, z2, b], 0x300)]])
    r = simulate(cfg, build([k1, k2], memcpys=[(1, b, 128)]))
    assert (r["l2_hits"], r["l2_misses"]) == (3, 5)  # kernel 2's first read of B hit the copied data
    assert (r["l2_gatings"], r["l2_early_gatings"]) == (1, 0)
    assert (r["l2_correct_predictions"], r["l2_under_predictions"], r["l2_over_predictions"]) == (1, 0, 0)
    assert r["loscache_under_after_tag"] == 0


def test_a_gated_block_back_while_another_block_takes_its_kept_tag_is_under_predicted():
    # One partition of 4 sets x 2 ways; Y, Z and X share set 0. The predictor reads P twice: p = 2.
    # CTA 1 reads Z (the set's other way), Y twice (gated, tag kept), then X, whose miss takes Y's
    # way, and Y again while X is still being fetched. Y's data was needed after its gating: an
    # under-prediction, whether Y comes back before X's data arrives or after it.
    cfg = ONE.replace(**{"l2.partitions": 1, "dram.channels": 1, "l2.size_kb": 1.0, "l2.ways": 2})
    y, z, x, p = 0x100000, 0x100000 + 512, 0x100000 + 1024, 0x100000 + 128
    wait = [alu(dst=(1,), pc=0x10)] + [alu(dst=(1,), src=(1,), pc=0x10 + 16 * i) for i in range(1, 10)]
    pred = wait + [ld(2, lanes(p), src=(1,), pc=PC), ld(3, lanes(p), src=(2,), pc=PC)]
    for y_waits_for_x in (False, True):
        cta1 = wait + [ld(2, lanes(z), src=(1,), pc=0x400), ld(3, lanes(y), src=(2,), pc=PC),
                       ld(4, lanes(y), src=(3,), pc=PC), ld(5, lanes(x), src=(4,), pc=0x200),
                       ld(6, lanes(y), src=(5 if y_waits_for_x else 4,), pc=0x300)]
        r = simulate(cfg, build([KernelSpec([[pred], [cta1]])]))
        assert (r["l2_gatings"], r["l2_early_gatings"], r["dram_reads"]) == (1, 0, 5)
        assert (r["l2_correct_predictions"], r["l2_under_predictions"]) == (0, 1), \
            f"Y back {'after' if y_waits_for_x else 'before'} X's fill"
        assert r["loscache_under_after_tag"] == 1


def test_no_prediction_means_baseline_behaviour():
    # A phase that ends at the first access leaves an empty table: nothing is gated, nothing bypassed,
    # and the timing is the baseline's to the cycle (only the power states differ).
    trace = workloads.make("hotspot", size="tiny")
    cfg = presets.get("loscache")
    base = simulate(cfg, trace)
    r = simulate(cfg.replace(**{"l2.power": "loscache", "loscache.prediction_period": 1}), trace)
    assert r["loscache_table_inserts"] == 0 and r["l2_gatings"] == 0 and r["l2_bypasses"] == 0
    for key in ("cycles", "l2_hits", "dram_reads", "l2_live_cycles"):
        assert r[key] == base[key]
    assert r["l2_resid_on"] < base["l2_resid_on"]  # lines start off until their first fill


# ---- configuration ------------------------------------------------------------------------------------

def test_parameters_resolve_and_are_checked():
    cfg = Config({"l2.power": "loscache", "loscache.table_entries": 16, "loscache.adaptive": False})
    assert cfg["l2.loscache.table_entries"] == 16 and cfg["l2.loscache.adaptive"] is False
    assert Config()["l2.loscache.prediction_period"] == 100 and Config()["l2.loscache.max_threshold"] == 3
    with pytest.raises(ValueError, match="l2.loscache.table_entries must be between 1 and 4096, got 0"):
        Config({"loscache.table_entries": 0})
    with pytest.raises(ValueError, match="l2.loscache.max_threshold must be between 0 and 62, got 63"):
        Config({"loscache.max_threshold": 63})
    with pytest.raises(ValueError, match="l2.loscache.prediction_period must be an integer"):
        Config({"loscache.prediction_period": 2.5})
    with pytest.raises(TypeError, match="l2.loscache.adaptive must be a bool"):
        Config({"loscache.adaptive": "yes"})
    with pytest.raises(ValueError, match="l2.power must be one of"):
        Config({"l2.power": "losscache"})
    assert Config()["l2.loscache.phase_scope"] == "global"
    with pytest.raises(ValueError, match="l2.loscache.phase_scope must be one of global, per_sm, got 'per_cta'"):
        Config({"loscache.phase_scope": "per_cta"})


# ---- energy ----------------------------------------------------------------------------------------------

def test_overhead_numbers_are_cactis():
    assert los_energy.table_energy(32, 45) == (4.83732, 2.52956, 2.99245, 1.52059)
    mid = los_energy.table_energy(48, 45)
    assert los_energy.table_energy(32, 45)[0] < mid[0] < los_energy.table_energy(64, 45)[0]
    assert los_energy.table_energy(512, 45)[3] == pytest.approx(2 * 8.46325)
    assert los_energy.table_energy(2, 32) == los_energy.table_energy(8, 32)
    dyn, leak = los_energy.extended_tag_ratios(128, 16, 45)
    assert dyn == pytest.approx(7.1456 / 6.18826) and leak == pytest.approx(12.472 / 11.4223)
    with pytest.raises(ValueError, match="no prediction-table energy at 7 nm"):
        los_energy.table_energy(32, 7)


def test_overhead_is_charged_to_the_l2():
    trace = workloads.make("vectoradd", size="tiny")
    r = simulate(presets.get("loscache", **{"l2.power": "loscache"}), trace)
    e = energy.compute(r)
    assert e["l2_overhead_energy_j"] > 0
    search, read, write, leak_mw = los_energy.table_energy(32, 45)
    table_static = leak_mw * 1e-3 * 15 * r["seconds"]
    assert e["l2_overhead_energy_j"] > table_static + r["loscache_table_lookups"] * (search + read) * 1e-12
    bigger = simulate(presets.get("loscache", **{"l2.power": "loscache", "loscache.table_entries": 128}), trace)
    assert bigger["l2_overhead_energy_j"] > r["l2_overhead_energy_j"]
    base = simulate(presets.get("loscache"), trace)
    assert base["l2_overhead_energy_j"] == 0.0


def test_overhead_by_hand_from_counters():
    # The loscache preset's L2 is 6 partitions of 128 KB 16-way (tag 6.188 pJ, tag leakage 0.01115 mW
    # a line at 45 nm), 6144 lines, 15 SMs with 32-entry tables (CACTI: search 4.83732, read 2.52956,
    # write 2.99245 pJ, leakage 1.52059 mW); the 6 counter bits scale a tag's read energy by
    # 7.14560 / 6.18826 and its leakage by 12.4720 / 11.4223.
    cfg = presets.get("loscache", **{"l2.power": "loscache"})
    m = {"loscache_table_lookups": 1000, "loscache_table_inserts": 10, "loscache_table_updates": 5,
         "l2_tag_lookups": 2000, "l2_accesses": 1800, "l2_lines": 6144, "seconds": 1e-3}
    dyn, leak = 7.14560 / 6.18826, 12.4720 / 11.4223
    table_pj = 1000 * (4.83732 + 2.52956) + (10 + 5) * 2.99245   # a lookup searches and reads an entry
    # every tag lookup reads the counters, every access writes its line's back, every update reads a tag
    tag_pj = (2000 + 1800) * 6.188 * (dyn - 1) + 5 * 6.188 * dyn
    table_w, tag_w = 1.52059e-3 * 15, 0.01115e-3 * (leak - 1) * 6144
    out = los_energy.overhead(m, cfg, energy.EnergyParams())
    assert out["l2_dynamic_j"] == pytest.approx((table_pj + tag_pj) * 1e-12, rel=1e-9, abs=0)
    assert out["l2_static_j"] == pytest.approx((table_w + tag_w) * 1e-3, rel=1e-9, abs=0)
    # An L2 entry given in the energy parameters replaces the table's for the extended tags too.
    mine = energy.CacheEnergy(10.0, 100.0, 200.0, 0.1, 0.02)
    out = los_energy.overhead(m, cfg, energy.EnergyParams(l2=mine))
    tag_pj = (2000 + 1800) * 10.0 * (dyn - 1) + 5 * 10.0 * dyn
    assert out["l2_dynamic_j"] == pytest.approx((table_pj + tag_pj) * 1e-12, rel=1e-9, abs=0)
    assert out["l2_static_j"] == pytest.approx((table_w + 0.02e-3 * (leak - 1) * 6144) * 1e-3, rel=1e-9, abs=0)


# ---- notebook ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_notebook_runs_at_tiny_size(monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from pathlib import Path

    monkeypatch.setenv("GPUCACHEX_NOTEBOOK_SIZE", "tiny")
    path = Path(__file__).resolve().parents[1] / "notebooks" / "loscache.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 4


# ---- experiment ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("quick", [False, True])
def test_experiment_specs_are_valid(quick):
    from gpucachex.experiments import EXPERIMENTS, load_spec, spec_workloads
    from gpucachex.experiments import loscache as exp
    from gpucachex.sweep import points

    assert EXPERIMENTS["loscache"] == "loscache"
    for name in ["loscache_main", "loscache_naive", "loscache_xbar", "loscache_scope", "loscache_no_acks", "loscache_icache", *exp.SWEEPS]:
        spec = load_spec(name, quick=quick)
        base = presets.get(spec["preset"], **spec["set"])
        runs = points(base, spec["grid"], spec_workloads(spec))  # every configuration validated
        assert runs and all(w.split(":")[0] in workloads.names() for w in spec_workloads(spec))
        assert spec["size"] == ("small" if quick else "medium")


def test_experiment_tables_from_tiny_runs():
    from gpucachex.experiments import loscache as exp
    from gpucachex.sweep import sweep

    wl = ["sgemm:tiny", "vectoradd:tiny"]
    main = sweep(presets.get("loscache"), {"l2.power": ["none", "loscache", "ideal_gating"]}, wl, jobs=1)
    naive = sweep(presets.get("loscache", **{"l2.power": "loscache", "loscache.adaptive": False}), None, wl, jobs=1)
    per_sm = sweep(presets.get("loscache", **{"l2.power": "loscache", "loscache.phase_scope": "per_sm"}), None, wl,
                   jobs=1)
    no_acks = sweep(presets.get("loscache", **{"core.store_acks": False}),
                 {"l2.power": ["none", "loscache"],
                  "when": [{"if": {"l2.power": "loscache"}, "grid": {"l2.loscache.phase_scope": ["global", "per_sm"]}}]},
                 wl, jobs=1)
    icache = sweep(presets.get("loscache", **{"l1i.size_kb": 0}), {"l2.power": ["none", "loscache"]}, wl, jobs=1)
    for frame in (main, naive, per_sm, no_acks, icache):
        frame["workload"] = frame["workload"].str.split(":").str[0]
    summary = exp.summarize(exp.label_modes(main, "none"), exp.label_modes(naive, "loscache").assign(mode="LoSCache naive"),
                            exp.label_modes(per_sm, "loscache").assign(mode=exp.PER_SM), exp.label_modes(no_acks, "none"),
                            exp.label_modes(icache, "none"))
    assert list(summary["workload"]) == ["sgemm", "vectoradd"]
    assert (summary["energy_ideal"] < 1).all() and (summary["energy_loscache"] >= summary["energy_ideal"]).all()
    # An SM's own phase lasts until its own 100th L2 access or until its predictor has issued everything,
    # so its table gets at least the PCs the GPU's one phase gives it.
    assert (summary["pcs_per_table_per_sm"] >= summary["pcs_per_table"]).all()
    per_sm_run = per_sm.set_index("workload")
    assert summary.set_index("workload")["energy_per_sm"]["vectoradd"] == pytest.approx(
        per_sm_run.loc["vectoradd", "l2_energy_j"] / main.set_index(["workload", "l2.power"]).loc[("vectoradd", "none"), "l2_energy_j"])
    head = exp.headline(summary).set_index("metric")
    assert head.loc["workloads", "ours"] == 2 and head.loc["dead_time", "paper"] == 0.956
    # The uncongested crossbar's slowdown over fewer workloads (a quick run's) says so, with the preset's on them.
    xbar = summary["time_loscache"].where(summary["workload"] == "sgemm") * 0.99
    row = exp.headline(summary, xbar).set_index("metric").loc["slowdown_uncongested_xbar"]
    assert row["ours"] == pytest.approx(summary["time_loscache"].iloc[0] * 0.99 - 1)
    assert row["note"].endswith(f", over its 1 of the 2 workloads (the preset crossbar's slowdown on those: "
                                f"{summary['time_loscache'].iloc[0] - 1:+.2%})")
    every = exp.headline(summary, summary["time_loscache"]).set_index("metric").loc["slowdown_uncongested_xbar"]
    assert every["note"] == "the same with 4 crossbar flits per cycle per port (loscache_xbar)"
    # A workload without predictions has no accuracy: the means and the comparison say they leave it out.
    known = summary.assign(accuracy_naive=[0.25, 0.5], accuracy_adaptive=[0.5, 0.25], accuracy_per_sm=[0.5, 0.5])
    rows = exp.headline(known).set_index("metric")
    assert rows.loc["accuracy_naive", "note"] == "mean (Fig. 6)"
    assert rows.loc["adaptive_at_least_naive", "ours"] == 1
    unpredicted = known.assign(accuracy_naive=[float("nan"), 0.5], accuracy_per_sm=[0.5, float("nan")])
    rows = exp.headline(unpredicted).set_index("metric")
    assert rows.loc["accuracy_naive", "ours"] == 0.5 and rows.loc["accuracy_adaptive", "ours"] == 0.375
    assert rows.loc["accuracy_naive", "note"] == "mean (Fig. 6), over the 1 of 2 workloads with predictions (sgemm made none)"
    assert rows.loc["accuracy_adaptive", "note"] == "mean (Fig. 6)"
    assert rows.loc["adaptive_at_least_naive", "ours"] == 0
    assert rows.loc["adaptive_at_least_naive", "note"].endswith(
        ", over the 1 of 2 workloads with predictions (sgemm made none)")
    assert rows.loc["accuracy_per_sm", "note"].endswith("(vectoradd made none)")
    assert head.loc["energy_loscache", "ours"] == pytest.approx(summary["energy_loscache"].mean())
    # MM-like kernels are sgemm here, not vectoradd; the overhead's share is of LoSCache's own L2 energy.
    assert head.loc["energy_saving_mm", "ours"] == pytest.approx(1 - summary["energy_loscache"].iloc[0])
    m = main.set_index(["workload", "l2.power"])
    assert summary.set_index("workload").loc["vectoradd", "overhead_share"] == pytest.approx(
        m.loc[("vectoradd", "loscache"), "l2_overhead_energy_j"] / m.loc[("vectoradd", "loscache"), "l2_energy_j"])
    assert head.loc["energy_per_sm", "ours"] == pytest.approx(summary["energy_per_sm"].mean())
    assert head.loc["below_baseline_per_sm", "ours"] == (summary["energy_per_sm"] < 1).sum()
    # Without store acknowledgements every ratio is over the baseline that lacks them too.
    a = no_acks.set_index(["workload", "l2.power", "l2.loscache.phase_scope"])
    for scope, suffix in (("global", "no_acks"), ("per_sm", "no_acks_per_sm")):
        assert summary.set_index("workload")[f"time_{suffix}"]["sgemm"] == pytest.approx(
            a.loc[("sgemm", "loscache", scope), "cycles"] / a.loc[("sgemm", "none", "global"), "cycles"])
        assert head.loc[f"energy_{suffix}", "ours"] == pytest.approx(summary[f"energy_{suffix}"].mean())
    assert (summary["time_no_acks_baseline"] < 1).all()  # on these two kernels no warp waits for its stores
    # With a perfect instruction cache every ratio is over the baseline that has one too.
    i = icache.set_index(["workload", "l2.power"])
    assert summary.set_index("workload")["energy_perfect_icache"]["vectoradd"] == pytest.approx(
        i.loc[("vectoradd", "loscache"), "l2_energy_j"] / i.loc[("vectoradd", "none"), "l2_energy_j"])
    assert i.loc[("vectoradd", "none"), "l1i_accesses"] == 0 and main["l1i_accesses"].gt(0).all()
    assert head.loc["coverage_perfect_icache", "ours"] == pytest.approx(summary["coverage_perfect_icache"].mean())


def test_fig7b_shows_only_the_workloads_the_crossbar_variant_ran(tmp_path, monkeypatch):
    # The quick crossbar spec runs fewer workloads than the main one; the figure compares those alone,
    # instead of warning that its mean leaves the others out.
    import warnings
    from pathlib import Path

    import pandas as pd

    from gpucachex import experiments, plot
    from gpucachex.experiments import loscache as exp

    plotted = []
    draw = plot.normalized_bars
    monkeypatch.setattr(plot, "normalized_bars", lambda frame, *a, **k: plotted.append(frame) or draw(frame, *a, **k))
    summary = pd.DataFrame({"workload": ["sgemm", "nw", "bfs"], "time_loscache": [1.01, 0.99, 1.03],
                            "time_loscache_xbar": [1.002, float("nan"), 1.01]})
    ctx = experiments.Context(tmp_path / "out", quick=True, jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exp.fig7b(ctx, summary)
    (out,) = ctx.outputs
    assert out.name == "loscache_fig7b_time_xbar" and all(Path(p).is_file() for p in out.paths)
    (frame,) = plotted
    assert sorted(set(frame["workload"])) == ["bfs", "sgemm"] and frame["time"].notna().all()


def test_sweep_caption_names_the_points_without_predictions():
    # a point whose runs made no prediction has no accuracy: its line has a gap that the caption explains
    import pandas as pd

    from gpucachex.experiments import loscache as exp

    frame = pd.DataFrame({"workload": ["nw", "nw", "bfs"], "l2.loscache.table_entries": [4, 32, 4],
                          "l2.loscache.prediction_period": [1000, 1000, 100],
                          "l2_prediction_accuracy": [float("nan"), 0.4, 0.5]})
    assert exp._no_prediction_note(frame, "l2.loscache.table_entries", "l2.loscache.prediction_period") == \
        " (no prediction, so no accuracy: nw at table_entries 4, prediction_period 1000)"
    assert exp._no_prediction_note(frame.iloc[1:], "l2.loscache.table_entries") == ""
