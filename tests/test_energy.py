"""The energy model's plumbing: CACTI table lookup, the Table 3 drowsy leakage, energy computed
from a Result equal to energy computed from its flat metrics (what sweeps store), and bad energy
parameters refused by name."""
from dataclasses import replace

import pytest

from gpucachex import energy, presets, simulate, workloads
from approx import approx_j


def test_drowsy_leakage_follows_table3():
    assert energy.drowsy_leakage_fraction("l1d", 0.4) == pytest.approx(0.08 / 1.081)
    assert energy.drowsy_leakage_fraction("l2", 0.4) == pytest.approx(0.53 / 6.7)
    assert energy.drowsy_leakage_fraction("l2", 0.9) == pytest.approx(1.0)
    assert energy.drowsy_leakage_fraction("l1d", 0.35) == pytest.approx((0.056 + 0.08) / 2 / 1.081)
    # "Even when Vdd is reduced to 0.4 V, the static power is less than 8% of ... full Vdd."
    assert energy.drowsy_leakage_fraction("l1d", 0.4) < 0.08 and energy.drowsy_leakage_fraction("l2", 0.4) < 0.08
    with pytest.raises(ValueError, match="drowsy Vdd must be between 0.2 and 0.9"):
        energy.drowsy_leakage_fraction("l1d", 0.1)


def test_cache_energy_lookup():
    exact, note = energy.cache_energy("l1d", 16, 4, 45)
    assert note == "" and exact.read_line_pj == pytest.approx(99.08)
    near, note = energy.cache_energy("l1d", 64, 64, 45)
    assert "64 KB 16-way" in note and near.tag_pj == pytest.approx(5.530 * 4)
    # a tag's leakage scales with the ways as its lookup does; the data array's terms do not
    assert near.tag_leak_mw_per_line == pytest.approx(0.01693 * 4)
    assert (near.read_line_pj, near.data_leak_mw_per_line) == (113.08, 0.1496)
    with pytest.raises(ValueError, match="no energy table for l2 at 7 nm"):
        energy.cache_energy("l2", 128, 16, 7)
    with pytest.raises(ValueError, match="segment_bytes must be 4, 8, 16 or 32"):
        energy.EnergyParams(segment_bytes=3)


def test_energy_from_metrics_equals_energy_from_result():
    r = simulate(presets.get("gtx480"), workloads.make("bfs", size="tiny"))
    again = energy.compute(metrics=r.metrics, config=r.config)
    for key, value in energy.compute(r).items():
        assert again[key] == approx_j(value)
    # static energy of an always-on cache: every line leaks for the whole run
    cfg = r.config
    e, _ = energy.cache_energy("l2", cfg["l2.size_kb"] / cfg["l2.partitions"], cfg["l2.ways"], 45)
    expected = (e.data_leak_mw_per_line + e.tag_leak_mw_per_line) * 1e-3 * cfg.l2_lines * r["seconds"]
    assert r["l2_static_energy_j"] == approx_j(expected)
    assert r["l2_energy_j"] == approx_j(r["l2_static_energy_j"] + r["l2_dynamic_energy_j"])


def test_energy_parameters_change_energy_without_simulating():
    r = simulate(presets.get("gtx480"), workloads.make("vectoradd", size="tiny"))
    at45 = energy.compute(r)
    at32 = energy.compute(r, energy.EnergyParams(node_nm=32))
    assert at32["l2_static_energy_j"] < at45["l2_static_energy_j"]
    assert at32["l1d_dynamic_energy_j"] < at45["l1d_dynamic_energy_j"]


def test_compare_gives_ratios_to_the_same_workload_and_seed_only():
    cfg = presets.get("gtx480")
    base = simulate(cfg, workloads.make("vectoradd", size="tiny"))
    drowsy = simulate(cfg.replace(**{"l1d.power": "drowsy"}), workloads.make("vectoradd", size="tiny"))
    ratios = energy.compare(drowsy, base)
    assert ratios["l1d_static_energy_j"] == pytest.approx(drowsy["l1d_static_energy_j"] / base["l1d_static_energy_j"])
    assert ratios["l1d_static_energy_j"] < 0.5
    assert energy.compare(drowsy.metrics, base.metrics) == ratios   # metrics alone say no workload
    other = simulate(cfg, "hotspot:tiny")
    with pytest.raises(ValueError, match=r"different workloads \('vectoradd' and 'hotspot'\)"):
        energy.compare(drowsy, other)
    reseeded = simulate(cfg, workloads.make("vectoradd", size="tiny"), seed=1)
    with pytest.raises(ValueError, match=r"different seeds \(0 and 1\)"):
        energy.compare(drowsy, reseeded)
    import pandas as pd   # sweep rows carry their workload and seed as columns

    row = pd.Series({**base.metrics, "workload": "vectoradd", "seed": 0})
    assert energy.compare(drowsy, row) == ratios
    with pytest.raises(ValueError, match="different workloads"):
        energy.compare(row, pd.Series({**other.metrics, "workload": "hotspot", "seed": 0}))


def test_energy_parameters_may_be_a_mapping_of_their_fields():
    r = simulate(presets.get("gtx480"), workloads.make("vectoradd", size="tiny"))
    assert energy.compute(r, {"node_nm": 32}) == energy.compute(r, energy.EnergyParams(node_nm=32))
    assert energy.compute(r, {"node_nm": 32}) != energy.compute(r)
    with pytest.raises(TypeError, match=r"unknown energy parameters \['nodes'\] \(known: drowsy_vdd, "):
        energy.compute(r, {"nodes": 32})
    with pytest.raises(TypeError, match="params must be EnergyParams or a mapping of its fields, got int"):
        energy.compute(r, 32)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"dwl": {"l1d": "no"}}, TypeError, r"dwl\['l1d'\] must be True or False, got str 'no'"),
    ({"dwl": {"l2": 0.0001}}, TypeError, r"dwl\['l2'\] must be True or False, got float 0.0001"),
    ({"dwl": {"l1d": 1}}, TypeError, r"dwl\['l1d'\] must be True or False, got int 1"),
    ({"dwl": True}, TypeError, r"dwl must be a mapping such as \{'l1d': True\}, got bool"),
    ({"node_nm": "45"}, TypeError, r"node_nm must be an integer number of nanometres \(32, 45\), got str '45'"),
    ({"node_nm": 45.0}, TypeError, r"node_nm must be an integer number of nanometres \(32, 45\), got float 45.0"),
    ({"node_nm": 22}, ValueError, r"node_nm must be one of the nodes of the energy tables \(32, 45\), got 22"),
    ({"off_leakage_fraction": "0.1"}, TypeError, r"off_leakage_fraction must be a number, got str '0.1'"),
    ({"off_leakage_fraction": True}, TypeError, r"off_leakage_fraction must be a number, got bool True"),
    ({"off_leakage_fraction": 1.5}, ValueError, r"off_leakage_fraction must be in \[0, 1\], got 1.5"),
    ({"drowsy_vdd": "0.4"}, TypeError, r"drowsy_vdd must be a number, got str '0.4'"),
    ({"drowsy_vdd": float("nan")}, ValueError, r"drowsy_vdd must be a finite number >= 0, got nan"),
    ({"extra": {"admL1D_counter": 1e6}}, KeyError,
     r"unknown extra energy parameter 'admL1D_counter' \(known: admL1D_counter_pj, admL1D_leak_uw_per_sm, "
     r"sharing.leakage_mw, sharing.xbar_mm, sharing.xbar_pj_per_bit_mm\)"),
    ({"extra": {"admL1D_counter_pj": -5.0}}, ValueError,
     r"extra\['admL1D_counter_pj'\] must be a finite number >= 0, got -5.0"),
    ({"extra": {"sharing.xbar_mm": float("inf")}}, ValueError, r"extra\['sharing.xbar_mm'\] must be a finite number"),
    ({"extra": {"sharing.leakage_mw": "5"}}, TypeError, r"extra\['sharing.leakage_mw'\] must be a number, got str '5'"),
    ({"extra": [("sharing.xbar_mm", 2.0)]}, TypeError, "extra must be a mapping of technique parameters, got list"),
    ({"l1d": {"tag_pj": 1.0}}, TypeError, "l1d must be a CacheEnergy or None, got dict"),
])
def test_bad_energy_parameters_are_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        energy.EnergyParams(**kwargs)


@pytest.mark.parametrize("field, value, error", [
    ("tag_pj", -1.0, ValueError), ("read_line_pj", float("nan"), ValueError), ("write_line_pj", float("inf"), ValueError),
    ("data_leak_mw_per_line", -0.16, ValueError), ("tag_leak_mw_per_line", "0.01", TypeError),
    ("wakeup_pj_per_line", -0.45, ValueError), ("tag_pj", True, TypeError),
])
def test_cache_energy_fields_must_be_finite_and_not_negative(field, value, error):
    good = energy.CACTI_TABLE[("l1d", 16, 4, 45)]
    with pytest.raises(error, match=rf"CacheEnergy\.{field} must be a (finite )?number"):
        replace(good, **{field: value})


def test_good_energy_parameters_are_accepted():
    energy.EnergyParams(node_nm=32, dwl={"l1d": True, "l2": False},
                        extra={"admL1D_counter_pj": 0, "sharing.xbar_mm": 1.5},
                        l1d=energy.CacheEnergy(1.0, 90.0, 120.0, 0.1, 0.01, wakeup_pj_per_line=None))
    assert energy.CacheEnergy(0, 0, 0, 0, 0, wakeup_pj_per_line=0).tag_pj == 0


@pytest.mark.parametrize("sector_bytes, units", [(32, 1), (64, 2), (128, 4)])
def test_a_sectored_cache_reads_whole_sectors_of_its_own_size(sector_bytes, units):
    # A 4-byte load misses, then hits: each data-array read (the fill's answer and the hit) reads the
    # whole sector holding the word, so a 64 B sector costs two 32 B units, as its fill does.
    from tracebuild import KernelSpec, build, ld, lanes

    cfg = presets.get("gtx480").replace(**{"core.sms": 1, "l1i.size_kb": 0, "l1d.sector_bytes": sector_bytes})
    prog = [ld(1, lanes(0x100000, n=1)), ld(2, lanes(0x100000, n=1), src=(1,))]
    r = simulate(cfg, build([KernelSpec([[prog]])]))
    reads = r["l1d_data_reads"]
    assert reads == r["l1d_read_sectors"] == 2 and r["l1d_read_units"] == units * reads
    assert energy.data_units(r.metrics, r.config, "l1d", energy.EnergyParams()) == (units * reads, 0)


def test_data_reads_are_the_hits_and_the_requests_a_fill_answers():
    # Three warps load the same 128 B line: one miss, two merged into its fetch, no hit. The fill
    # answers all three from the data array, and energy charges three reads of four sectors each;
    # the counter's documentation says so rather than "hits".
    from gpucachex import _core
    from tracebuild import KernelSpec, build, ld, lanes

    cfg = presets.get("gtx480").replace(**{"core.sms": 1, "l1i.size_kb": 0})
    r = simulate(cfg, build([KernelSpec([[[ld(1, lanes(0x100000))] for _ in range(3)]])]))
    assert (r["l1d_hits"], r["l1d_misses"], r["l1d_pending_hits"], r["l1d_fills"]) == (0, 3, 2, 1)
    assert (r["l1d_data_reads"], r["l1d_read_sectors"]) == (3, 12)
    assert energy.data_units(r.metrics, r.config, "l1d", energy.EnergyParams()) == (12, 0)
    doc = _core.cache_stat_names()["data_reads"]
    assert "hits" in doc and "a fill answers" in doc and doc != "data-array reads (hits)"
