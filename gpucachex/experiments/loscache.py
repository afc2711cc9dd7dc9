"""LoSCache (Tan et al.): L2 dead time on the baseline, and power-gating L2 lines after their predicted
last access. Reproduces Figures 1, 6, 7 and 8 (baseline dead time; naive vs adaptive prediction
accuracy; execution time and L2 energy normalised to the baseline, with Ideal-Gating), sweeps the
prediction period, the maximum threshold and the table capacity per workload, compares the prediction
phase read for the whole GPU (the default) with one phase per SM, and tabulates the headline numbers
next to the paper's.

Definitions: dead time = line-cycles holding no data or data never accessed again, over cycles x
lines (the paper's Total_Dead_Time / (Execution_Time x Num_Cache_Lines)); prediction accuracy is
the core's `l2_prediction_accuracy` (see csrc/techniques/l2_power/loscache.c); energies are the L2's
including LoSCache's table and tag overhead (`gpucachex.techniques.loscache`). Averages over
workloads are arithmetic means of per-workload ratios, as in the paper.
"""
from __future__ import annotations

import numpy as np

from gpucachex.experiments import by_workload, workload_classes
from gpucachex.techniques.loscache import prediction_summary

NAME = "loscache"
TITLE = "LoSCache: locality-similarity L2 power gating (Tan, Yan, Song, Fu)"

# The paper's headline numbers (abstract, Sections I and VI).
PAPER = {
    "dead_time": 0.956,            # Fig. 1 average
    "accuracy_naive": 0.54,        # Fig. 6
    "accuracy_adaptive": 0.93,
    "slowdown": 0.005,             # Fig. 7: execution time +0.5%
    "energy_loscache": 0.36,       # Fig. 8: L2 energy 36% of the baseline (-64%)
    "energy_ideal_gap": 0.06,      # Ideal-Gating a further 6% of the baseline below LoSCache
    "energy_saving_mm": 0.27,      # MM saves only 27%
}

POWER = "l2.power"
MODES = {"none": "baseline", "loscache": "LoSCache", "ideal_gating": "Ideal-Gating"}
SWEEPS = {  # spec -> (swept key, axis label, log x axis, a second swept key drawn as one row of panels per value)
    "loscache_period": ("l2.loscache.prediction_period", "prediction period (L2 accesses)", True, None),
    "loscache_threshold": ("l2.loscache.max_threshold", "maximum threshold", False, None),
    "loscache_table": ("l2.loscache.table_entries", "prediction-table entries per SM", False,
                       "l2.loscache.prediction_period"),
}
MM_LIKE = ("sgemm", "gemm")
PER_SM = "LoSCache per-SM phase"
SCOPE = "l2.loscache.phase_scope"
NO_ACKS = "LoSCache, stores not acknowledged"
NO_ACKS_PER_SM = "LoSCache per-SM phase, stores not acknowledged"
PERFECT_ICACHE = "LoSCache, perfect instruction cache"
STREAMING_CLASS = "streaming"


def label_modes(frame, default: str):
    """A 'mode' column naming each row's L2 power technique (`default` when l2.power was not swept)."""
    out = frame.copy()
    out["mode"] = out[POWER].map(MODES) if POWER in out.columns else MODES[default]
    return out


def summarize(main, naive, per_sm=None, no_acks=None, icache=None):
    """One row per workload: class, baseline dead time (both parts), accuracy of the naive and the
    adaptive prediction, the share of L2 accesses that carried a prediction, under/over/early
    gating counts, and execution time and L2 energy normalised to the baseline; with `per_sm` (runs
    with one prediction phase per SM, mode "LoSCache per-SM phase") the same for those runs; with
    `no_acks` (runs without store acknowledgements: a baseline and LoSCache with both phase scopes)
    the same for those, normalised to their own baseline (suffixes `_no_acks` and `_no_acks_per_sm`);
    with `icache` (a baseline and LoSCache, both with a perfect instruction cache) the same, suffix
    `_perfect_icache`."""
    import pandas as pd

    base, los, ideal = (by_workload(main, "mode", m) for m in ("baseline", "LoSCache", "Ideal-Gating"))
    nai = by_workload(naive, "mode", "LoSCache naive")
    out = pd.DataFrame(index=base.index)
    out["class"] = workload_classes(out.index)
    out["cycles"] = base["cycles"]
    out["dead_time"] = base["l2_dead_time_fraction"]
    out["dead_nodata"] = base["l2_dead_nodata_fraction"]
    out["dead_unused"] = base["l2_dead_unused_fraction"]
    out["accuracy_naive"] = nai["l2_prediction_accuracy"]
    out["accuracy_adaptive"] = los["l2_prediction_accuracy"]
    out["predictions_adaptive"] = los["l2_predictions"]
    out["coverage"] = prediction_summary(los)["coverage"]
    out["under_adaptive"] = los["l2_under_predictions"]
    out["over_adaptive"] = los["l2_over_predictions"]
    out["early_gatings"] = los["l2_early_gatings"]
    out["early_gatings_naive"] = nai["l2_early_gatings"]
    out["bypasses"] = los["l2_bypasses"]
    out["phase_cycles"] = los["loscache_phase_cycles"]
    out["time_loscache"] = los["cycles"] / base["cycles"]
    out["time_naive"] = nai["cycles"] / base["cycles"]
    out["dram_reads_loscache"] = los["dram_reads"] / base["dram_reads"].where(base["dram_reads"] > 0)
    out["on_loscache"] = los["l2_on_fraction"]
    out["on_ideal"] = ideal["l2_on_fraction"]
    out["energy_loscache"] = los["l2_energy_j"] / base["l2_energy_j"]
    out["energy_naive"] = nai["l2_energy_j"] / base["l2_energy_j"]
    out["energy_ideal"] = ideal["l2_energy_j"] / base["l2_energy_j"]
    out["overhead_share"] = los["l2_overhead_energy_j"] / los["l2_energy_j"]
    if per_sm is not None:
        _variant(out, by_workload(per_sm, "mode", PER_SM), base, "per_sm")
    if no_acks is not None:
        # Normalised to the baseline without acknowledgements, which is faster than the one with them.
        no_acks_base = by_workload(no_acks, "mode", "baseline").reindex(out.index)
        out["time_no_acks_baseline"] = no_acks_base["cycles"] / base["cycles"]
        los_no_acks = no_acks[no_acks["mode"] == "LoSCache"]
        for scope, suffix in (("global", "no_acks"), ("per_sm", "no_acks_per_sm")):
            _variant(out, by_workload(los_no_acks, SCOPE, scope), no_acks_base, suffix)
    if icache is not None:
        icache_base = by_workload(icache, "mode", "baseline").reindex(out.index)
        _variant(out, by_workload(icache, "mode", "LoSCache"), icache_base, "perfect_icache")
    out["pcs_per_table"] = _pcs_per_table(los)
    out.index.name = "workload"
    return out.reset_index()


def _pcs_per_table(runs):
    """PCs a predictor put in its SM's table, per run."""
    return runs["loscache_table_inserts"] / runs["loscache_predictor_ctas"]


def _variant(out, runs, base, suffix: str) -> None:
    """Columns `<metric>_<suffix>` of `out` for LoSCache runs of a variant (one row per workload),
    normalised to that variant's baseline `base`."""
    runs = runs.reindex(out.index)
    out[f"accuracy_{suffix}"] = runs["l2_prediction_accuracy"]
    out[f"coverage_{suffix}"] = prediction_summary(runs)["coverage"]
    out[f"pcs_per_table_{suffix}"] = _pcs_per_table(runs)
    out[f"time_{suffix}"] = runs["cycles"] / base["cycles"]
    out[f"on_{suffix}"] = runs["l2_on_fraction"]
    out[f"energy_{suffix}"] = runs["l2_energy_j"] / base["l2_energy_j"]


def _mean(x) -> float:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else float("nan")


def _unpredicted(summary, *columns: str) -> str:
    """The note's tail for a mean of accuracies: a workload without a prediction has none (NaN), and
    the mean is over the others; "" when every workload has one."""
    lacking = summary["workload"][summary[list(columns)].isna().any(axis=1)]
    if lacking.empty:
        return ""
    return (f", over the {len(summary) - len(lacking)} of {len(summary)} workloads with predictions "
            f"({', '.join(map(str, lacking))} made none)")


def headline(summary, time_uncongested=None):
    """The paper's headline numbers measured on our suite: metric, ours, paper, note.
    `time_uncongested`: per-workload execution time / baseline with the uncongested crossbar."""
    import pandas as pd

    mm = summary[summary["workload"].isin(MM_LIKE)]
    streaming = summary[summary["class"] == STREAMING_CLASS]
    xbar_note = "the same with 4 crossbar flits per cycle per port (loscache_xbar)"
    if time_uncongested is not None:
        covered = ~np.isnan(np.asarray(time_uncongested, dtype=float))
        if covered.sum() < len(summary):   # a quick run's crossbar spec runs fewer workloads than the main one
            same = _mean(np.asarray(summary["time_loscache"], dtype=float)[covered]) - 1
            xbar_note += (f", over its {int(covered.sum())} of the {len(summary)} workloads (the preset crossbar's "
                          f"slowdown on those: {same:+.2%})")
    rows = [
        ("workloads", len(summary), float("nan"), "simulated"),
        ("dead_time", _mean(summary["dead_time"]), PAPER["dead_time"], "baseline L2 dead time, mean (Fig. 1)"),
        ("dead_nodata", _mean(summary["dead_nodata"]), float("nan"), "... of it: lines holding no data"),
        ("dead_unused", _mean(summary["dead_unused"]), float("nan"), "... of it: data never accessed again"),
        ("accuracy_naive", _mean(summary["accuracy_naive"]), PAPER["accuracy_naive"],
         "mean (Fig. 6)" + _unpredicted(summary, "accuracy_naive")),
        ("accuracy_adaptive", _mean(summary["accuracy_adaptive"]), PAPER["accuracy_adaptive"],
         "mean (Fig. 6)" + _unpredicted(summary, "accuracy_adaptive")),
        ("adaptive_at_least_naive", int((summary["accuracy_adaptive"] >= summary["accuracy_naive"] - 1e-12).sum()),
         float("nan"), "workloads whose adaptive accuracy is at or above the naive one"
         + _unpredicted(summary, "accuracy_naive", "accuracy_adaptive")),
        ("coverage", _mean(summary["coverage"]), float("nan"),
         "share of L2 accesses that carried a prediction, mean (not reported by the paper)"),
        ("slowdown", _mean(summary["time_loscache"]) - 1, PAPER["slowdown"],
         "execution time / baseline - 1, mean (Fig. 7)"),
        ("slowdown_worst", float(summary["time_loscache"].max()) - 1, 0.04, "worst workload (paper: ST3D +4%)"),
        ("slowdown_uncongested_xbar", _mean(time_uncongested) - 1 if time_uncongested is not None else float("nan"),
         PAPER["slowdown"], xbar_note),
        ("slowdown_uncongested_xbar_worst",
         float(np.max(time_uncongested)) - 1 if time_uncongested is not None else float("nan"), 0.04,
         "worst workload with 4 crossbar flits per cycle per port"),
        ("energy_loscache", _mean(summary["energy_loscache"]), PAPER["energy_loscache"],
         "L2 energy / baseline, mean (Fig. 8)"),
        ("energy_ideal", _mean(summary["energy_ideal"]), PAPER["energy_loscache"] - PAPER["energy_ideal_gap"],
         "Ideal-Gating L2 energy / baseline, mean (Fig. 8)"),
        ("energy_ideal_gap", _mean(summary["energy_loscache"] - summary["energy_ideal"]), PAPER["energy_ideal_gap"],
         "LoSCache minus Ideal-Gating, mean of normalised energies"),
        ("below_baseline", int((summary["energy_loscache"] < 1).sum()), float("nan"),
         "workloads where LoSCache's L2 energy is below the baseline's"),
        ("at_or_above_ideal", int((summary["energy_loscache"] >= summary["energy_ideal"]).sum()), float("nan"),
         "workloads where LoSCache's L2 energy is at or above Ideal-Gating's"),
        ("energy_saving_mm", 1 - _mean(mm["energy_loscache"]), PAPER["energy_saving_mm"],
         f"1 - L2 energy / baseline on MM-like kernels ({', '.join(MM_LIKE)})"),
        ("energy_saving_streaming", 1 - _mean(streaming["energy_loscache"]), float("nan"),
         "1 - L2 energy / baseline on the streaming class"),
        ("overhead_share", _mean(summary["overhead_share"]), float("nan"),
         "share of LoSCache's L2 energy spent in its tables and extended tags"),
        ("pcs_per_table", _mean(summary["pcs_per_table"]), float("nan"),
         "PCs a predictor put in its SM's table, mean (the paper sized tables for 21, NW's count)"),
    ]
    # The variants, each over its own baseline: one phase per SM, and stores not acknowledged
    # (core.store_acks = false).
    for suffix, what in (("per_sm", "per-SM phases (l2.loscache.phase_scope = per_sm)"),
                         ("no_acks", "stores not acknowledged (core.store_acks = false)"),
                         ("no_acks_per_sm", "stores not acknowledged, per-SM phases"),
                         ("perfect_icache", "perfect instruction cache (l1i.size_kb = 0)")):
        if f"energy_{suffix}" in summary.columns:
            rows += _variant_rows(summary, mm, streaming, suffix, what)
    if "time_no_acks_baseline" in summary.columns:
        rows.append(("no_acks_baseline_time", _mean(summary["time_no_acks_baseline"]), float("nan"),
                     "baseline execution time without store acknowledgements / with them, mean"))
    return pd.DataFrame(rows, columns=["metric", "ours", "paper", "note"])


def _variant_rows(summary, mm, streaming, suffix: str, what: str) -> list[tuple]:
    """Headline rows of a variant's `<metric>_<suffix>` columns (see `_variant`)."""
    def col(metric: str) -> str:
        return f"{metric}_{suffix}"

    return [
        (col("pcs_per_table"), _mean(summary[col("pcs_per_table")]), float("nan"), f"PCs per prediction table, {what}"),
        (col("coverage"), _mean(summary[col("coverage")]), float("nan"), f"coverage, {what}"),
        (col("accuracy"), _mean(summary[col("accuracy")]), PAPER["accuracy_adaptive"],
         f"adaptive accuracy, {what}" + _unpredicted(summary, col("accuracy"))),
        (f"slowdown_{suffix}", _mean(summary[col("time")]) - 1, PAPER["slowdown"],
         f"execution time / its baseline - 1, {what}"),
        (col("energy"), _mean(summary[col("energy")]), PAPER["energy_loscache"], f"L2 energy / its baseline, {what}"),
        (f"below_baseline_{suffix}", int((summary[col("energy")] < 1).sum()), float("nan"),
         f"workloads below their baseline's L2 energy, {what}"),
        (f"energy_saving_mm_{suffix}", 1 - _mean(mm[col("energy")]), PAPER["energy_saving_mm"],
         f"saving on MM-like kernels, {what}"),
        (f"energy_saving_streaming_{suffix}", 1 - _mean(streaming[col("energy")]), float("nan"),
         f"saving on the streaming class, {what}"),
    ]


def _sweep_frame(ctx, name, main):
    """A parameter sweep's rows with the baseline's energy and cycles of the same workload beside
    them (normalised columns)."""
    frame = ctx.sweep(name)
    frame["mode"] = "LoSCache"
    base = main[main["mode"] == "baseline"].groupby("workload")[["l2_energy_j", "cycles"]].mean()
    frame["l2_energy_norm"] = frame["l2_energy_j"].to_numpy() / base["l2_energy_j"].reindex(frame["workload"]).to_numpy()
    frame["time_norm"] = frame["cycles"].to_numpy() / base["cycles"].reindex(frame["workload"]).to_numpy()
    frame["coverage"] = prediction_summary(frame)["coverage"]
    return frame


def _no_prediction_note(frame, key, facet=None) -> str:
    """The sweep points that made no prediction, whose accuracy is undefined and leaves a gap in its
    line: named in the caption, or the gap would look like a missing run."""
    keys = [key] if facet is None else [key, facet]
    rows = frame[frame["l2_prediction_accuracy"].isna()]
    if rows.empty:
        return ""
    points = [f"{w} at " + ", ".join(f"{k.split('.')[-1]} {v:g}" for k, v in zip(keys, values))
              for w, *values in rows[["workload", *keys]].itertuples(index=False)]
    return f" (no prediction, so no accuracy: {'; '.join(points)})"


def _sweep_figure(frame, key, label, logx, facet=None):
    import matplotlib.pyplot as plt

    from gpucachex import plot

    facets = [(None, frame)] if facet is None else list(frame.groupby(facet, sort=True))
    panels = [("l2_energy_norm", "L2 energy / baseline"), ("l2_prediction_accuracy", "prediction accuracy"),
              ("coverage", "L2 accesses with a prediction"), ("time_norm", "execution time / baseline")]
    fig, axes = plt.subplots(len(facets), len(panels), figsize=(19, 3.8 * len(facets)), squeeze=False)
    for row, (value, rows) in zip(axes, facets):
        for ax, (metric, ylabel) in zip(row, panels):
            plot.lines(rows, key, metric, xlabel=label, ylabel=ylabel, logx=logx, ax=ax,
                       title="" if facet is None else f"{facet.split('.')[-1]} = {value}")
            ax.get_legend().remove()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(8, len(labels)), fontsize="small",
               bbox_to_anchor=(0.5, -0.08 / len(facets)))
    fig.tight_layout()
    return fig


def _bars(ctx, summary, metric: str, series: dict[str, str], name: str, caption: str, **style) -> None:
    """A figure of bars per workload, one bar per entry of `series` (its label -> a summary column
    holding `metric`)."""
    import pandas as pd

    from gpucachex import plot

    frame = pd.concat([summary[["workload"]].assign(mode=label, **{metric: summary[column]})
                       for label, column in series.items()])
    ctx.figure(plot.normalized_bars(frame, metric, hue="mode", **style), name, caption)


def fig7b(ctx, summary) -> None:
    """Fig. 7 again with a crossbar that is not the bottleneck, on the workloads `loscache_xbar.toml` ran
    (its quick variant runs fewer than the main spec: a workload with one bar compares nothing)."""
    compared = summary[summary["time_loscache_xbar"].notna()]
    _bars(ctx, compared, "time", {"LoSCache": "time_loscache", "LoSCache, 4 flits/cycle": "time_loscache_xbar"},
          "loscache_fig7b_time_xbar", "LoSCache execution time, preset crossbar vs an uncongested one",
          ylabel="execution time / baseline",
          title="Fig. 7b: execution time with the preset's crossbar and with 4 flits per cycle")


def _variant_bars(ctx, summary, variants: dict[str, str], name: str, what: str, title: str,
                  own_baseline: bool = True) -> None:
    """Figures `<name>_energy` (with Ideal-Gating) and `<name>_coverage`: the default LoSCache beside
    its variants (their label -> the suffix of their summary columns, see `_variant`); `own_baseline`:
    the variants' energy is over a baseline run with the variant's settings."""
    energy = {"LoSCache": "energy_loscache", **{label: f"energy_{suffix}" for label, suffix in variants.items()},
              "Ideal-Gating": "energy_ideal"}
    _bars(ctx, summary, "energy", energy, f"{name}_energy",
          f"L2 energy, {what}" + (" (each over its own baseline)" if own_baseline else ""),
          ylabel="L2 energy / baseline", title=f"L2 energy: {title}")
    coverage = {"LoSCache": "coverage", **{label: f"coverage_{suffix}" for label, suffix in variants.items()}}
    _bars(ctx, summary, "coverage", coverage, f"{name}_coverage", f"share of L2 accesses that carried a prediction, {what}",
          ylabel="L2 accesses with a prediction", reference=None, title=f"Coverage: {title}")


def run(ctx) -> None:
    from gpucachex import plot

    main = label_modes(ctx.sweep("loscache_main"), "none")
    naive = label_modes(ctx.sweep("loscache_naive"), "loscache")
    naive["mode"] = "LoSCache naive"
    per_sm = label_modes(ctx.sweep("loscache_scope"), "loscache")
    per_sm["mode"] = PER_SM
    no_acks = label_modes(ctx.sweep("loscache_no_acks"), "none")
    icache = label_modes(ctx.sweep("loscache_icache"), "none")
    summary = summarize(main, naive, per_sm, no_acks, icache)
    # The same runs with a crossbar that is not the bottleneck (see experiments/loscache.md).
    xbar = label_modes(ctx.sweep("loscache_xbar"), "none")
    time_xbar = (by_workload(xbar, "mode", "LoSCache")["cycles"] / by_workload(xbar, "mode", "baseline")["cycles"])
    summary["time_loscache_xbar"] = time_xbar.reindex(summary["workload"]).to_numpy()
    ctx.table(summary, "loscache_summary", "per workload: dead time, accuracy, coverage, time and L2 energy ratios")
    ctx.table(headline(summary, summary["time_loscache_xbar"]), "loscache_headline",
              "headline numbers next to the paper's")

    # Fig. 1: baseline dead time, split into its two parts.
    fig = plot.stacked_bars(summary, ["dead_nodata", "dead_unused"],
                            labels=["no data", "data never used again"], ylabel="fraction of line-cycles",
                            title="Fig. 1: L2 line dead time on the baseline")
    ax = fig.axes[0]
    ax.axhline(_mean(summary["dead_time"]), color="black", linewidth=0.8, linestyle="--")
    ctx.figure(fig, "loscache_fig1_dead_time", "baseline L2 dead time per workload (dashed: mean)")

    # Fig. 6: naive vs adaptive prediction accuracy.
    _bars(ctx, summary, "accuracy", {"naive": "accuracy_naive", "adaptive": "accuracy_adaptive"},
          "loscache_fig6_accuracy", "prediction accuracy of naive and adaptive LoSCache",
          ylabel="prediction accuracy", reference=None, title="Fig. 6: prediction accuracy, naive vs adaptive")
    # Fig. 7: execution time normalised to the baseline.
    _bars(ctx, summary, "time", {"LoSCache": "time_loscache"},
          "loscache_fig7_time", "LoSCache execution time normalised to the baseline",
          ylabel="execution time / baseline", title="Fig. 7: execution time of LoSCache normalised to the baseline")
    # Fig. 8: L2 energy normalised to the baseline, LoSCache and Ideal-Gating.
    _bars(ctx, summary, "energy", {"LoSCache": "energy_loscache", "Ideal-Gating": "energy_ideal"},
          "loscache_fig8_energy", "L2 energy of LoSCache and Ideal-Gating normalised to the baseline",
          ylabel="L2 energy / baseline",
          title="Fig. 8: L2 energy of LoSCache and Ideal-Gating normalised to the baseline")
    # The share of L2 accesses that carried a prediction: what limits the savings here.
    _bars(ctx, summary, "coverage", {"LoSCache": "coverage"},
          "loscache_coverage", "share of L2 accesses that carried a prediction",
          ylabel="L2 accesses with a prediction", reference=None,
          title="Coverage: share of L2 accesses whose PC had a prediction")
    fig7b(ctx, summary)

    # The variants beside the default, each over its own baseline: the prediction phase read per SM;
    # warps that do not wait for their stores' acknowledgements (core.store_acks = false), both phase
    # scopes; no instruction-fetch misses, so every SM's predictor reaches its loads at a kernel's start.
    _variant_bars(ctx, summary, {PER_SM: "per_sm"}, "loscache_scope",
                  "one prediction phase for the GPU and one per SM", "global prediction phase vs one per SM",
                  own_baseline=False)
    _variant_bars(ctx, summary, {NO_ACKS: "no_acks", NO_ACKS_PER_SM: "no_acks_per_sm"}, "loscache_no_acks",
                  "with and without store acknowledgements", "stores acknowledged or not")
    _variant_bars(ctx, summary, {PERFECT_ICACHE: "perfect_icache"}, "loscache_icache",
                  "with the preset's and with a perfect instruction cache",
                  "instruction cache of the preset vs a perfect one")

    for name, (key, label, logx, facet) in SWEEPS.items():
        frame = _sweep_frame(ctx, name, main)
        ctx.figure(_sweep_figure(frame, key, label, logx, facet), f"{name}_sweep",
                   f"L2 energy, accuracy, coverage and execution time against the {label}, per workload"
                   + _no_prediction_note(frame, key, facet))
