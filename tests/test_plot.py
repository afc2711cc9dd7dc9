"""Plots draw what the frame holds: known frontiers, bin counts, cell values, bar heights."""
import matplotlib
import numpy as np
import pandas as pd
import pytest

from gpucachex import plot

matplotlib.use("Agg")


def test_pareto_front_known_answer():
    frame = pd.DataFrame({"energy": [1, 2, 3, 0.5, 2, 2, np.nan], "ipc": [1, 3, 2, 0.5, 2.5, 3, 9]})
    # (3, 2) and (2, 2.5) are dominated by (2, 3); the two (2, 3) tie and stay; NaN is never on the front
    assert plot.pareto_front(frame, "energy", "ipc").tolist() == [True, True, False, True, False, True, False]
    # maximise both: (3, 2) and the two (2, 3) are the front
    assert plot.pareto_front(frame, "energy", "ipc", minimize_x=False).tolist() == [
        False, True, True, False, False, True, False]
    with pytest.raises(KeyError, match="no column 'power'"):
        plot.pareto_front(frame, "power", "ipc")


def test_pareto_plot_marks_the_frontier_per_group():
    frame = pd.DataFrame({"cfg": ["a", "a", "b", "b", "c", "c"], "workload": ["x", "y"] * 3,
                          "e": [1.0, 3.0, 4.0, 4.0, 1.0, 1.0], "ipc": [2.0, 2.0, 3.0, 3.0, 1.0, 1.0]})
    fig = plot.pareto(frame, "e", "ipc", by="cfg")
    ax = fig.axes[0]
    dominated, front = ax.collections[:2]
    # group means: a (2, 2), b (4, 3), c (1, 1): none dominates another
    assert front.get_offsets().tolist() == [[2.0, 2.0], [4.0, 3.0], [1.0, 1.0]]
    assert len(dominated.get_offsets()) == 0
    assert sorted(t.get_text() for t in ax.texts) == ["a", "b", "c"]


def test_histogram_counts_every_value_and_prebinned_means():
    frame = pd.DataFrame({"v": [0.5, 1.5, 1.6, 2.5, 2.6, 2.7], "w": ["a", "a", "b", "b", "b", "b"],
                          "A0": [0.2, 0.4, 0.0, 0, 0, 0], "A1": [0.8, 0.6, 1.0, 1, 1, 1]})
    fig = plot.histogram(frame, "v", bins=[0, 1, 2, 3])
    assert [p.get_height() for p in fig.axes[0].patches] == [1, 2, 3]
    fig = plot.histogram(frame, columns=["A0", "A1"], labels=["A0", "A1"], hue="w")
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx([0.3, 0.7, 0.0, 1.0])   # per hue: the mean of each bucket column
    with pytest.raises(ValueError, match="either x"):
        plot.histogram(frame)
    with pytest.raises(KeyError, match="no column 'q'"):
        plot.histogram(frame, "q")


def test_heatmap_cells_are_the_means_over_other_columns():
    frame = pd.DataFrame({"size": [16, 16, 32, 32, 16, 32], "ways": [4, 8, 4, 8, 4, 4],
                          "hit": [0.1, 0.2, 0.3, 0.4, 0.3, 0.5]})
    fig = plot.heatmap(frame, "size", "ways", "hit", fmt=".2f")
    ax = fig.axes[0]
    data = ax.images[0].get_array()
    assert np.allclose(data, [[0.2, 0.4], [0.2, 0.4]])   # rows: ways 4, 8; columns: size 16, 32
    assert [t.get_text() for t in ax.texts] == ["0.20", "0.40", "0.20", "0.40"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32"]


def test_normalized_bars_are_means_and_whiskers_span_the_rows():
    frame = pd.DataFrame({"workload": ["a", "a", "b", "b"] * 2, "org": ["x"] * 4 + ["y"] * 4,
                          "ipc": [1.0, 3.0, 2.0, 2.0, 4.0, 6.0, 1.0, 2.0]})
    fig = plot.normalized_bars(frame, "ipc", hue="org", spread=True)
    ax = fig.axes[0]
    # per org: a, b, then the mean over workloads
    assert [p.get_height() for p in ax.patches] == pytest.approx([2.0, 2.0, 2.0, 5.0, 1.5, 3.25])
    whiskers = [c for c in ax.collections if c.get_segments()]
    spans = sorted((s[0][1], s[1][1]) for c in whiskers for s in c.get_segments())
    assert spans == [(1.0, 2.0), (1.0, 3.0), (2.0, 2.0), (4.0, 6.0)]   # none on the means
    assert not [c for c in plot.normalized_bars(frame, "ipc", hue="org").axes[0].collections if c.get_segments()]


@pytest.mark.parametrize("mean", ["arith", "geo"])
def test_every_mean_bar_averages_the_same_workloads(mean):
    # y has no run of b (it failed, and errors="skip" left it out) and a NaN for c: the means of x and
    # y are both over a alone, not x's over a, b and c beside y's over a.
    frame = pd.DataFrame({"workload": ["a", "b", "c", "a", "c"], "org": ["x", "x", "x", "y", "y"],
                          "ipc": [2.0, 8.0, 4.0, 1.0, np.nan]})
    with pytest.warns(UserWarning, match=r"mean of 'ipc' leaves out b, c, where some 'org' value has no value"):
        fig = plot.normalized_bars(frame, "ipc", hue="org", mean=mean)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights[3] == pytest.approx(2.0) and heights[7] == pytest.approx(1.0)   # x's mean, y's mean
    assert fig.axes[0].get_xticklabels()[3].get_text() == ("geomean" if mean == "geo" else "mean")


def test_save_writes_png_and_pdf(tmp_path):
    fig = plot.lines(pd.DataFrame({"x": [1, 2], "y": [3, 4], "workload": ["a", "a"]}), "x", "y")
    paths = plot.save(fig, tmp_path / "sub" / "fig")
    assert [p[-3:] for p in paths] == ["png", "pdf"]
    assert all((tmp_path / "sub" / f"fig.{s}").stat().st_size > 0 for s in ("png", "pdf"))
    # as its documentation says: closed (no longer one of pyplot's, which a notebook shows), still drawable
    import matplotlib.pyplot as plt

    assert not plt.fignum_exists(fig.number)
    assert plot.save(fig, tmp_path / "again", formats="png") == [str(tmp_path / "again.png")]


def test_save_keeps_dotted_names_and_takes_one_format_as_a_string(tmp_path):
    """Figure names hold dotted configuration keys: two figures must not overwrite one another."""
    frame = pd.DataFrame({"x": [1, 2], "y": [3, 4], "workload": ["a", "a"]})
    paths = [plot.save(plot.lines(frame, "x", "y"), tmp_path / f"ipc_vs_{key}") for key in ("l1d.ways", "l2.ways")]
    assert paths == [[str(tmp_path / f"ipc_vs_{key}.{fmt}") for fmt in ("png", "pdf")] for key in ("l1d.ways", "l2.ways")]
    assert plot.save(plot.lines(frame, "x", "y"), tmp_path / "hit_rate.v2", formats="svg") == \
        [str(tmp_path / "hit_rate.v2.svg")]
    # a suffix that is a figure format is replaced, not doubled
    assert plot.save(plot.lines(frame, "x", "y"), tmp_path / "fig.png") == [str(tmp_path / "fig.png"),
                                                                            str(tmp_path / "fig.pdf")]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fig.pdf", "fig.png", "hit_rate.v2.svg", "ipc_vs_l1d.ways.pdf", "ipc_vs_l1d.ways.png", "ipc_vs_l2.ways.pdf",
        "ipc_vs_l2.ways.png"]


@pytest.mark.parametrize("draw, message", [
    (lambda f: plot.normalized_bars(f, "ipc", by="cfg"), "no column 'cfg' in the frame (columns: workload, ways, ipc)"),
    (lambda f: plot.normalized_bars(f, "ipc", hue="wayz"), "no column 'wayz'"),
    (lambda f: plot.lines(f, "wayz", "ipc"), "no column 'wayz'"),
    (lambda f: plot.lines(f, "ways", "ipc", hue="cfg"), "no column 'cfg'"),
    (lambda f: plot.stacked_bars(f, ["ipc", "A0"]), "no column 'A0'"),
    (lambda f: plot.heatmap(f, "ways", "workload", "cycles"), "no column 'cycles'"),
    (lambda f: plot.pareto(f, "ways", "ipc", by=["workload", "cfg"]), "no column 'cfg'"),
])
def test_every_plot_names_a_missing_column(draw, message):
    frame = pd.DataFrame({"workload": ["a", "b"], "ways": [2, 4], "ipc": [1.0, 2.0]})
    with pytest.raises(KeyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        draw(frame)


@pytest.mark.parametrize("draw", [
    lambda f: plot.normalized_bars(f, "ipc"), lambda f: plot.lines(f, "ways", "ipc"),
    lambda f: plot.stacked_bars(f, ["ipc"]), lambda f: plot.heatmap(f, "ways", "workload", "ipc"),
    lambda f: plot.pareto(f, "ways", "ipc"),
])
def test_an_empty_frame_is_refused_not_drawn_blank(draw):
    # e.g. the frame of a sweep whose runs all failed, with errors="skip"
    empty = pd.DataFrame({"workload": [], "ways": [], "ipc": []})
    with pytest.raises(ValueError, match="nothing to plot: the frame has no rows"):
        draw(empty)


@pytest.mark.parametrize("draw, shown", [
    (lambda f: plot.normalized_bars(f, "ipc"), "'ipc'"), (lambda f: plot.lines(f, "ways", "ipc"), "'ipc'"),
    (lambda f: plot.stacked_bars(f, ["ipc", "A0"]), "'ipc' and 'A0'"),
    (lambda f: plot.histogram(f, x="ipc"), "'ipc'"), (lambda f: plot.histogram(f, columns=["A0", "ipc"]), "'A0' and 'ipc'"),
    (lambda f: plot.heatmap(f, "ways", "workload", "ipc"), "'ipc'"),
    (lambda f: plot.pareto(f, "A0", "ipc"), "'A0' and 'ipc'"),
])
@pytest.mark.filterwarnings("ignore:normalized_bars")   # of the one workload with a value
@pytest.mark.filterwarnings("ignore:stacked_bars")      # the bar of the other one is left out
@pytest.mark.filterwarnings("ignore:histogram")         # the bucket's mean over the one row with a value
@pytest.mark.filterwarnings("ignore:pareto")            # the row without a value is not drawn
def test_a_metric_without_a_value_is_refused_not_drawn_blank(draw, shown):
    # e.g. ratios to a baseline run that failed: every one NaN
    frame = pd.DataFrame({"workload": ["a", "b"], "ways": [2, 4], "ipc": [float("nan")] * 2, "A0": [0.5, 0.25]})
    with pytest.raises(ValueError, match=f"nothing to plot: no row of the frame has a value in {shown}"):
        draw(frame)
    frame.loc[1, "ipc"] = 1.5   # one value is a figure
    draw(frame)


def test_bad_plot_options_are_refused_before_drawing_or_writing(tmp_path):
    frame = pd.DataFrame({"workload": ["a", "b"], "ways": [2, 4], "ipc": [1.0, 2.0]})
    with pytest.raises(ValueError, match="agg must be one of mean, median"):
        plot.heatmap(frame, "ways", "workload", "ipc", agg="average")
    with pytest.raises(ValueError, match="mean must be 'arith' or 'geo', got 'harmonic'"):
        plot.normalized_bars(frame, "ipc", mean="harmonic")
    with pytest.raises(ValueError, match="1 labels for 2 columns"):
        plot.stacked_bars(frame, ["ways", "ipc"], labels=["w"])
    fig = plot.lines(frame, "ways", "ipc")
    with pytest.raises(ValueError, match=r"unsupported figure formats \['xyz'\]"):
        plot.save(fig, tmp_path / "fig", formats=("png", "xyz"))
    assert list(tmp_path.iterdir()) == []       # not the PNG alone
    assert plot.save(fig, tmp_path / "fig") == [str(tmp_path / "fig.png"), str(tmp_path / "fig.pdf")]


@pytest.mark.parametrize("draw, column", [
    (lambda f: plot.normalized_bars(f, "note"), "note"), (lambda f: plot.lines(f, "ways", "note"), "note"),
    (lambda f: plot.stacked_bars(f, ["ipc", "note"]), "note"), (lambda f: plot.histogram(f, x="note"), "note"),
    (lambda f: plot.histogram(f, columns=["ipc", "note"]), "note"),
    (lambda f: plot.heatmap(f, "ways", "workload", "note"), "note"),
    (lambda f: plot.heatmap(f, "ways", "workload", "note", agg="first"), "note"),
    (lambda f: plot.pareto(f, "note", "ipc"), "note"), (lambda f: plot.pareto_front(f, "ipc", "note"), "note"),
])
def test_a_column_of_text_is_refused_naming_it(draw, column):
    # e.g. l1d_energy_note, a text metric of some presets, picked instead of a number: pandas or numpy
    # would fail inside a mean or a conversion without naming the column
    frame = pd.DataFrame({"workload": ["a", "b"], "ways": [2, 4], "ipc": [1.0, 2.0],
                          "note": ["CACTI 64 KB 8-way", None]})
    with pytest.raises(TypeError, match=f"column '{column}' holds .* values, not numbers "
                                        r"\(such as 'CACTI 64 KB 8-way'\); it cannot be plotted"):
        draw(frame)


def test_numbers_in_an_object_column_and_counts_of_labels_are_still_drawn():
    frame = pd.DataFrame({"workload": ["a", "b", "b"], "ways": [2, 4, 4], "label": ["x", "y", "z"],
                          "ipc": pd.Series([1.0, None, 3], dtype=object)})
    with pytest.warns(UserWarning, match=r"bars of 'ipc' leave out the rows without a value: workload b \(1 of its 2"):
        fig = plot.normalized_bars(frame, "ipc")
    assert [p.get_height() for p in fig.axes[0].patches] == [1.0, 3.0, 2.0]
    fig = plot.heatmap(frame, "ways", "workload", "label", agg="count")   # runs per cell, labels counted
    assert [t.get_text() for t in fig.axes[0].texts] == ["1", "2"]


def test_a_stacked_bar_with_a_missing_fraction_is_left_out_and_named():
    # b has no access pairs (every fraction NaN), c no value in its middle segment: drawn, b's bar would
    # vanish and c's stop at 0.2, as if those fractions were 0
    frame = pd.DataFrame({"workload": ["a", "b", "c"], "p": [0.3, np.nan, 0.2], "q": [0.7, np.nan, np.nan],
                          "r": [0.0, np.nan, 0.8]})
    with pytest.warns(UserWarning, match=r"stacked_bars: no bar for b \(no value of 'p', 'q', 'r'\); "
                                         r"c \(no value of 'q'\)"):
        fig = plot.stacked_bars(frame, ["p", "q", "r"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a"]
    assert [v for p in ax.patches for v in (p.get_y(), p.get_height())] == pytest.approx([0, 0.3, 0.3, 0.7, 1.0, 0.0])


@pytest.mark.parametrize("value, shown", [(0.0, "0"), (-0.5, "-0.5")])
def test_a_geometric_mean_over_a_bar_not_above_0_is_refused(value, shown):
    # numpy only warned ("divide by zero encountered in log"): the geometric mean bar was 0 for a 0,
    # and missing (NaN, drawn as nothing) for a negative value
    frame = pd.DataFrame({"workload": ["a", "b", "a", "b"], "org": ["x", "x", "y", "y"],
                          "hits_norm": [1.0, 2.0, value, 4.0]})
    with pytest.raises(ValueError, match=rf"geometric mean needs values above 0; 'hits_norm' is {shown} for a "
                                         r"\(org y\) \(mean='arith' averages them\)"):
        plot.normalized_bars(frame, "hits_norm", hue="org", mean="geo")
    heights = [p.get_height() for p in plot.normalized_bars(frame, "hits_norm", hue="org").axes[0].patches]
    assert heights[-1] == pytest.approx((value + 4.0) / 2)


def test_a_bar_point_or_cell_that_averages_fewer_rows_than_it_has_says_so():
    # seed 1 of workload a has no value (a LoSCache run without a prediction): the bar, point or cell
    # of a is seed 0's value alone, which pandas' mean gave without a word
    import matplotlib.pyplot as plt

    plt.close("all")
    frame = pd.DataFrame({"workload": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1], "ways": [4] * 4,
                          "org": ["x"] * 4, "acc": [0.5, np.nan, 0.2, 0.4], "e": [1.0, 2.0, 3.0, 4.0]})
    cases = [
        (lambda: plot.normalized_bars(frame, "acc", hue="org"), r"normalized_bars: bars of 'acc' leave out the rows "
                                                                r"without a value: workload a, org x \(1 of its 2 rows\)"),
        (lambda: plot.lines(frame, "ways", "acc"), r"lines: points of 'acc' leave out .*: workload a, ways 4 \(1 of"),
        (lambda: plot.heatmap(frame, "ways", "workload", "acc", agg="max"),
         r"heatmap: cells of 'acc' leave out .*: workload a, ways 4 \(1 of its 2 rows\)"),
        (lambda: plot.stacked_bars(frame, ["e", "acc"]), r"stacked_bars: bars leave out .*: workload a, 'acc' \(1 of"),
        (lambda: plot.histogram(frame, columns=["acc"], hue="org"), r"histogram: bars of 'acc' leave out .*: org x \(1 of its 4"),
        (lambda: plot.pareto(frame, "e", "acc", by="workload"), r"pareto: points leave out .*: workload a, 'acc' \(1 of"),
    ]
    for draw, message in cases:
        with pytest.warns(UserWarning, match=message):
            draw()
    with pytest.warns(UserWarning, match="bars of 'acc' leave out"):
        assert plot.normalized_bars(frame, "acc").axes[0].patches[0].get_height() == pytest.approx(0.5)
    full = frame.fillna({"acc": 0.5})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # every row with a value: not a word
        plot.normalized_bars(full, "acc", hue="org"), plot.lines(full, "ways", "acc")
        plot.heatmap(frame, "ways", "workload", "acc", agg="count")   # counts values, as it says


def test_a_histogram_or_pareto_plot_leaving_out_rows_without_a_value_says_so():
    import warnings

    import matplotlib.pyplot as plt

    plt.close("all")
    frame = pd.DataFrame({"v": [0.5, np.nan, 1.5], "w": ["a", "b", "b"], "A0": [0.25, np.nan, np.nan],
                          "A1": [0.75, 0.5, 0.5], "e": [1.0, np.nan, 2.0], "ipc": [1.0, 2.0, 3.0]})
    with pytest.warns(UserWarning, match=r"histogram: 1 of the 3 rows have no value of 'v' and are left out"):
        assert [p.get_height() for p in plot.histogram(frame, "v", bins=[0, 1, 2]).axes[0].patches] == [1, 1]
    # workload b has no A0 at all: its A1 bar is the whole of what it has, not a fraction of NaN
    with pytest.warns(UserWarning, match=r"histogram: no value of 'A0' for w b: no bar drawn, the fractions are "
                                         r"of the other buckets"):
        fig = plot.histogram(frame, columns=["A0", "A1"], hue="w", density=True)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights[:2] == [0.25, 0.75] and np.isnan(heights[2]) and heights[3] == 1.0
    with pytest.warns(UserWarning, match=r"pareto: rows 1 have no value of 'e' or 'ipc' and are not drawn"):
        fig = plot.pareto(frame, "e", "ipc")
    drawn = [np.ma.filled(np.ma.asarray(c.get_offsets(), dtype=float), np.nan) for c in fig.axes[0].collections[:2]]
    assert sum(int(np.isfinite(o).all(axis=1).sum()) for o in drawn) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot.histogram(frame.dropna(), "v"), plot.pareto(frame.dropna(), "e", "ipc")
