"""Drowsy lines, cache decay and the divided word line, on hand-built kernels whose every line
residency and energy term is worked out by hand; the access and interval histograms and block
utilisation; the shared drowsy.* keys and their errors; invariants on built-in workloads."""
import numpy as np
import pytest

from gpucachex import Config, _core, energy, presets, sim, simulate, workloads
from gpucachex.config import schema
from gpucachex.experiments import load_spec
from approx import approx_j
from tracebuild import KernelSpec, alu, build, ld, lanes, st

# One SM, a perfect instruction cache, one L2 slice with a simple DRAM: a 16 KB 4-way L1D (128 lines)
# and a 64 KB 8-way L2 (512 lines), both exact entries of the CACTI table.
BASE = presets.get("gtx480").replace(**{
    "core.sms": 1, "l1i.size_kb": 0, "core.alu_latency": 4, "core.schedulers": 1,
    "l2.partitions": 1, "dram.channels": 1, "l2.size_kb": 64, "l2.ways": 8, "dram.model": "simple"})
L1_LINES, L2_LINES = 128, 512
HIT = 20      # l1d.hit_latency: an L1D hit answers 20 cycles after it reaches the L1D, which is the
              # cycle after the load issues: 21 cycles of load latency
A = 0x10000   # one 128 B line
E32 = energy.EnergyParams(node_nm=32)
CLOCK = 700e6  # the GTX 480's 700 MHz core clock: a cycle is 1 / CLOCK seconds of leakage


def drowsy(**kw):
    return BASE.replace(**{"l1d.power": "drowsy", "l2.power": "drowsy", **kw})


def one_warp(program):
    return build([KernelSpec([[program]])])


# i0 misses on line A (filled at F); i2 reads 8 words of A 4 cycles after the fill; i4 reads it
# again 4 cycles after i2's answer. Every later instruction depends on the one before.
P1 = [ld(1, lanes(A)), alu(dst=(2,), src=(1,)), ld(3, lanes(A, n=8), src=(2,)), alu(dst=(4,), src=(3,)),
      ld(5, lanes(A), src=(4,))]


def line_a_reference(F, wake, window=0, period=0):
    """The drowsy rule for line A of P1, worked step by step: (ON cycles, wake-ups, run cycles)."""
    def sleep_time(end):
        return -(-end // period) * period if period else end + window

    on, wakeups = 0, 1                # the fill raises the drowsy line; its access ends at F + 1
    sleep = sleep_time(F + 1)
    on_since = F
    t = F + 5                         # i1 issues at F, i2 at F + 4 and reaches the L1D at F + 5
    for _ in range(2):                # i2, then i4
        wait = 0
        if sleep <= t:                # the line went drowsy before this access
            on += sleep - on_since
            on_since, wait, wakeups = t, wake, wakeups + 1
        sleep = sleep_time(t + wait + 1)
        answer = t + HIT + wait
        t = answer + 5                # the dependent ALU issues at the answer, the next load 4 later
    cycles = answer + 1               # the kernel ends the cycle after the last answer
    on += min(sleep, cycles) - on_since
    return on, wakeups, cycles


def fill_cycle(base):
    """When P1's first load fills line A: it issues at cycle 1 and its latency is the baseline's
    average latency times 3 less two hits (21 cycles each)."""
    return 1 + 3 * base["avg_load_latency"] - 2 * (HIT + 1)


def test_line_a_reference_matches_the_worked_numbers():
    # window 0, 2-cycle wake-up: the fill's cycle, then 3 cycles per woken access (2 waking + 1)
    assert line_a_reference(100, 2) == (7, 3, 100 + 51 + 4)
    # window 10: ON [F, F+16) (i2 at F+5 finds the line awake and extends it), then [F+30, F+43)
    assert line_a_reference(100, 2, window=10) == (29, 2, 100 + 51 + 2)


# ---- known answers: residency and every energy term ------------------------------------------

def test_window_0_residency_and_energy_by_hand():
    base = simulate(BASE, one_warp(P1))
    r = simulate(drowsy(**{"drowsy.wakeup_cycles": 2}), one_warp(P1), detail=True)
    # Baseline: the fill at F answers i0; i1 issues at F, i2 at F + 4 (answered at F + 25), i3 at
    # F + 25, i4 at F + 29 (answered at F + 50); the kernel ends the cycle after: F + 51.
    F = fill_cycle(base)
    assert base["cycles"] == F + 51
    # Both hits find line A drowsy and wait 2 cycles each: the run is 4 cycles longer.
    C = r["cycles"]
    assert C == base["cycles"] + 4
    assert r["avg_load_latency"] == pytest.approx(base["avg_load_latency"] + 4 / 3)
    assert (r["l1d_hits"], r["l1d_misses"]) == (2, 1)

    # L1D: line A is ON for the fill's cycle and 3 cycles per woken hit; every other line is
    # DROWSY for the whole run.
    res = r.line_residency("l1d")
    a = int(np.flatnonzero(res[:, 0])[0])
    assert res[a].tolist() == [7, C - 7, 0]
    others = np.delete(res, a, axis=0)
    assert np.all(others[:, 0] == 0) and np.all(others[:, 1] == C) and np.all(others[:, 2] == 0)
    assert (r["l1d_resid_on"], r["l1d_resid_drowsy"], r["l1d_resid_off"]) == (7, L1_LINES * C - 7, 0)
    assert r["l1d_wakeups"] == 3 and r["l1d_drowsy_fill_wakeups"] == 1 and r["l1d_drowsy_access_wakeups"] == 2
    assert r["l1d_drowsy_wait_cycles"] == 4
    # L2: line A is ON for its fill's cycle only (the waiting request reads it in the same cycle).
    res2 = r.line_residency("l2")
    assert sorted(res2[:, 0].tolist())[-2:] == [0, 1]
    assert (r["l2_resid_on"], r["l2_resid_drowsy"]) == (1, L2_LINES * C - 1)
    assert r["l2_wakeups"] == 1 and r["l2_drowsy_access_wakeups"] == 0

    # Energy at 32 nm, drowsy Vdd 0.4 V: every term by hand from the CACTI entries.
    e = energy.compute(r, E32)
    pj = 1e-12
    wake_pj = 1.0 * 0.9 * (0.9 - 0.4)  # 1 pF x 0.9 V x 0.5 V
    # L1D: 16 KB 4-way: tag 0.572 pJ, read 54.69 / write 68.76 pJ a line, leak 0.0872 + 0.00508 mW a line
    assert e["l1d_tag_energy_j"] == approx_j(3 * 0.572 * pj)             # 1 miss + 2 hits
    assert e["l1d_data_read_energy_j"] == approx_j(3 * 54.69 * pj)       # 3 whole-line reads
    assert e["l1d_data_write_energy_j"] == 0
    assert e["l1d_fill_energy_j"] == approx_j(68.76 * pj)                # one 128 B fill
    assert e["l1d_wakeup_energy_j"] == approx_j(3 * wake_pj * pj)
    drowsy_l1 = 0.08 / 1.081
    assert e["l1d_static_on_energy_j"] == approx_j(0.0872e-3 * 7 / CLOCK)
    assert e["l1d_static_drowsy_energy_j"] == approx_j(0.0872e-3 * drowsy_l1 * (L1_LINES * C - 7) / CLOCK)
    assert e["l1d_static_off_energy_j"] == 0
    assert e["l1d_tag_static_energy_j"] == approx_j(0.00508e-3 * L1_LINES * C / CLOCK)
    drowsy_bit_l1 = 0.0872e-3 / 1024 * L1_LINES * C / CLOCK  # the drowsy bit of every line
    assert e["l1d_overhead_energy_j"] == approx_j(drowsy_bit_l1)
    assert e["l1d_static_energy_j"] == approx_j(
        e["l1d_static_on_energy_j"] + e["l1d_static_drowsy_energy_j"] + e["l1d_tag_static_energy_j"] + drowsy_bit_l1)
    assert e["l1d_dynamic_energy_j"] == approx_j((3 * 0.572 + 3 * 54.69 + 68.76 + 3 * wake_pj) * pj)
    # L2: 64 KB 8-way: tag 1.611 pJ, read 63.43 / write 128.18 pJ a line, leak 0.0795 + 0.00480 mW a line
    assert e["l2_dynamic_energy_j"] == approx_j((1.611 + 63.43 + 128.18 + wake_pj) * pj)
    drowsy_l2 = 0.53 / 6.7
    l2_static = (0.0795e-3 * (1 + drowsy_l2 * (L2_LINES * C - 1)) + 0.00480e-3 * L2_LINES * C
                 + 0.0795e-3 / 1024 * L2_LINES * C) / CLOCK
    assert e["l2_static_energy_j"] == approx_j(l2_static)
    assert e["l2_energy_j"] == approx_j(e["l2_static_energy_j"] + e["l2_dynamic_energy_j"])
    seconds = C / CLOCK
    assert e["l2_static_power_w"] == approx_j(l2_static / seconds)
    assert e["cache_power_w"] == approx_j((e["l1d_energy_j"] + e["l2_energy_j"]) / seconds)
    # What simulate() attached (at the default 45 nm) is the same model.
    assert r["l1d_energy_j"] == approx_j(energy.compute(r)["l1d_energy_j"])


def test_64_byte_lines_halve_every_per_line_energy():
    # The CACTI entries are for 128 B lines: with 64 B lines (the same 16 KB 4-way L1D, now 256
    # lines) a line's data-array energy, leakage and wake-up are half of them, and an unsectored
    # line is two 32 B units; a tag lookup and a tag's leakage are not per data bit and stay whole.
    prog = [ld(1, lanes(A, n=16)), alu(dst=(2,), src=(1,)), ld(3, lanes(A, n=16), src=(2,))]  # one line
    r = simulate(drowsy(**{"l1d.line_bytes": 64, "l2.line_bytes": 64}), one_warp(prog))
    lines, C = 256, r["cycles"]
    assert r["l1d_lines"] == lines
    # a miss whose fill answers it, then a hit: two whole-line reads, one fill of two 32 B sectors,
    # and two wake-ups (the fill, then the hit, the line having gone drowsy in between), ON for the
    # fill's cycle and the woken hit's two
    assert (r["l1d_misses"], r["l1d_hits"], r["l1d_data_reads"], r["l1d_fill_sectors"]) == (1, 1, 2, 2)
    assert (r["l1d_wakeups"], r["l1d_resid_on"], r["l1d_resid_drowsy"]) == (2, 3, lines * C - 3)
    e = energy.compute(r, E32)
    pj = 1e-12
    assert e["l1d_tag_energy_j"] == approx_j(2 * 0.572 * pj)
    assert e["l1d_data_read_energy_j"] == approx_j(2 * 2 * 54.69 / 4 * pj)     # 2 reads of 2 units
    assert e["l1d_fill_energy_j"] == approx_j(2 * 68.76 / 4 * pj)              # 2 sectors of 32 B
    assert e["l1d_wakeup_energy_j"] == approx_j(2 * 0.9 * 0.5 * 0.5 * pj)      # 0.45 pJ x 64/128
    assert e["l1d_static_on_energy_j"] == approx_j(0.0872e-3 / 2 * 3 / CLOCK)
    assert e["l1d_static_drowsy_energy_j"] == approx_j(0.0872e-3 / 2 * 0.08 / 1.081 * (lines * C - 3) / CLOCK)
    assert e["l1d_tag_static_energy_j"] == approx_j(0.00508e-3 * lines * C / CLOCK)
    # the drowsy bit leaks as one data cell: a 128 B line's leakage / 1024, on each of 256 lines
    assert e["l1d_overhead_energy_j"] == approx_j(0.0872e-3 / 1024 * lines * C / CLOCK)


def test_wakeup_latency_is_visible_in_cycles_unless_hidden():
    base = simulate(BASE, one_warp(P1))
    cycles = {w: simulate(drowsy(**{"drowsy.wakeup_cycles": w}), one_warp(P1))["cycles"] for w in (0, 1, 2)}
    assert cycles == {0: base["cycles"], 1: base["cycles"] + 2, 2: base["cycles"] + 4}
    hidden = simulate(drowsy(**{"drowsy.wakeup_cycles": 2, "drowsy.hide_wakeup": True}), one_warp(P1))
    assert hidden["cycles"] == base["cycles"]
    # hiding the latency keeps the wake-ups and the ON time (the line is raised ahead of the access)
    shown = simulate(drowsy(**{"drowsy.wakeup_cycles": 2}), one_warp(P1))
    assert hidden["l1d_wakeups"] == shown["l1d_wakeups"] == 3 and hidden["l1d_resid_on"] == 7


@pytest.mark.parametrize("window,period,wake", [(0, 0, 1), (10, 0, 2), (3, 0, 0), (100000, 0, 2),
                                                (0, 64, 1), (0, 100, 2), (0, 7, 0)])
def test_line_residency_follows_the_rule(window, period, wake):
    base = simulate(BASE, one_warp(P1))
    F = fill_cycle(base)
    cfg = drowsy(**{"drowsy.window": window, "drowsy.period": period, "drowsy.wakeup_cycles": wake})
    r = simulate(cfg, one_warp(P1), detail=True)
    on, wakeups, cycles = line_a_reference(F, wake, window, period)
    assert r["cycles"] == cycles
    res = r.line_residency("l1d")
    assert res[:, 0].sum() == on and res[:, 1].sum() == L1_LINES * cycles - on
    assert r["l1d_wakeups"] == wakeups
    assert np.all(res.sum(axis=1) == cycles)


def test_window_keeps_a_recently_used_line_awake():
    # A window longer than the run: after its fill line A never sleeps and no hit waits.
    base = simulate(BASE, one_warp(P1))
    r = simulate(drowsy(**{"drowsy.window": 10**6, "drowsy.wakeup_cycles": 2}), one_warp(P1), detail=True)
    assert r["cycles"] == base["cycles"] and r["l1d_drowsy_access_wakeups"] == 0
    F = fill_cycle(base)
    assert r["l1d_resid_on"] == r["cycles"] - F  # ON from the fill to the end


def test_periodic_mode_puts_every_line_to_sleep_at_each_period():
    base = simulate(BASE, one_warp(P1))
    F = int(fill_cycle(base))
    # A period ending 2 cycles after the fill: line A sleeps at that boundary, so i2 (F + 5) wakes it.
    period = F + 2
    r = simulate(drowsy(**{"drowsy.period": period, "drowsy.wakeup_cycles": 1}), one_warp(P1))
    assert r["l1d_drowsy_access_wakeups"] >= 1
    # A period far longer than the run: the fill keeps the line ON until the (never reached) boundary.
    r = simulate(drowsy(**{"drowsy.period": 10**6, "drowsy.wakeup_cycles": 1}), one_warp(P1))
    assert r["l1d_drowsy_access_wakeups"] == 0 and r["l1d_resid_on"] == r["cycles"] - F


def test_drowsy_changes_nothing_but_energy_when_waking_is_free():
    # Zero wake-up cycles, or hidden ones: the same cycles, hits and traffic as the baseline.
    wl = workloads.make("hotspot", size="tiny")
    cfg = presets.get("atoofian")
    base = simulate(cfg, wl)
    for kw in ({"drowsy.wakeup_cycles": 0}, {"drowsy.wakeup_cycles": 2, "drowsy.hide_wakeup": 1}):
        r = simulate(cfg.replace(**{"l1d.power": "drowsy", "l2.power": "drowsy", **kw}), wl)
        for key in ("cycles", "l1d_hits", "l1d_misses", "l2_hits", "l2_misses", "dram_reads", "warp_insts"):
            assert r[key] == base[key], key
        # Window 0 at 0.4 V: under 15% of the baseline's static energy in both caches (at 32 nm
        # as in the paper, and at 45 nm); what remains is mostly the tags, which never sleep.
        e, e0 = energy.compute(r, E32), energy.compute(base, E32)
        for level in ("l1d", "l2"):
            assert r[f"{level}_resid_on"] + r[f"{level}_resid_drowsy"] == r[f"{level}_line_cycles"]
            assert r[f"{level}_static_energy_j"] < 0.15 * base[f"{level}_static_energy_j"]
            assert e[f"{level}_static_energy_j"] < 0.15 * e0[f"{level}_static_energy_j"]
            assert e[f"{level}_tag_static_energy_j"] > 0.4 * e[f"{level}_static_energy_j"]


def test_drowsy_composes_with_a_switched_off_l1d():
    r = simulate(BASE.replace(**{"l1d.admission": "off", "l1d.power": "drowsy", "l2.power": "drowsy"}),
                 one_warp(P1))
    assert r["l1d_accesses"] == 0 and r["l1d_off_fraction"] == 1.0  # off stays off
    assert r["l2_wakeups"] >= 1 and r["l2_drowsy_fraction"] > 0.99
    # The switched-off L1D's tags are gated with its data; the drowsy L2's stay awake.
    e = energy.compute(r, E32)
    assert e["l1d_tag_static_energy_j"] == approx_j(0.03 * 0.00508e-3 * L1_LINES * r["cycles"] / CLOCK)
    assert e["l2_tag_static_energy_j"] == approx_j(0.00480e-3 * L2_LINES * r["cycles"] / CLOCK)


def test_drowsy_lines_keep_their_tags_awake():
    # Almost every L1D line-cycle is drowsy, yet every tag leaks in full for the whole run: a drowsy
    # line's tag is compared on every lookup.
    r = simulate(drowsy(), one_warp(P1))
    assert r["l1d_drowsy_fraction"] > 0.99 and r["l1d_resid_off"] == 0
    e = energy.compute(r, E32)
    assert e["l1d_tag_static_energy_j"] == approx_j(0.00508e-3 * L1_LINES * r["cycles"] / CLOCK)


# ---- cache decay ----------------------------------------------------------------------------------

def chain(n, first_src):
    return [alu(dst=(10 + i % 2,), src=(first_src if i == 0 else 10 + (i - 1) % 2,)) for i in range(n)]


def test_decay_counter_energy_by_hand():
    # 2-bit counters on each of the 15 SMs' 128 lines (1920 lines), ticked 4 times per interval:
    # 10000 cycles with an interval of 1000 are 40 ticks of every line, and each of the 500 accesses
    # resets its line's counter. A write costs 2 bits of the 16 KB 4-way L1D's 125.00 pJ per 1024-bit
    # line; each counter bit leaks as one data cell (0.1633 mW per 1024 bits) for the run.
    from gpucachex.techniques import decay

    cfg = presets.get("gtx480", **{"l1d.power": "decay", "decay.interval": 1000})
    m = {"cycles": 10000, "seconds": 10000 / 700e6, "l1d_lines": 1920, "l1d_accesses": 500}
    out = decay.overhead(m, cfg, energy.EnergyParams())
    assert out["l1d_dynamic_j"] == approx_j((40 * 1920 + 500) * 2 * 125.0 / 1024 * 1e-12)
    assert out["l1d_static_j"] == approx_j(0.1633e-3 / 1024 * 2 * 1920 * 10000 / 700e6)

def test_l1d_decay_loses_the_data_and_a_later_access_misses():
    # Load A, wait about 160 cycles (40 dependent ALUs), load A again.
    prog = [ld(1, lanes(A))] + chain(40, 1) + [ld(3, lanes(A), src=(11,))]
    base = simulate(BASE, one_warp(prog))
    assert (base["l1d_hits"], base["l1d_misses"]) == (1, 1)
    cfg = BASE.replace(**{"l1d.power": "decay", "decay.interval": 100})
    r = simulate(cfg, one_warp(prog), detail=True)
    assert (r["l1d_hits"], r["l1d_misses"]) == (0, 2) and r["l1d_decay_lines"] == 1
    assert r["l2_hits"] == 1  # the second miss finds the data in the L2
    # Line A: ON from its fill for the 100-cycle interval, OFF until its refill, which the load's
    # answer follows in the same cycle: ON again for the run's last cycle. Every other line: OFF.
    res = r.line_residency("l1d")
    a = int(np.argmax(res[:, 0]))
    assert res[a].tolist() == [101, 0, r["cycles"] - 101]
    assert r["l1d_resid_on"] == 101 and r["l1d_resid_off"] == L1_LINES * r["cycles"] - 101
    # A decay interval longer than the gap keeps the line: the second load hits.
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 1000}), one_warp(prog))
    assert (r["l1d_hits"], r["l1d_decay_lines"]) == (1, 0)


def test_decay_writes_back_a_dirty_local_line():
    L = 0x80000
    prog = ([ld(1, lanes(L), opcode="LDL"), st(lanes(L), opcode="STL", src=(1,))] + chain(40, 1)
            + [ld(3, lanes(L), opcode="LDL", src=(11,))])
    base = simulate(BASE, one_warp(prog))
    assert base["l1d_writebacks"] == 0 and base["l1d_hits"] == 2
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 100}), one_warp(prog))
    assert r["l1d_decay_dirty_lines"] == 1 and r["l1d_writebacks"] == 1
    assert r["l2_write_accesses"] == 1 and r["l1d_misses"] == 2


def test_decay_at_the_end_of_the_run_counts_a_dirty_line_as_a_dirty_decay():
    # The stored local line is idle past the interval only when the run ends: it decays then, dirty,
    # and its writeback, like that of any line dirty at the end of a run, is not simulated.
    L = 0x80000
    prog = [ld(1, lanes(L), opcode="LDL"), st(lanes(L), opcode="STL", src=(1,))] + chain(40, 1)
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 100}), one_warp(prog))
    assert (r["l1d_decay_lines"], r["l1d_decay_dirty_lines"], r["l1d_writebacks"]) == (1, 1, 0)
    # A clean line decaying at the end counts as a decay only.
    prog = [ld(1, lanes(L), opcode="LDL")] + chain(40, 1)
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 100}), one_warp(prog))
    assert (r["l1d_decay_lines"], r["l1d_decay_dirty_lines"]) == (1, 0)


def test_l2_decay_sends_a_later_read_to_dram():
    prog = [ld(1, lanes(A))] + chain(100, 1) + [ld(3, lanes(A), src=(11,))]
    cfg = BASE.replace(**{"l1d.cache_global": False})
    base = simulate(cfg, one_warp(prog))
    assert base["l2_hits"] == 1 and base["dram_reads"] == 1
    r = simulate(cfg.replace(**{"l2.power": "decay", "decay.interval": 50}), one_warp(prog))
    assert r["l2_hits"] == 0 and r["dram_reads"] == 2 and r["l2_decay_lines"] == 1
    assert r["l2_resid_off"] > 0.99 * r["l2_line_cycles"]


@pytest.mark.parametrize("gap", [40, 80, None])
def test_a_decayed_l1d_line_is_dead_with_data_until_its_decay_cycle_only(gap):
    # Line A is filled and never used again; decay drops its data 100 cycles after the fill. Decay is
    # lazy: the switch-off is found by B's read (same set) about 4 x gap cycles after the fill, or
    # (gap None) at the end of the run. Either way A held unused data for 100 cycles, then none: the
    # lookup's time changes nothing. B, also never reused, decays before the run ends: 100 more.
    B = A + 32 * 128
    prog = [ld(1, lanes(A))] + chain(gap or 100, 1) + ([ld(3, lanes(B), src=(11,))] + chain(60, 3) if gap else [])
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 100}), one_warp(prog))
    lines = 2 if gap else 1
    assert r["l1d_decay_lines"] == lines and r["l1d_misses"] == lines
    assert (r["l1d_dead_unused"], r["l1d_live_cycles"]) == (100 * lines, 0)
    assert r["l1d_dead_nodata"] == r["l1d_line_cycles"] - 100 * lines


@pytest.mark.parametrize("gap", [30, 100, None])
def test_a_decayed_l2_line_is_dead_with_data_until_its_decay_cycle_only(gap):
    # The same in the L2 (50-cycle interval, global loads past the L1D): A is read, decays, and the
    # second read of A, about 4 x gap cycles later, finds the switch-off and refills it; the refill
    # decays too before the run ends. Each residency held unused data for the interval only.
    cfg = BASE.replace(**{"l1d.cache_global": False, "l2.power": "decay", "decay.interval": 50})
    prog = [ld(1, lanes(A))] + chain(gap or 100, 1) + ([ld(3, lanes(A), src=(11,))] + chain(30, 3) if gap else [])
    r = simulate(cfg, one_warp(prog))
    stays = 2 if gap else 1
    assert r["l2_decay_lines"] == stays and r["l2_hits"] == 0
    assert (r["l2_dead_unused"], r["l2_live_cycles"]) == (50 * stays, 0)
    assert r["l2_dead_nodata"] == r["l2_line_cycles"] - 50 * stays


def test_l2_decay_restarts_the_interval_of_lines_a_host_copy_fills():
    # Kernel 1 reads enough lines to fill the L2; a host copy before kernel 2 replaces them all
    # (l2.prefill). Kernel 2 waits, then reads the copied lines. The decay interval is longer than
    # that wait but shorter than the time since kernel 1's fills: a copied line starts its own
    # interval at the copy, so none decays and every read hits, as when kernel 1 leaves the L2 empty.
    l2_kb, mc = 96, 0x4000000
    n = l2_kb * 1024 // 128
    cfg = presets.get("loscache").replace(**{
        "core.sms": 1, "core.max_ctas": 1, "core.schedulers": 1, "l1i.size_kb": 0, "l1d.cache_global": False,
        "l2.size_kb": float(l2_kb), "l2.partitions": 6, "l2.ways": 16, "l2.prefill": True})
    wait = [alu(dst=(60 + i % 2,)) for i in range(3000)]
    k1 = [ld(2 + i % 50, lanes(0x100000 + 128 * i, n=1)) for i in range(n)] + wait
    k2 = wait + [ld(2 + i % 50, lanes(mc + 128 * i, n=1)) for i in range(n)]
    t1 = simulate(cfg, build([KernelSpec([[k1]])]))["cycles"]
    w = simulate(cfg, build([KernelSpec([[wait]])]))["cycles"]
    interval = w + t1 // 2
    for first in (k1, wait):
        trace = build([KernelSpec([[first]]), KernelSpec([[k2]])], memcpys=[(1, mc, n * 128)])
        r = simulate(cfg.replace(**{"l2.power": "decay", "decay.interval": interval}), trace)
        assert r["l2_decay_lines"] == 0
        assert r["l2_hits"] >= n  # kernel 2's reads


def test_l2_decay_restarts_the_interval_of_a_present_line_a_host_copy_writes():
    # Kernel 1 stores one word of line X, so X is in the L2 with data when a host copy of X comes before
    # kernel 2 (l2.prefill). Kernel 2 waits, then reads X. The copy writes X: its interval restarts
    # there, so X does not decay during the wait and the read hits, as when kernel 1 never touched X.
    x = 0x4000000
    cfg = presets.get("loscache").replace(**{
        "core.sms": 1, "core.max_ctas": 1, "core.schedulers": 1, "l1i.size_kb": 0, "l1d.cache_global": False,
        "l2.size_kb": 96.0, "l2.partitions": 6, "l2.ways": 16, "l2.prefill": True})
    wait = [alu(dst=(60 + i % 2,)) for i in range(3000)]
    w = simulate(cfg, build([KernelSpec([[wait]])]))["cycles"]
    for first in ([st(lanes(x, n=1))] + wait, wait):
        t1 = simulate(cfg, build([KernelSpec([[first]])]))["cycles"]
        interval = w + t1 // 2   # longer than kernel 2's wait, shorter than the time since kernel 1's store
        trace = build([KernelSpec([[first]]), KernelSpec([[wait + [ld(2, lanes(x))]]])], memcpys=[(1, x, 128)])
        r = simulate(cfg.replace(**{"l2.power": "decay", "decay.interval": interval}), trace)
        assert r["l2_decay_lines"] == 0 and r["l2_hits"] == 1 and r["dram_reads"] == 0


# ---- divided word line ----------------------------------------------------------------------------

# Reads of line A with words {0,2,4,6}, then {15,16,17}; a local line L read whole, then 2 words
# {0,31} stored (a local store hits and stays in the L1D).
LOC = 0x80000
P_DWL = [ld(1, [A, A + 8, A + 16, A + 24]), alu(dst=(2,), src=(1,)), ld(3, lanes(A + 60, n=3), src=(2,)),
         ld(4, lanes(LOC), opcode="LDL"), alu(dst=(5,), src=(4,)),
         st([LOC, LOC + 124], opcode="STL", src=(5,))]
# Touched segments of 4, 8, 16, 32 bytes, worked by hand:
L1_READS = {4: 4 + 3 + 32, 8: 4 + 2 + 16, 16: 2 + 2 + 8, 32: 1 + 2 + 4}
L1_WRITES = {4: 2, 8: 2, 16: 2, 32: 2}
L2_READS = {4: 4 + 32, 8: 4 + 16, 16: 2 + 8, 32: 1 + 4}  # the L1 misses' byte masks


def test_dwl_energy_scales_exactly_with_the_touched_segments():
    off = simulate(BASE, one_warp(P_DWL))
    assert (off["l1d_data_reads"], off["l1d_data_writes"], off["l2_data_reads"]) == (3, 1, 2)
    assert off["l1d_words_touched"] == 41 and off["l1d_write_words_touched"] == 2
    assert off["l2_words_touched"] == 36
    l1 = energy.CACTI_TABLE[("l1d", 16, 4, 32)]
    l2 = energy.CACTI_TABLE[("l2", 64, 8, 32)]
    whole = energy.compute(off, E32)
    assert whole["l1d_data_read_energy_j"] == approx_j(3 * l1.read_line_pj * 1e-12)
    assert whole["l1d_data_write_energy_j"] == approx_j(1 * l1.write_line_pj * 1e-12)
    assert whole["l2_data_read_energy_j"] == approx_j(2 * l2.read_line_pj * 1e-12)
    for seg in (4, 8, 16, 32):
        p = energy.EnergyParams(node_nm=32, dwl={"l1d": True, "l2": True}, segment_bytes=seg)
        e = energy.compute(off, p)
        assert e["l1d_data_read_energy_j"] == approx_j(L1_READS[seg] * seg / 128 * l1.read_line_pj * 1e-12)
        assert e["l1d_data_write_energy_j"] == approx_j(L1_WRITES[seg] * seg / 128 * l1.write_line_pj * 1e-12)
        assert e["l2_data_read_energy_j"] == approx_j(L2_READS[seg] * seg / 128 * l2.read_line_pj * 1e-12)
        # the word line divides the data array only: tags, fills and leakage are unchanged
        for key in ("l1d_tag_energy_j", "l1d_fill_energy_j", "l2_fill_energy_j", "l1d_static_energy_j",
                    "l2_static_energy_j"):
            assert e[key] == approx_j(whole[key])
    # The active-mask variant drives one 4 B segment per active lane: the loads' 4 + 3 + 32 lanes
    # read, the store's 2 lanes write (and are not read as well).
    lanes_mask = energy.compute(off, energy.EnergyParams(node_nm=32, dwl={"l1d": True}, dwl_select="lanes"))
    assert lanes_mask["l1d_data_read_energy_j"] == approx_j(39 * 4 / 128 * l1.read_line_pj * 1e-12)
    assert lanes_mask["l1d_data_write_energy_j"] == approx_j(2 * 4 / 128 * l1.write_line_pj * 1e-12)
    # The configuration keys select the same model as the energy parameters.
    on = simulate(BASE.replace(**{"l1d.dwl": True, "l2.dwl": True}), one_warp(P_DWL))
    assert on["cycles"] == off["cycles"]
    assert energy.compute(on, E32)["l1d_dynamic_energy_j"] == approx_j(
        energy.compute(off, energy.EnergyParams(node_nm=32, dwl={"l1d": True, "l2": True}))["l1d_dynamic_energy_j"])


def test_dwl_saves_most_on_low_utilisation_kernels():
    saved = {}
    for name in ("myocyte", "sgemm"):
        r = simulate(presets.get("atoofian"), workloads.make(name, size="tiny"))
        whole = energy.compute(r, E32)
        for select in ("bytes", "lanes"):
            p = energy.EnergyParams(node_nm=32, dwl={"l1d": True, "l2": True}, dwl_select=select)
            e = energy.compute(r, p)
            saved[name, select] = 1 - e["l1d_dynamic_energy_j"] / whole["l1d_dynamic_energy_j"]
        # The active-mask variant reads one 4 B segment per active lane: its read energy is the
        # baseline's times the block utilisation of the reads.
        p = energy.EnergyParams(node_nm=32, dwl={"l1d": True}, dwl_select="lanes")
        reads = r["l1d_data_reads"]
        util = (r["l1d_lanes_sum"] - r["l1d_write_lanes_sum"]) / (32 * reads)
        assert energy.compute(r, p)["l1d_data_read_energy_j"] == approx_j(whole["l1d_data_read_energy_j"] * util)
    for select in ("bytes", "lanes"):
        assert saved["myocyte", select] > saved["sgemm", select] + 0.1
    assert saved["sgemm", "lanes"] == pytest.approx(0, abs=1e-9)  # every sgemm warp is full
    with pytest.raises(ValueError, match="segment_bytes must be 4, got 8"):
        energy.EnergyParams(dwl_select="lanes", segment_bytes=8)


# ---- statistics -----------------------------------------------------------------------------------

def test_access_and_interval_histograms_and_utilisation():
    r = simulate(BASE, one_warp(P1))
    F = fill_cycle(r)
    # L1D: line A accessed 3 times (the fill's waiting load, two hits), every other line never.
    assert r["l1d_A2_3"] == 1 and r["l1d_A0"] == L1_LINES - 1
    assert sum(r[f"l1d_{b}"] for b in sim.ACCESS_BUCKETS) == L1_LINES
    # intervals: F -> F + 5, and F + 5 -> F + 30
    assert r["l1d_I4_7"] == 1 and r["l1d_I16_31"] == 1 and r["l1d_interval_count"] == 2
    assert r["l1d_inter_access_cycles"] == pytest.approx((5 + 25) / 2)
    # block utilisation: lanes 32, 8, 32 of 32
    assert r["l1d_block_utilisation"] == pytest.approx(72 / 96)
    # L2: line A read once, by the 32-lane miss
    assert r["l2_A1"] == 1 and r["l2_A0"] == L2_LINES - 1 and r["l2_block_utilisation"] == 1.0
    # A global store is an L1D access that touches no data (written through, the line evicted): the
    # utilisation is over the load's data access alone. The L2 writes the store's 8 lanes.
    r = simulate(BASE, one_warp([ld(1, lanes(A)), st(lanes(A, n=8), src=(1,))]))
    assert (r["l1d_accesses"], r["l1d_data_accesses"], r["l1d_lanes_sum"]) == (2, 1, 32)
    assert r["l1d_block_utilisation"] == 1.0
    assert (r["l2_data_accesses"], r["l2_lanes_sum"]) == (2, 40) and r["l2_block_utilisation"] == 40 / 64
    assert F > 0


def test_an_interval_pairs_two_accesses_to_one_block_in_one_residency():
    # A one-way L1D with the mod index (128 sets of 128 B): A and B share a frame.
    frame = BASE.replace(**{"l1d.ways": 1, "l1d.index": "mod"})
    B = A + 128 * 128
    # A, then B about 600 cycles later in A's frame: B's first access pairs with neither A's access
    # nor B's own fill
    r = simulate(frame, one_warp([ld(1, lanes(A))] + chain(150, 1) + [ld(3, lanes(B), src=(11,))]))
    assert r["l1d_evictions"] == 1 and r["l1d_interval_count"] == 0 and r["l1d_I0"] == 0
    # A read twice: the second load issues 12 dependent ALU instructions (4 cycles each) after the
    # first one's answer and reaches the L1D a cycle later: one pair of 49 cycles
    r = simulate(frame, one_warp([ld(1, lanes(A))] + chain(12, 1) + [ld(3, lanes(A), src=(11,))]))
    assert r["l1d_hits"] == 1 and (r["l1d_interval_count"], r["l1d_interval_sum"]) == (1, 49)
    assert r["l1d_I32_63"] == 1 and r["l1d_inter_access_cycles"] == 49
    # A refilled after decay dropped it: the refill's access pairs with nothing before the block
    # left; the hit that follows it a cycle later does
    prog = [ld(1, lanes(A))] + chain(40, 1) + [ld(3, lanes(A), src=(11,)), ld(5, lanes(A), src=(3,))]
    r = simulate(BASE.replace(**{"l1d.power": "decay", "decay.interval": 100}), one_warp(prog))
    assert r["l1d_decay_lines"] == 1 and r["l1d_hits"] == 1
    assert (r["l1d_interval_count"], r["l1d_interval_sum"]) == (1, 1)


def test_access_buckets_are_powers_of_two():
    # 17 reads of one line land in A16_31; the first read is a miss.
    prog = [ld(1 + i % 4, lanes(A)) for i in range(17)]
    r = simulate(BASE, one_warp(prog))
    assert r["l1d_accesses"] == 17 and r["l1d_A16_31"] == 1


# ---- configuration ----------------------------------------------------------------------------------

def test_one_key_serves_both_caches():
    keys = [k for k in schema() if k.startswith(("drowsy.", "decay."))]
    assert sorted(keys) == ["decay.interval", "drowsy.hide_wakeup", "drowsy.period", "drowsy.vdd",
                            "drowsy.wakeup_cycles", "drowsy.window"]
    # Techniques that declare the same parameter declare it identically.
    specs = {}
    for t in _core.techniques():
        for p in t["params"]:
            specs.setdefault(p["name"], []).append(p)
    for name, same in specs.items():
        assert all(s == same[0] for s in same), name
    # drowsy.window reaches the L2 technique as well as the L1D one.
    short = simulate(BASE.replace(**{"l2.power": "drowsy"}), one_warp(P1))
    long = simulate(BASE.replace(**{"l2.power": "drowsy", "drowsy.window": 50}), one_warp(P1))
    assert long["l2_resid_on"] == short["l2_resid_on"] + 50


def test_hide_wakeup_is_a_flag():
    """True and false as for every other flag (TOML specs, --set); 1 and 0 mean the same."""
    assert schema()["drowsy.hide_wakeup"].type == "bool" and schema()["drowsy.hide_wakeup"].default is False
    on = BASE.replace(**{"drowsy.hide_wakeup": True})
    assert on["drowsy.hide_wakeup"] is True and on.key() == BASE.replace(**{"drowsy.hide_wakeup": 1}).key()
    assert BASE.replace(**{"drowsy.hide_wakeup": 0}).key() == BASE.key()
    spec = load_spec("drowsy_power")   # "drowsy.hide_wakeup" = true
    assert presets.get(spec["preset"]).replace(**spec["set"])["drowsy.hide_wakeup"] is True
    one = simulate(drowsy(**{"drowsy.wakeup_cycles": 2, "drowsy.hide_wakeup": 1}), one_warp(P1))
    assert one["cycles"] == simulate(drowsy(**{"drowsy.wakeup_cycles": 2, "drowsy.hide_wakeup": True}),
                                     one_warp(P1))["cycles"]


def test_bad_drowsy_settings_are_refused():
    with pytest.raises(ValueError, match=r"drowsy.window \(100\) and drowsy.period \(64\) select different"):
        Config({"l1d.power": "drowsy", "drowsy.window": 100, "drowsy.period": 64})
    # the same keys are harmless when no cache uses the drowsy technique
    Config({"drowsy.window": 100, "drowsy.period": 64})
    with pytest.raises(ValueError, match="drowsy.vdd must be between 0.2 and 0.9, got 0.1"):
        Config({"drowsy.vdd": 0.1})
    with pytest.raises(TypeError, match="drowsy.hide_wakeup must be a bool, got 2"):
        Config({"drowsy.hide_wakeup": 2})
    with pytest.raises(ValueError, match="decay.interval must be between 1"):
        Config({"decay.interval": 0})
    with pytest.raises(ValueError, match="l2.power must be one of none, drowsy, decay"):
        Config({"l2.power": "sleepy"})
    with pytest.raises(ValueError, match="drowsy Vdd must be between 0.2 and 0.9"):
        energy.EnergyParams(drowsy_vdd=1.0)
    with pytest.raises(ValueError, match="dwl keys must be 'l1d' or 'l2'"):
        energy.EnergyParams(dwl={"l3": True})


def test_drowsy_vdd_selects_table3_leakage_without_simulating_again():
    r = simulate(drowsy(**{"drowsy.vdd": 0.3}), one_warp(P1))
    at03 = energy.compute(r, E32)
    at04 = energy.compute(r, energy.EnergyParams(node_nm=32, drowsy_vdd=0.4))
    ratio = at03["l2_static_drowsy_energy_j"] / at04["l2_static_drowsy_energy_j"]
    assert ratio == pytest.approx(0.36 / 0.53)
    assert at03["l2_wakeup_energy_j"] / at04["l2_wakeup_energy_j"] == pytest.approx(0.6 / 0.5)


@pytest.mark.parametrize("power,bits", [("drowsy", 1), ("decay", 2)])
def test_a_switched_off_l1d_gates_its_drowsy_bits_and_decay_counters_with_its_lines(power, bits):
    # With no L1D at all (l1d.admission = off) every line, tag and per-line bit is gated for the whole
    # run: the drowsy bits and decay counters leak the gated fraction, as the tags do, and the gated
    # counters are never ticked. The L2's bits keep leaking in full.
    r = simulate(BASE.replace(**{"l1d.admission": "off", "l1d.power": power, "l2.power": power,
                                 "decay.interval": 100}), one_warp(P1))
    assert r["l1d_accesses"] == 0 and r["l1d_resid_off"] == L1_LINES * r["cycles"]
    e = energy.compute(r, E32)
    l1d_bit_w = 0.0872e-3 / 1024   # 16 KB 4-way at 32 nm: a line's data leakage over its 1024 bits
    assert e["l1d_overhead_energy_j"] == pytest.approx(0.03 * l1d_bit_w * bits * L1_LINES * r["cycles"] / CLOCK,
                                                      rel=1e-9, abs=0)
    assert e["l1d_dynamic_energy_j"] == 0
    l2_leak = 0.0795e-3 / 1024 * bits * L2_LINES * r["cycles"] / CLOCK   # 64 KB 8-way at 32 nm
    if power == "drowsy":
        assert e["l2_overhead_energy_j"] == pytest.approx(l2_leak, rel=1e-9, abs=0)
    else:   # the leakage, and the ticks and resets of the L2's counters
        assert e["l2_overhead_energy_j"] > 1.5 * l2_leak


def test_experiment_histogram_shares_by_hand():
    # One workload whose caches hold 10 lines: 4 never accessed, 1 once, 2 in A8_15, 3 in A16_31; and
    # 10 access pairs: 5 at 0 cycles, 1 in I32_63, 2 in I64_127, 2 in I128_255.
    import pandas as pd

    from gpucachex.experiments import drowsy as exp

    row = {"workload": "w"}
    for level in ("l1d", "l2"):
        row.update({f"{level}_{b}": 0 for b in sim.ACCESS_BUCKETS + sim.INTERVAL_BUCKETS})
        row.update({f"{level}_A0": 4, f"{level}_A1": 1, f"{level}_A8_15": 2, f"{level}_A16_31": 3,
                    f"{level}_I0": 5, f"{level}_I32_63": 1, f"{level}_I64_127": 2, f"{level}_I128_255": 2,
                    f"{level}_inter_access_cycles": 50.0, f"{level}_block_utilisation": 0.5,
                    f"{level}_data_accesses": 20})
    hist = exp.histogram_frame(pd.DataFrame([row])).set_index("cache")
    l1 = hist.loc["L1"]
    assert l1["blocks_lt_16_accesses"] == pytest.approx(0.7)   # A0, A1, A8_15: fewer than 16 accesses
    assert l1["blocks_lt_8_accesses"] == pytest.approx(0.5)
    assert l1["inter_access_0"] == pytest.approx(0.5)
    assert l1["inter_access_ge_64"] == pytest.approx(0.4)      # I64_127 and I128_255, not I32_63
    assert l1["inter_access_ge_128"] == pytest.approx(0.2)
