"""AdmL1D and the L1D admission techniques on hand-built kernels: the warm-up counts exactly the
fails and accesses the baseline made before its end, the decision lands exactly at its end, a
switched-off L1D is never used again and leaks only its gated residual, dirty lines are written
back, per-SM scope, the no-L1D reference, the energy of the mechanism, and configuration errors."""
import math

import numpy as np
import pytest

from gpucachex import _core, energy, presets, simulate
from gpucachex.config import Config, schema
from gpucachex.techniques import admL1D as adm_py
from approx import approx_j
from tracebuild import KernelSpec, alu, build, ld, lanes, st

# One SM and a perfect instruction cache, as in test_timing, on AdmL1D's configuration.
ONE_SM = presets.get("admL1D").replace(**{"core.sms": 1, "l1i.size_kb": 0, "core.schedulers": 1})
ADM = {"l1d.admission": "admL1D"}


def one_warp(program):
    return build([KernelSpec([[program]])])


def conflicting_lines(n, base=0x100000, first_reg=1):
    """Loads of n different lines that all map to L1D set 0 (stride = sets x line bytes)."""
    return [ld(first_reg + i % 200, lanes(base + 128 * 32 * i)) for i in range(n)]


def mshr_saturating(n=40):
    # With 2 MSHRs, 40 independent misses keep the LD/ST unit retrying (an MSHR-entry fail every
    # cycle) for 19 round trips to DRAM: R-to-A in the hundreds.
    return one_warp(conflicting_lines(n))


SATURATE = ONE_SM.replace(**{"l1d.mshr_entries": 2})


def hitting_program(loads=100):
    # A chain of loads of one line, each using the previous one's value: one miss, then hits, and
    # never more than one request outstanding (no reservation fail even with 2 MSHRs).
    prog = []
    for i in range(loads):
        prog += [ld(1 + 2 * (i % 60), lanes(0x2000000), src=(2 * (i % 60),) if i else ()),
                 alu(dst=(2 + 2 * (i % 60),), src=(1 + 2 * (i % 60),))]
    return prog


def l1_hitting(loads=100):
    return one_warp(hitting_program(loads))


def cumulative_at(result, cycle, column):
    ts = result.raw["timeseries"]
    return ts[column][ts["cycle"].index(cycle)]


# ---- the known answers ------------------------------------------------------------------------

@pytest.mark.parametrize("warmup", [300, 1000, 1777])
def test_mshr_saturating_kernel_is_switched_off_exactly_at_the_end_of_warmup(warmup):
    trace = mshr_saturating()
    base = simulate(SATURATE.replace(**{"sim.timeseries_interval": warmup}), trace, detail=True)
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": warmup}), trace, detail=True)
    assert warmup < r["cycles"] < base["cycles"]  # the decision comes inside the run, which it shortens
    # The warm-up counted exactly what the baseline did in cycles [0, warmup): its time-series
    # sample at `warmup` holds the totals before that cycle (skipped retry cycles included).
    assert r["admL1D_warmup_fails"] == cumulative_at(base, warmup, "l1d_fails") > 0
    assert r["admL1D_warmup_accesses"] == cumulative_at(base, warmup, "l1d_accesses") > 0
    assert r["admL1D_r_to_a"] == pytest.approx(r["admL1D_warmup_fails"] / r["admL1D_warmup_accesses"])
    assert r["admL1D_r_to_a"] > 3
    assert r["admL1D_decided"] == 1 and r["admL1D_decision_cycle"] == warmup
    assert r["admL1D_switched_off"] == 1 and r["admL1D_sms_off"] == 1
    # From the decision on the L1D is not used: every access and fail of the run was in the warm-up.
    assert r["l1d_accesses"] == r["admL1D_warmup_accesses"]
    assert r["l1d_reservation_fails"] == r["admL1D_warmup_fails"]
    # The baseline's R-to-A over the run is the paper's: its reservation fails per access (each of
    # the 40 loads is accepted once), not per attempt.
    assert base["l1d_accesses"] == 40
    assert base["l1d_r_to_a"] == base["l1d_reservation_fails"] / 40 > 3
    # Every line was ON until the decision and OFF (gated) after it.
    res = r.line_residency("l1d")
    assert np.all(res[:, 0] == warmup) and np.all(res[:, 1] == 0) and np.all(res[:, 2] == r["cycles"] - warmup)
    # The run still completes every instruction and every request is answered.
    assert r["warp_insts"] == base["warp_insts"] and r.raw["requests_live"] == 0


def test_kernel_that_hits_in_l1_keeps_its_l1d_and_runs_as_the_baseline():
    trace = l1_hitting()
    base = simulate(ONE_SM, trace)
    r = simulate(ONE_SM.replace(**ADM, **{"admL1D.warmup_cycles": 200}), trace)
    assert base["l1d_hit_rate"] > 0.95 and base["cycles"] > 1000 and base["l1d_reservation_fails"] == 0
    assert r["admL1D_decided"] == 1 and r["admL1D_decision_cycle"] == 200
    assert r["admL1D_r_to_a"] < 3 and r["admL1D_switched_off"] == 0
    # Nothing changed: the same cycles and the same L1D statistics.
    for key in ("cycles", "l1d_accesses", "l1d_hits", "l1d_misses", "l1d_reservation_fails", "l1d_resid_on"):
        assert r[key] == base[key], key


def test_the_comparator_is_strictly_greater_than_the_threshold():
    trace = mshr_saturating()
    cfg = SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": 500})
    ratio = simulate(cfg, trace)["admL1D_r_to_a"]
    assert simulate(cfg.replace(**{"admL1D.b_threshold": ratio * (1 + 1e-9)}), trace)["admL1D_switched_off"] == 0
    assert simulate(cfg.replace(**{"admL1D.b_threshold": ratio * (1 - 1e-9)}), trace)["admL1D_switched_off"] == 1


def test_a_run_shorter_than_the_warmup_never_decides():
    trace = l1_hitting(loads=3)
    base = simulate(ONE_SM, trace)
    r = simulate(ONE_SM.replace(**ADM, **{"admL1D.warmup_cycles": 10 ** 9, "admL1D.b_threshold": 0}), trace)
    assert r["admL1D_decided"] == 0 and math.isnan(r["admL1D_decision_cycle"])
    assert r["admL1D_switched_off"] == 0 and r["cycles"] == base["cycles"]
    # The counters then cover the whole run.
    assert r["admL1D_warmup_accesses"] == base["l1d_accesses"]


def test_switching_off_writes_dirty_local_lines_back():
    # A local line made dirty by a store hit (set 1), then MSHR-saturating loads (set 0) that never
    # evict it: the baseline keeps the dirty line to the end; AdmL1D writes it back at the decision.
    local = lanes(0x80000 + 128)
    prog = ([ld(250, local, opcode="LDL"), alu(dst=(251,), src=(250,)), st(local, opcode="STL", src=(251,))]
            + conflicting_lines(40))
    trace = one_warp(prog)
    base = simulate(SATURATE, trace)
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": 1500}), trace)
    assert r["admL1D_switched_off"] == 1
    assert base["l1d_writebacks"] == 0
    assert r["l1d_writebacks"] == 1
    assert r["l2_write_accesses"] == base["l2_write_accesses"] + 1


def test_switched_off_l1d_sends_local_memory_to_l2():
    # After the switch-off a local store and load go to the L2 (the L1D holds nothing any more).
    local = lanes(0x80000 + 128)
    prog = conflicting_lines(40) + [st(local, opcode="STL", src=(1,)), ld(2, local, opcode="LDL")]
    trace = one_warp(prog)
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": 500}), trace)
    assert r["admL1D_switched_off"] == 1
    assert r["l1d_accesses"] == r["admL1D_warmup_accesses"]
    assert r["l2_write_accesses"] == 1 and r["l2_read_accesses"] >= 41


def test_per_sm_scope_switches_off_only_the_sm_that_fails():
    # Two SMs: CTA 0 (SM 0) saturates its MSHRs, CTA 1 (SM 1) hits in its L1D.
    cfg = SATURATE.replace(**{"core.sms": 2}, **ADM, **{"admL1D.warmup_cycles": 1000})
    trace = build([KernelSpec([[conflicting_lines(40)], [hitting_program(100)]])])
    per = simulate(cfg.replace(**{"admL1D.scope": "per_sm"}), trace)
    assert (per["admL1D_sm0_off"], per["admL1D_sm1_off"]) == (1, 0)
    assert per["admL1D_sms_off"] == 1 and per["admL1D_switched_off"] == 0.5
    assert per["admL1D_sm0_r_to_a"] > 3 > per["admL1D_sm1_r_to_a"]
    assert per["admL1D_sm_r_to_a_min"] == per["admL1D_sm1_r_to_a"]
    assert per["admL1D_sm_r_to_a_max"] == per["admL1D_sm0_r_to_a"]
    frame = adm_py.per_sm(per)
    assert list(frame["switched_off"]) == [True, False]
    assert frame["fails"].sum() == per["l1d_reservation_fails"]
    # The global decision uses the sums of both SMs' counters, and applies to both.
    glob = simulate(cfg, trace)
    total = (glob["admL1D_warmup_fails"], glob["admL1D_warmup_accesses"])
    assert total == (per["admL1D_warmup_fails"], per["admL1D_warmup_accesses"])
    expected = total[0] > 3 * total[1]
    assert glob["admL1D_sm0_off"] == glob["admL1D_sm1_off"] == glob["admL1D_switched_off"] == expected


def test_switching_off_with_fetches_in_flight_keeps_every_invariant():
    # A mixed kernel (dirty local lines, stores, many misses in flight when the L1D goes off), also on
    # a sectored L1D (partially valid lines being fetched), threshold 0 so that any fail switches the
    # L1D off: every request is answered, residencies add up, every line is OFF from the decision on.
    from test_timing import mixed_trace

    trace = mixed_trace(5, ctas=30)
    warmup = 1000
    for preset in ("admL1D", "ata"):
        cfg = presets.get(preset).replace(**ADM, **{"admL1D.warmup_cycles": warmup, "admL1D.b_threshold": 0,
                                                    "l1d.mshr_entries": 8})
        r = simulate(cfg, trace, detail=True)
        assert r["admL1D_switched_off"] == 1 and r["admL1D_warmup_fails"] > 0
        assert r.raw["requests_live"] == 0 and r["warp_insts"] == trace.summary()["warp_insts"]
        res = r.line_residency("l1d")
        assert np.all(res.sum(axis=1) == r["cycles"])
        assert np.all(res[:, 0] == warmup) and np.all(res[:, 2] == r["cycles"] - warmup)
        assert r["l1d_live_cycles"] + r["l1d_dead_nodata"] + r["l1d_dead_unused"] == r["l1d_line_cycles"]
        assert r["l1d_hits"] + r["l1d_misses"] == r["l1d_accesses"]


def test_same_seed_same_result():
    trace = mshr_saturating()
    cfg = SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": 700, "admL1D.scope": "per_sm"})
    assert simulate(cfg, trace).metrics == simulate(cfg, trace).metrics


# ---- the no-L1D reference -----------------------------------------------------------------------

def test_off_means_no_l1d_from_cycle_zero():
    trace = l1_hitting()
    base = simulate(ONE_SM, trace)
    off = simulate(ONE_SM.replace(**{"l1d.admission": "off"}), trace)
    assert off["l1d_accesses"] == 0 and off["l1d_tag_lookups"] == 0
    assert off["l2_read_accesses"] == base["l1d_accesses"]  # every load goes to the L2
    assert off["l1d_resid_off"] == off["l1d_line_cycles"]
    assert off["cycles"] > base["cycles"]  # the kernel lived on L1D hits


# ---- energy ---------------------------------------------------------------------------------------

def test_switched_off_l1d_leaks_only_the_gated_residual_and_pays_for_the_counters():
    trace = mshr_saturating()
    warmup = 1000
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": warmup}), trace)
    cfg = r.config
    e, _ = energy.cache_energy("l1d", cfg["l1d.size_kb"], cfg["l1d.ways"], 45)
    clock = cfg["core.clock_mhz"] * 1e6
    lines = cfg.l1d_lines
    data = e.data_leak_mw_per_line * 1e-3 * lines * (warmup + 0.03 * (r["cycles"] - warmup)) / clock
    assert r["l1d_data_static_energy_j"] == approx_j(data)
    counters = (r["admL1D_warmup_fails"] + r["admL1D_warmup_accesses"]) * adm_py.COUNTER_PJ * 1e-12
    leak = adm_py.LEAK_UW_PER_SM * 1e-6 * r["seconds"]
    assert r["l1d_overhead_energy_j"] == approx_j(counters + leak)
    # The tags are gated with the data: full leakage before the decision, the gated fraction after.
    tag = e.tag_leak_mw_per_line * 1e-3 * lines * (warmup + 0.03 * (r["cycles"] - warmup)) / clock
    assert r["l1d_tag_static_energy_j"] == approx_j(tag)
    assert r["l1d_static_energy_j"] == approx_j(data + tag + leak)
    # Overhead parameters are energy parameters: recomputed without simulating.
    free = energy.compute(r, energy.EnergyParams(extra={"admL1D_counter_pj": 0, "admL1D_leak_uw_per_sm": 0}))
    assert free["l1d_overhead_energy_j"] == 0
    # The run's L1D energy falls to a fraction of the baseline's.
    base = simulate(SATURATE, trace)
    assert r["l1d_energy_j"] < 0.5 * base["l1d_energy_j"]


def test_counter_energy_by_hand_on_every_sm():
    # 0.1 pJ per counter update (a warm-up fail or access) and 3 uW of leakage in each of the
    # preset's 15 SMs, at 45 nm.
    cfg = presets.get("admL1D", **ADM)
    out = adm_py.overhead({"admL1D_warmup_fails": 700, "admL1D_warmup_accesses": 300, "seconds": 2e-3}, cfg,
                          energy.EnergyParams())
    assert out["l1d_dynamic_j"] == pytest.approx(1000 * 0.1e-12, rel=1e-9, abs=0)
    assert out["l1d_static_j"] == pytest.approx(15 * 3e-6 * 2e-3, rel=1e-9, abs=0)

def test_switched_off_l1d_gates_its_decay_counters_after_the_decision():
    # Decay's per-line counters are gated with the lines and tags from the decision on: full leakage
    # and ticks before it, the gated fraction and no ticks after.
    warmup, interval = 1000, 400
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": warmup, "l1d.power": "decay",
                                           "decay.interval": interval}), mshr_saturating())
    assert r["admL1D_switched_off"] == 1 and r["admL1D_decision_cycle"] == warmup
    cfg = r.config
    e, _ = energy.cache_energy("l1d", cfg["l1d.size_kb"], cfg["l1d.ways"], 45)
    lines, clock = cfg.l1d_lines, cfg["core.clock_mhz"] * 1e6
    bit_w = e.data_leak_mw_per_line * 1e-3 / 1024
    # Without AdmL1D's own counters, the L1D's overhead is decay's.
    d = energy.compute(r, {"extra": {"admL1D_counter_pj": 0, "admL1D_leak_uw_per_sm": 0}})
    leak = 2 * bit_w * lines * (warmup + 0.03 * (r["cycles"] - warmup)) / clock
    assert d["l1d_static_energy_j"] - d["l1d_data_static_energy_j"] - d["l1d_tag_static_energy_j"] == \
        pytest.approx(leak, rel=1e-9, abs=0)
    # Counter writes: 2 bits per access, and per tick of each line before the decision (4 ticks per
    # interval), within one tick of every line.
    bit_pj = e.write_line_pj / 1024
    ticks = (d["l1d_overhead_energy_j"] - leak) / (2 * bit_pj * 1e-12) - r["l1d_accesses"]
    assert abs(ticks - lines * warmup * 4 / interval) <= lines


def test_counter_energy_follows_the_node_as_the_l1d_does():
    r = simulate(SATURATE.replace(**ADM, **{"admL1D.warmup_cycles": 1000}), mshr_saturating())
    no_overhead = {"admL1D_counter_pj": 0, "admL1D_leak_uw_per_sm": 0}
    terms = {}
    for node in (45, 32):
        e = energy.compute(r, {"node_nm": node})
        bare = energy.compute(r, {"node_nm": node, "extra": no_overhead})
        terms[node] = {"dynamic": e["l1d_dynamic_energy_j"] - bare["l1d_dynamic_energy_j"],
                       "static": e["l1d_static_energy_j"] - bare["l1d_static_energy_j"],
                       "read": e["l1d_data_read_energy_j"], "leak": e["l1d_static_on_energy_j"]}
    updates = r["admL1D_warmup_fails"] + r["admL1D_warmup_accesses"]
    assert terms[45]["dynamic"] == approx_j(updates * adm_py.COUNTER_PJ * 1e-12)
    assert terms[45]["static"] == pytest.approx(adm_py.LEAK_UW_PER_SM * 1e-6 * r["seconds"])
    # 32 nm: the counters' energy scales as the L1D's data reads, their leakage as its data array's.
    assert terms[32]["dynamic"] / terms[45]["dynamic"] == pytest.approx(terms[32]["read"] / terms[45]["read"])
    assert terms[32]["static"] / terms[45]["static"] == pytest.approx(terms[32]["leak"] / terms[45]["leak"])
    assert terms[32]["static"] / terms[45]["static"] == pytest.approx(0.0872 / 0.1633)  # 16 KB 4-way CACTI


def test_no_l1d_leaks_only_the_gated_fraction_tags_included():
    trace = l1_hitting()
    base = simulate(ONE_SM, trace)
    off = simulate(ONE_SM.replace(**{"l1d.admission": "off"}), trace)
    cfg = off.config
    e, _ = energy.cache_energy("l1d", cfg["l1d.size_kb"], cfg["l1d.ways"], 45)
    clock = cfg["core.clock_mhz"] * 1e6
    assert off["l1d_tag_static_energy_j"] == approx_j(
        0.03 * e.tag_leak_mw_per_line * 1e-3 * cfg.l1d_lines * off["cycles"] / clock)
    for key in ("l1d_tag_static_energy_j", "l1d_static_energy_j"):
        assert off[key] / off["seconds"] == pytest.approx(0.03 * base[key] / base["seconds"]), key
    # The gated fraction is an energy parameter: tags follow it when it is recomputed.
    gated10 = energy.compute(off, {"off_leakage_fraction": 0.1})
    assert gated10["l1d_tag_static_energy_j"] == approx_j(off["l1d_tag_static_energy_j"] / 0.03 * 0.1)


def test_per_sm_switch_off_gates_the_tags_of_the_switched_off_sm_only():
    warmup = 1000
    cfg = SATURATE.replace(**{"core.sms": 2}, **ADM, **{"admL1D.warmup_cycles": warmup, "admL1D.scope": "per_sm"})
    trace = build([KernelSpec([[conflicting_lines(40)], [hitting_program(100)]])])
    r = simulate(cfg, trace)
    assert (r["admL1D_sm0_off"], r["admL1D_sm1_off"]) == (1, 0)
    per_sm = r.config.l1d_lines  # lines of one SM's L1D
    # The line-cycles AdmL1D reports switched off are exactly those the core counted OFF.
    assert adm_py.switched_off_line_cycles(r.metrics, r.config) == per_sm * (r["cycles"] - warmup) == r["l1d_resid_off"]
    e, _ = energy.cache_energy("l1d", cfg["l1d.size_kb"], cfg["l1d.ways"], 45)
    clock = cfg["core.clock_mhz"] * 1e6
    line_cycles = per_sm * r["cycles"] + per_sm * (warmup + 0.03 * (r["cycles"] - warmup))
    assert r["l1d_tag_static_energy_j"] == approx_j(e.tag_leak_mw_per_line * 1e-3 * line_cycles / clock)
    # From the flat metrics alone (a sweep row), the same energy.
    assert energy.compute(metrics=r.metrics, config=r.config) == energy.compute(r)


# ---- configuration ------------------------------------------------------------------------------

def test_parameters_are_declared_with_full_names_and_resolve_by_suffix():
    keys = schema()
    assert keys["l1d.admL1D.warmup_cycles"].default == 10000 and keys["l1d.admL1D.warmup_cycles"].type == "int"
    assert keys["l1d.admL1D.b_threshold"].default == 3.0
    scope = keys["l1d.admL1D.scope"]
    assert scope.type == "choice" and scope.choices == ("global", "per_sm") and scope.default == "global"
    cfg = Config({"admL1D.warmup_cycles": 5000, "admL1D.scope": "per_sm"})
    assert cfg["l1d.admL1D.warmup_cycles"] == 5000 and cfg["l1d.admL1D.scope"] == "per_sm"
    tech = {t["name"]: t for t in _core.techniques()}["admL1D"]
    assert [p["choices"] for p in tech["params"]] == [None, None, ["global", "per_sm"]]


@pytest.mark.parametrize("change, error, match", [
    ({"admL1D.scope": "per_cluster"}, ValueError, r"l1d\.admL1D\.scope must be one of global, per_sm, got 'per_cluster'"),
    ({"admL1D.scope": 1}, TypeError, r"l1d\.admL1D\.scope must be a string"),
    ({"admL1D.warmup_cycles": 0}, ValueError, r"l1d\.admL1D\.warmup_cycles must be between 1 and"),
    ({"admL1D.warmup_cycles": 10.5}, ValueError, r"l1d\.admL1D\.warmup_cycles must be an integer"),
    ({"admL1D.b_threshold": -1}, ValueError, r"l1d\.admL1D\.b_threshold must be between 0 and"),
    ({"l1d.admission": "sometimes"}, ValueError, r"l1d\.admission must be one of always, off, admL1D, got 'sometimes'"),
])
def test_bad_admL1D_settings_name_the_key(change, error, match):
    with pytest.raises(error, match=match):
        presets.get("admL1D", **change)


def test_the_core_checks_choice_parameters_by_name():
    # What the binding accepts regardless of the Python-side schema.
    with pytest.raises(ValueError, match=r"l1d\.admL1D\.scope must be one of global,per_sm, got the number 1"):
        _core.check_config({"l1d.admL1D.scope": 1})
    with pytest.raises(ValueError, match=r"l1d\.admL1D\.scope must be one of global,per_sm, got 'both'"):
        _core.check_config({"l1d.admL1D.scope": "both"})
    with pytest.raises(ValueError, match=r"l1d\.admL1D\.warmup_cycles expects a number, got 'long'"):
        _core.check_config({"l1d.admL1D.warmup_cycles": "long"})
    with pytest.raises(ValueError, match=r"unknown configuration key 'l1d\.admL1D\.colour'"):
        _core.check_config({"l1d.admL1D.colour": "red"})
    _core.check_config({"l1d.admL1D.scope": "per_sm"})


def test_every_choice_parameter_is_declared_consistently():
    # Contract over the registry: a choice parameter is an integer index from 0 to names - 1.
    for t in _core.techniques() + _core.policies():
        for p in t["params"]:
            if p["choices"] is None:
                continue
            assert p["integer"] and p["min"] == 0 and p["max"] == len(p["choices"]) - 1, p["name"]
            assert 0 <= p["default"] <= p["max"] and len(set(p["choices"])) == len(p["choices"]), p["name"]


def test_a_partially_valid_line_being_fetched_at_the_switch_off_is_dropped_when_its_fill_arrives():
    # Sectored L1D: a local line gets sector 0 and dirties it (store hit); a load of sector 1 then
    # fetches into the same line (reserved, sector 0 valid and dirty); three loads of other lines fill
    # both MSHRs and fail, so the L1D goes off while sector 1 is in flight. The flush skips the
    # reserved line; its fill must drop it and write the dirty sector back.
    cfg = ONE_SM.replace(**{"l1d.sector_bytes": 32, "l1d.mshr_entries": 2})
    a = 0x80000
    prog = [ld(1, lanes(a, n=8), opcode="LDL"), alu(dst=(2,), src=(1,)),
            st(lanes(a, n=8), opcode="STL", src=(2,)),
            ld(3, lanes(a + 32, n=8), opcode="LDL"),
            ld(4, lanes(0x100000)), ld(5, lanes(0x200000)), ld(6, lanes(0x300000))]
    trace = one_warp(prog)
    base = simulate(cfg, trace)
    assert base["l1d_writebacks"] == 0 and base["l1d_fails_mshr_entry"] > 0
    # Sector 1's fetch (an L2 hit) is in flight from about cycle 280 to 430; decide in between.
    r = simulate(cfg.replace(**ADM, **{"admL1D.warmup_cycles": 350}), trace)
    assert r["admL1D_switched_off"] == 1
    assert r["l1d_writebacks"] == 1
    assert r["l2_write_accesses"] == base["l2_write_accesses"] + 1
    assert r.raw["requests_live"] == 0


# ---- the experiment's tables ----------------------------------------------------------------------

def _main_frame():
    """A main sweep worked by hand: 'a' gains without its L1D and AdmL1D switches it off (right),
    'b' loses without it and keeps it (right), 'c' loses without it but is switched off (wrong)."""
    import pandas as pd

    rows = []
    spec = {  # workload: (ipc always, ipc off, ipc admL1D, switched, power always, power admL1D)
        "a": (1.0, 1.2, 1.1, 1, 10.0, 4.0),
        "b": (2.0, 1.0, 2.0, 0, 10.0, 10.0),
        "c": (1.0, 0.5, 0.6, 1, 10.0, 2.0),
    }
    for w, (on, off, adm, sw, p_on, p_adm) in spec.items():
        common = dict(workload=w, cycles=1000, l1d_miss_rate=0.5, l1d_hit_rate=0.5, l1d_r_to_a=4.0,
                      admL1D_r_to_a=5.0 if sw else 1.0, admL1D_decided=1.0)
        rows.append({**common, "l1d.admission": "always", "ipc": on, "l1d_power_w": p_on, "l1d_energy_j": p_on,
                     "admL1D_switched_off": 0.0})
        rows.append({**common, "l1d.admission": "off", "ipc": off, "l1d_power_w": 1.0, "l1d_energy_j": 1.0,
                     "admL1D_switched_off": 0.0})
        rows.append({**common, "l1d.admission": "admL1D", "ipc": adm, "l1d_power_w": p_adm, "l1d_energy_j": p_adm,
                     "admL1D_switched_off": float(sw)})
    return pd.DataFrame(rows)


def test_experiment_classifies_and_summarises_by_hand():
    from gpucachex.experiments import admL1D as exp

    summary = exp.classify(_main_frame())
    s = summary.set_index("workload")
    assert list(s["type"]) == ["N", "P", "P"] and list(s["predicted"]) == ["N", "P", "N"]
    assert list(s["correct"]) == [True, True, False]
    assert s.loc["a", "ipc_admL1D_norm"] == pytest.approx(1.1)
    assert s.loc["c", "l1d_power_saving"] == pytest.approx(0.8)
    head = exp.headline(summary).set_index("metric")["ours"]
    assert head["classification_accuracy"] == pytest.approx(2 / 3)
    assert head["type_n_workloads"] == 1
    assert head["ipc_gain_type_n"] == pytest.approx(0.1)
    assert head["l1d_power_saving_type_n"] == pytest.approx(0.6)
    assert head["ipc_change_type_p_mean"] == pytest.approx(((2.0 / 2.0) + 0.6) / 2 - 1)
    assert head["ipc_change_type_p_worst"] == pytest.approx(-0.4)
    assert head["type_p_slowed_over_1pct"] == 1
    # best choices: a 1.2 (off), b 2.0 (on), c 1.0 (on): AdmL1D reaches 1.1/1.2, 1, 0.6
    assert head["decisions_within_3pct_of_best"] == 1
    assert head["ipc_vs_best_choice_mean"] == pytest.approx((1.1 / 1.2 + 1.0 + 0.6) / 3)
    assert head["ipc_change_no_l1d_all"] == pytest.approx((1.2 + 0.5 + 0.5) / 3 - 1)
    # A threshold sweep judged against the main sweep's types.
    frame = _main_frame()
    adm = frame[frame["l1d.admission"] == "admL1D"].assign(**{"l1d.admL1D.b_threshold": 3.0})
    table = exp.sweep_summary(adm, summary, "l1d.admL1D.b_threshold")
    assert table.loc[0, "accuracy"] == pytest.approx(2 / 3)
    assert table.loc[0, "type_n_switched_off"] == 1.0 and table.loc[0, "type_p_kept"] == 0.5
    assert table.loc[0, "ipc_change_type_p_worst"] == pytest.approx(-0.4)



def test_experiment_types_a_tie_as_n_and_averages_each_type_by_hand():
    # workload: (ipc always, ipc off, ipc admL1D, switched off, L1D power always, power admL1D,
    # L1D energy always, energy admL1D). d runs as fast without the L1D as with it: Type-N, which
    # AdmL1D missed. Type-N: a, d; Type-P: b, c (switched off, wrongly), e.
    import pandas as pd
    from gpucachex.experiments import admL1D as exp

    spec = {"a": (1.0, 1.2, 1.1, 1, 10.0, 4.0, 10.0, 5.0), "b": (2.0, 1.0, 2.0, 0, 10.0, 10.0, 10.0, 10.0),
            "c": (1.0, 0.5, 0.6, 1, 10.0, 2.0, 10.0, 2.0), "d": (1.0, 1.0, 1.0, 0, 10.0, 10.0, 10.0, 10.0),
            "e": (1.0, 0.8, 1.0, 0, 10.0, 10.0, 10.0, 10.0)}
    rows = []
    for w, (on, off, adm, sw, p_on, p_adm, e_on, e_adm) in spec.items():
        common = dict(workload=w, cycles=1000, l1d_miss_rate=0.5, l1d_hit_rate=0.5, l1d_r_to_a=4.0,
                      admL1D_r_to_a=5.0 if sw else 1.0, admL1D_decided=1.0)
        for mode, ipc, power, joules in (("always", on, p_on, e_on), ("off", off, 1.0, 1.0), ("admL1D", adm, p_adm, e_adm)):
            rows.append({**common, "l1d.admission": mode, "ipc": ipc, "l1d_power_w": power, "l1d_energy_j": joules,
                         "admL1D_switched_off": float(sw and mode == "admL1D")})
    frame = pd.DataFrame(rows)
    summary = exp.classify(frame)
    s = summary.set_index("workload")
    assert "".join(s["type"]) == "NPPNP" and "".join(s["predicted"]) == "NPNPP"
    assert s.loc["a", "l1d_power_saving"] == pytest.approx(0.6) and s.loc["a", "l1d_energy_saving"] == pytest.approx(0.5)
    head = exp.headline(summary).set_index("metric")["ours"]
    assert head["type_n_workloads"] == 2
    assert head["classification_accuracy"] == pytest.approx(3 / 5)           # a, b, e
    assert head["type_n_switched_off"] == pytest.approx(1 / 2)               # a of a, d
    assert head["type_p_kept"] == pytest.approx(2 / 3)                       # b, e of b, c, e
    assert head["ipc_gain_type_n"] == pytest.approx((1.1 + 1.0) / 2 - 1)     # arithmetic mean of a and d
    assert head["ipc_gain_type_n_geomean"] == pytest.approx(1.1 ** 0.5 - 1)  # geometric mean of 1.1 and 1.0
    assert head["l1d_power_saving_type_n"] == pytest.approx((0.6 + 0.0) / 2)
    assert head["l1d_energy_saving_type_n"] == pytest.approx((0.5 + 0.0) / 2)
    # The same runs as a one-point threshold sweep, judged against the types above.
    adm = frame[frame["l1d.admission"] == "admL1D"].assign(**{"l1d.admL1D.b_threshold": 3.0})
    row = exp.sweep_summary(adm, summary, "l1d.admL1D.b_threshold").iloc[0]
    assert row["workloads"] == 5 and row["accuracy"] == pytest.approx(3 / 5)
    assert row["switched_off"] == pytest.approx(2 / 5) and row["type_n_switched_off"] == pytest.approx(1 / 2)
    assert row["type_p_kept"] == pytest.approx(2 / 3)
    assert row["ipc_gain_type_n"] == pytest.approx(0.05)
    assert row["ipc_change_type_p_mean"] == pytest.approx((1.0 + 0.6 + 1.0) / 3 - 1)
    assert row["l1d_power_saving_type_n"] == pytest.approx(0.3)              # a 0.6, d 0: not c's 0.8

def test_fig5_marks_the_threshold_the_runs_used():
    """The dotted line in Fig. 5b is the B-threshold of the runs, not the paper's 3 whatever they used."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from gpucachex.experiments import admL1D as exp

    summary = exp.classify(_main_frame())
    scope_rows = pd.DataFrame({"workload": ["a", "b", "c"], "admL1D_sm_r_to_a_min": [0.5, 1.0, 2.0],
                               "admL1D_sm_r_to_a_max": [1.0, 4.0, 9.0]})
    per_sm = pd.DataFrame({"sm": [0, 1], "accesses": [10, 12], "misses": [4, 5], "fails": [30, 2]})
    fig = exp.figure5(per_sm, "a", scope_rows, summary, threshold=5.0)
    dotted = [line for line in fig.axes[1].get_lines() if line.get_linestyle() == ":"]
    assert [tuple(line.get_ydata()) for line in dotted] == [(5.0, 5.0)]
    plt.close(fig)


def test_experiment_refuses_several_seeds_for_its_time_series_before_any_run(tmp_path, monkeypatch):
    from gpucachex.experiments import Context, experiments_dir, get

    specs = tmp_path / "specs"
    specs.mkdir()
    for src in experiments_dir().glob("admL1D_*.toml"):
        (specs / src.name).write_text(src.read_text().replace("seeds = [0]", "seeds = [0, 1]"))
    monkeypatch.setenv("GPUCACHEX_EXPERIMENTS", str(specs))
    with pytest.raises(ValueError, match=r"admL1D_timeseries\.toml: Figs\. 2 and 5 draw one run per workload, so this "
                                         r"spec takes one seed, got seeds = \[0, 1\]"):
        get("admL1D").run(Context(tmp_path / "out", jobs=1))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_experiment_runs_end_to_end_on_tiny_workloads(tmp_path, monkeypatch):
    # The experiment's own specs, cut down to tiny workloads and a short warm-up.
    import tomllib

    from gpucachex.experiments import Context, experiments_dir, get

    specs = tmp_path / "specs"
    specs.mkdir()
    for src in experiments_dir().glob("admL1D_*.toml"):
        with open(src, "rb") as f:
            spec = tomllib.load(f)
        lines = [f'title = "{spec["title"]}"', 'preset = "admL1D"',
                 'workloads = ["sgemm", "conv3d", "bfs", "fwt"]', 'size = "tiny"', "seeds = [0]", "[set]"]
        if "l1d.admL1D.warmup_cycles" not in spec.get("grid", {}):   # a key is fixed or swept, not both
            lines.append('"l1d.admL1D.warmup_cycles" = 500')
        lines += [f'"{k}" = {v!r}' if not isinstance(v, str) else f'"{k}" = "{v}"'
                  for k, v in spec.get("set", {}).items() if k != "l1d.admL1D.warmup_cycles"]
        lines.append("[grid]")
        lines += [f'"{k}" = {[x for x in v][:3]!r}'.replace("'", '"') for k, v in spec.get("grid", {}).items()]
        (specs / src.name).write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("GPUCACHEX_EXPERIMENTS", str(specs))
    ctx = Context(tmp_path / "out", jobs=2)
    get("admL1D").run(ctx)
    figures = {o.name for o in ctx.outputs if o.kind == "figure"}
    assert figures == {"admL1D_fig1", "admL1D_fig2", "admL1D_fig5", "admL1D_fig6", "admL1D_fig7",
                       "admL1D_threshold", "admL1D_warmup"}
    from pathlib import Path

    assert all(Path(p).is_file() for o in ctx.outputs for p in o.paths)
    import pandas as pd

    summary = pd.read_csv(tmp_path / "out" / "admL1D_summary.csv")
    assert set(summary["workload"]) == {"sgemm", "conv3d", "bfs", "fwt"}
    assert set(summary["type"]) <= {"N", "P"}
    head = pd.read_csv(tmp_path / "out" / "admL1D_headline.csv").set_index("metric")
    assert head.loc["classification_accuracy", "ours"] == pytest.approx(summary["correct"].mean())


@pytest.mark.slow
def test_notebook_runs(monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    from pathlib import Path

    monkeypatch.setenv("GPUCACHEX_NOTEBOOK_SIZE", "tiny")
    path = Path(__file__).resolve().parents[1] / "notebooks" / "admL1D.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
