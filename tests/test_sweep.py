"""Sweeps: grids expand to one row per run with the swept keys, and normalization divides by the
matching baseline run."""
import pandas as pd
import pytest

from gpucachex import presets
from gpucachex.sweep import expand_grid, normalize, sweep


def test_grid_expansion():
    assert expand_grid({"a.b": [1, 2], "c.d": ["x", "y", "z"]}) == [
        {"a.b": 1, "c.d": "x"}, {"a.b": 1, "c.d": "y"}, {"a.b": 1, "c.d": "z"},
        {"a.b": 2, "c.d": "x"}, {"a.b": 2, "c.d": "y"}, {"a.b": 2, "c.d": "z"}]
    assert expand_grid([{"a.b": 1}, {"a.b": 3}]) == [{"a.b": 1}, {"a.b": 3}]
    with pytest.raises(TypeError, match="must be a list of values"):
        expand_grid({"a.b": "abc"})


def test_sweep_rows_and_normalization():
    df = sweep(presets.get("gtx480"), {"l1d.ways": [2, 4]}, ["vectoradd:tiny", "bfs:tiny"], jobs=2)
    assert len(df) == 4 and set(df["l1d.ways"]) == {2, 4}
    assert df["run_key"].is_unique
    n = normalize(df, "cycles", {"l1d.ways": 4})
    assert (n[n["l1d.ways"] == 4]["cycles_norm"] == 1.0).all()
    assert n[n["l1d.ways"] == 2]["cycles_norm"].notna().all()
    # a baseline run missing (failed with errors="skip"): its workload's ratios are NaN, and said so
    partial = df[~((df["workload"].str.startswith("bfs")) & (df["l1d.ways"] == 4))]
    with pytest.warns(UserWarning, match=r"normalize: no baseline run \{'l1d.ways': 4\} for 1 workload/seed value\(s\) "
                                         r"\(bfs:tiny/0\); their normalised values are NaN"):
        n = normalize(partial, "cycles", {"l1d.ways": 4})
    bfs = n["workload"] == "bfs:tiny"
    assert n[bfs]["cycles_norm"].isna().all() and n[~bfs]["cycles_norm"].notna().all()


def test_normalizing_by_a_baseline_of_0_gives_nan_and_says_where():
    # x / 0 is no ratio: NaN as energy.compare gives, not an inf bar that makes every mean inf.
    frame = pd.DataFrame({"label": ["b", "x", "b", "x"], "workload": ["a", "a", "c", "c"], "seed": [0, 0, 0, 0],
                          "hits": [0, 5, 2, 3], "misses": [1, 2, 0, 0]})
    with pytest.warns(UserWarning) as caught:
        n = normalize(frame, ["hits", "misses"], baseline="b")
    assert [str(w.message) for w in caught] == [
        "normalize: the baseline's 'hits' is 0 for workload/seed a/0; their hits_norm values are NaN",
        "normalize: the baseline's 'misses' is 0 for workload/seed c/0; their misses_norm values are NaN"]
    assert n["hits_norm"].tolist()[2:] == [1.0, 1.5] and n["hits_norm"][:2].isna().all()
    assert n["misses_norm"].tolist()[:2] == [1.0, 2.0] and n["misses_norm"][2:].isna().all()


def test_bad_grid_fails_before_running():
    with pytest.raises(ValueError, match="l1d.ways must be between 1 and 64"):
        sweep(presets.get("gtx480"), {"l1d.ways": [4, 128]}, ["bfs:tiny"])
