"""The drowsy experiment end to end on tiny inputs: every figure and CSV is written, and the numbers
show what the paper claims (static power under 15% at window 0 and 0.4 V, DWL savings ordered by warp
utilisation, hidden wake-ups cost no time)."""
from pathlib import Path

import pandas as pd
import pytest

from gpucachex.experiments import Context, get

SPECS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.fixture
def tiny_specs(tmp_path, monkeypatch):
    """The drowsy specs with two workloads at the tiny size, and no shared traces."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for spec in SPECS.glob("drowsy_*.toml"):
        text = spec.read_text()
        start = text.index("workloads = [")
        end = text.index("]", start)
        text = text[:start] + 'workloads = ["myocyte", "sgemm"]' + text[end + 1:]
        (specs / spec.name).write_text(text.replace('size = "medium"', 'size = "tiny"'))
    monkeypatch.setenv("GPUCACHEX_EXPERIMENTS", str(specs))
    monkeypatch.setenv("GPUCACHEX_SHARED_TRACES", str(tmp_path / "no-traces"))
    return tmp_path / "out"


@pytest.mark.slow
def test_drowsy_experiment_writes_every_figure_with_its_numbers(tiny_specs):
    ctx = Context(out_dir=tiny_specs, jobs=1)
    get("drowsy").run(ctx)
    names = {(o.kind, o.name) for o in ctx.outputs}
    for fig in ("drowsy_fig3_access_counts", "drowsy_fig4_inter_access", "drowsy_table1_utilisation",
                "drowsy_fig6_power", "drowsy_fig7_performance", "drowsy_policies"):
        assert ("figure", fig) in names and (tiny_specs / f"{fig}.png").is_file()
    for table in ("drowsy_fig3_access_counts", "drowsy_fig4_inter_access", "drowsy_table1_utilisation",
                  "drowsy_fig6_power", "drowsy_fig7_performance", "drowsy_policies_summary"):
        assert ("table", table) in names
    power = pd.read_csv(tiny_specs / "drowsy_fig6_power.csv")
    static = power[power["term"] == "static"]
    assert (static["ratio"] < 0.15).all() and (static["ratio"] > 0.07).all()
    dyn = power[(power["term"] == "dynamic") & (power["dwl_select"] == "lanes")].set_index(["workload", "cache"])
    assert dyn.loc[("myocyte", "L1"), "ratio"] < 0.2 < 0.99 < dyn.loc[("sgemm", "L1"), "ratio"]
    util = pd.read_csv(tiny_specs / "drowsy_table1_utilisation.csv").set_index("workload")
    assert util.loc["myocyte", "L1 block utilisation"] < 0.1 and util.loc["sgemm", "L1 block utilisation"] == 1.0
    access = pd.read_csv(tiny_specs / "drowsy_fig3_access_counts.csv")
    buckets = [c for c in access.columns if c.startswith("A")]
    assert access[buckets].sum(axis=1).round(9).eq(1.0).all()
    perf = pd.read_csv(tiny_specs / "drowsy_fig7_performance.csv")
    assert set(perf["wakeup_cycles"]) == {"1 cycle(s)", "2 cycle(s)"} and perf["performance"].between(0.8, 1.2).all()
    # Fig. 6's runs hide the wake-up: they take exactly the baseline's cycles.
    base = pd.read_csv(tiny_specs / "drowsy_baseline.csv").set_index("workload")["cycles"]
    runs = pd.read_csv(tiny_specs / "drowsy_power.csv").set_index("workload")["cycles"]
    assert (runs == base.reindex(runs.index)).all()
    policies = pd.read_csv(tiny_specs / "drowsy_policies_summary.csv")
    assert set(policies["policy"]) == set(get("drowsy").POLICIES)


def test_specs_are_valid_and_quick_is_smaller():
    from gpucachex.experiments import load_spec

    for name in ("drowsy_baseline", "drowsy_power", "drowsy_perf", "drowsy_policies"):
        full, quick = load_spec(name), load_spec(name, quick=True)
        assert full["preset"] == "atoofian" and quick["size"] == "small" and full["size"] == "medium"


def test_several_seeds_are_a_clear_error_before_any_run(tiny_specs):
    """Each figure divides a run by its workload's one baseline run: a spec with two seeds is refused,
    naming the spec, before it simulates anything (not a pandas error after the sweeps)."""
    import os

    spec = Path(os.environ["GPUCACHEX_EXPERIMENTS"]) / "drowsy_baseline.toml"
    spec.write_text(spec.read_text().replace("seeds = [0]", "seeds = [0, 1]"))
    with pytest.raises(ValueError, match=r"drowsy_baseline\.toml: the drowsy experiment .* one seed, got seeds = \[0, 1\]"):
        get("drowsy").run(Context(out_dir=tiny_specs, jobs=1))
    assert not tiny_specs.exists()


def test_fig4_names_the_bars_it_leaves_out(tmp_path, monkeypatch):
    """A cache that saw no two accesses to a block while it stayed has no Fig. 4 bar (no fractions of
    pairs): the figure and its caption name those bars instead of leaving them out without a word."""
    from gpucachex.experiments import drowsy
    from gpucachex.sim import ACCESS_BUCKETS, INTERVAL_BUCKETS

    def row(workload, l1_pairs):
        r = {"workload": workload}
        for level, pairs in (("l1d", l1_pairs), ("l2", 5)):
            r.update({f"{level}_{b}": 0 for b in ACCESS_BUCKETS + INTERVAL_BUCKETS})
            r[f"{level}_{ACCESS_BUCKETS[1]}"] = 8
            r[f"{level}_{INTERVAL_BUCKETS[5]}"] = pairs
            r.update({f"{level}_inter_access_cycles": 20.0, f"{level}_block_utilisation": 1.0,
                      f"{level}_data_accesses": 10})
        return r

    titles = {}
    figure = Context.figure

    def keep_title(self, fig, name, caption):
        titles[name] = fig.axes[0].get_title()
        return figure(self, fig, name, caption)

    monkeypatch.setattr(Context, "figure", keep_title)
    ctx = Context(out_dir=tmp_path)
    drowsy.characterisation(ctx, pd.DataFrame([row("busy", 3), row("stream", 0)]))
    caption = {o.name: o.caption for o in ctx.outputs if o.kind == "figure"}["drowsy_fig4_inter_access"]
    for text in (titles["drowsy_fig4_inter_access"], caption):
        assert "no access pairs" in text and "stream L1" in text and "busy" not in text
    assert "no access pairs" not in titles["drowsy_fig3_access_counts"]
