"""Atoofian and Manzak, "Power-Aware L1 and L2 Caches for GPGPUs": the characterisation behind the
technique (Fig. 3 per-block access counts, Fig. 4 inter-access cycles, Table 1 block utilisation), the
power of drowsy lines with window 0 at 0.4 V plus the active-mask divided word line (Fig. 6), the
performance with 1 and 2 wake-up cycles (Fig. 7), and the drowsy policy against the references a
user compares it with (Flautner's periodic all-lines policy, Kaxiras's cache decay).

Sweeps: experiments/drowsy_baseline.toml (no technique), drowsy_power.toml (drowsy + DWL, wake-up
hidden), drowsy_perf.toml (wake-up 1 and 2 cycles, not hidden), drowsy_policies.toml (the policies).
The built-in workloads of each spec run with the shared Accel-Sim traces that are present
($GPUCACHEX_SHARED_TRACES, default ../shared/traces). Energy is computed at 32 nm as in the paper,
from the runs' counters (no extra simulation), with the paper's 4 B segments.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gpucachex import energy
from gpucachex.sim import ACCESS_BUCKETS, INTERVAL_BUCKETS

NAME = "drowsy"
TITLE = "Drowsy lines and active-mask partial access in the L1D and L2 (Atoofian and Manzak)"

TRACES = ("matrixmul-32-32-trace", "bfs-rodinia-2.0-ft", "vectoradd-sm80-v5")
LEVELS = {"l1d": "L1", "l2": "L2"}
NODE_NM = 32
# The paper's averages (Section 5.1) that each figure is compared with.
PAPER = {"static": (0.08, 0.08), "dynamic": (0.93, 0.76), "total": (0.10, 0.04), "slowdown": 0.003}

# Fig. 4 groups: power-of-two inter-access buckets merged below 8 and above 8191 cycles.
INTERVAL_GROUPS = [("<8", INTERVAL_BUCKETS[:4])] + [
    (INTERVAL_BUCKETS[b][1:].replace("_", "-"), (INTERVAL_BUCKETS[b],)) for b in range(4, 14)] + [
    ("8192+", INTERVAL_BUCKETS[14:])]


def shared_traces() -> dict[str, str]:
    """The shared real traces that are present, by folder name."""
    root = Path(os.environ.get("GPUCACHEX_SHARED_TRACES",
                               Path(__file__).resolve().parents[2].parent / "shared" / "traces"))
    return {name: str(root / name) for name in TRACES if (root / name / "kernelslist.g").is_file()}


def run_spec(ctx, name: str, points: dict[str, dict] | None = None, variants: dict[str, dict] | None = None):
    """The spec's sweep over its built-in workloads and the shared traces, with energy at 32 nm from
    the runs' counters; rows written to <name>.csv. `points` ({label: {key: value}}) replaces the
    spec's grid, and a `point` column names each row's; `variants` ({suffix: EnergyParams fields})
    add energy columns <column>@<suffix> under other energy parameters (no extra simulation)."""
    from gpucachex import presets
    from gpucachex.experiments import spec_workloads, workload_labels
    from gpucachex.sweep import points as sweep_points, sweep

    spec = ctx.spec(name)
    if len(spec["seeds"]) != 1:
        # Every figure divides a run by the baseline run of its workload (one row each); with several
        # seeds that lookup fails deep in pandas ("Index contains duplicate entries") after the sweeps.
        raise ValueError(f"{spec['path']}: the drowsy experiment compares one run per workload and point, so "
                         f"its specs take one seed, got seeds = {spec['seeds']}")
    base = presets.get(spec["preset"], **spec["set"])
    traces = shared_traces()
    grid = list(points.values()) if points is not None else dict(spec["grid"])
    workloads = spec_workloads(spec) + list(traces.values())
    frame = sweep(base, grid, workloads, seeds=spec["seeds"], jobs=ctx.jobs, **ctx.sweep_options)
    config_of = {p.key(): p.config for p in sweep_points(base, grid, workloads, spec["seeds"])}
    by_path = {path: trace for trace, path in traces.items()}
    labels = workload_labels(spec, spec_workloads(spec))
    frame["workload"] = [by_path.get(w) or labels[w] for w in frame["workload"]]
    if points is not None:
        label_of = {base.replace(**p).key(): label for label, p in points.items()}
        frame["point"] = frame["config_key"].map(label_of)
    # Energy at the paper's node replaces the 45 nm terms simulate() attached.
    import pandas as pd

    parts = []
    for suffix, fields in {"": {}, **(variants or {})}.items():
        params = energy.EnergyParams(node_nm=NODE_NM, **fields)
        again = energy.recompute(frame, params, lambda row: config_of[row["run_key"]])
        parts.append(again.add_suffix(f"@{suffix}") if suffix else again)
    new = pd.concat(parts, axis=1)
    frame = pd.concat([frame.drop(columns=[c for c in new.columns if c in frame.columns]), new], axis=1)
    ctx.table(frame, name, spec.get("title", name))
    return frame


# ---- Fig. 3, Fig. 4, Table 1 ---------------------------------------------------------------------

def _legend_right(fig):
    """Move a stacked-bar legend beside the axes: the rotated workload labels need the space below."""
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], fontsize="x-small", ncol=1, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.set_size_inches(fig.get_size_inches()[0], 4.5)
    fig.tight_layout()


def histogram_frame(base):
    """One row per workload and cache: fractions of lines per access-count bucket (Fig. 3) and of
    inter-access pairs per interval group (Fig. 4), mean inter-access cycles, block utilisation."""
    import pandas as pd

    rows = []
    for _, r in base.iterrows():
        for level, label in LEVELS.items():
            row = {"workload": r["workload"], "cache": label, "bar": f"{r['workload']} {label}"}
            lines = sum(r[f"{level}_{b}"] for b in ACCESS_BUCKETS)
            for b in ACCESS_BUCKETS:
                row[b.replace("_up", "+").replace("_", "-")] = r[f"{level}_{b}"] / lines
            pairs = sum(r[f"{level}_{b}"] for b in INTERVAL_BUCKETS)
            for group, buckets in INTERVAL_GROUPS:
                row[group] = sum(r[f"{level}_{b}"] for b in buckets) / pairs if pairs else np.nan
            row["mean_inter_access_cycles"] = r[f"{level}_inter_access_cycles"] if pairs else np.nan
            # the paper's summary statistics: blocks accessed fewer than 16 (L1) or 8 (L2) times, and
            # access pairs at least 128 (L1) or 64 (L2) cycles apart
            row["blocks_lt_16_accesses"] = sum(r[f"{level}_{b}"] for b in ACCESS_BUCKETS[:5]) / lines
            row["blocks_lt_8_accesses"] = sum(r[f"{level}_{b}"] for b in ACCESS_BUCKETS[:4]) / lines
            row["inter_access_0"] = r[f"{level}_I0"] / pairs if pairs else np.nan  # merged misses, one fill
            for lo, first in ((64, 7), (128, 8)):
                row[f"inter_access_ge_{lo}"] = (sum(r[f"{level}_{b}"] for b in INTERVAL_BUCKETS[first:]) / pairs
                                                if pairs else np.nan)
            row["block_utilisation"] = r[f"{level}_block_utilisation"] if r[f"{level}_data_accesses"] else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def characterisation(ctx, base):
    import matplotlib.pyplot as plt

    from gpucachex import plot

    hist = histogram_frame(base)
    access_cols = [b.replace("_up", "+").replace("_", "-") for b in ACCESS_BUCKETS]
    ctx.table(hist[["workload", "cache"] + access_cols + ["blocks_lt_16_accesses", "blocks_lt_8_accesses"]],
              "drowsy_fig3_access_counts",
              "Fig. 3: fraction of cache blocks by lifetime accesses (A0 never accessed ... A16384+)")
    fig = plot.stacked_bars(hist, access_cols, by="bar", ylabel="fraction of blocks",
                            title="Fig. 3: accesses per block, L1 then L2 per workload")
    _legend_right(fig)
    ctx.figure(fig, "drowsy_fig3_access_counts", "Fig. 3: breakdown of accesses to L1 and L2 blocks")

    groups = [g for g, _ in INTERVAL_GROUPS]
    with_pairs = hist.dropna(subset=["mean_inter_access_cycles"])
    ctx.table(hist[["workload", "cache"] + groups + ["mean_inter_access_cycles", "inter_access_0",
                                                      "inter_access_ge_64", "inter_access_ge_128"]],
              "drowsy_fig4_inter_access", "Fig. 4: fraction of consecutive-access pairs by cycles between them")
    # A cache that never saw two accesses to a block while it stayed has no fractions of pairs and no
    # bar; say which, or the figure would look as if those workloads had not run.
    without = hist.loc[hist["mean_inter_access_cycles"].isna(), "bar"].tolist()
    note = f"no access pairs, so no bar: {', '.join(without)}" if without else ""
    title = "Fig. 4: cycles between consecutive accesses to a block" + (f"\n({note})" if note else "")
    fig = plot.stacked_bars(with_pairs, groups, by="bar", ylabel="fraction of access pairs", title=title)
    _legend_right(fig)
    ctx.figure(fig, "drowsy_fig4_inter_access",
               "Fig. 4: breakdown of inter-access cycles in L1 and L2" + (f" ({note})" if note else ""))

    table = hist.pivot(index="workload", columns="cache", values="block_utilisation")
    table = table.reindex(list(dict.fromkeys(hist["workload"])))
    table.columns = [f"{c} block utilisation" for c in table.columns]
    table = table.reset_index()
    ctx.table(table, "drowsy_table1_utilisation", "Table 1: L1 and L2 block utilisation (active lanes / 32)")
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(table) + 2), 3.2))
    x = np.arange(len(table))
    for i, col in enumerate(["L1 block utilisation", "L2 block utilisation"]):
        ax.bar(x + (i - 0.5) * 0.4, table[col], 0.4, label=col)
    ax.set_xticks(x, table["workload"], rotation=45, ha="right")
    ax.set_ylabel("active lanes / 32")
    ax.set_title("Table 1: block utilisation")
    ax.legend(fontsize="small")
    fig.tight_layout()
    ctx.figure(fig, "drowsy_table1_utilisation", "Table 1: L1 and L2 block utilisation")
    return hist


# ---- Fig. 6 and Fig. 7 -----------------------------------------------------------------------------

def power_ratios(base, tech, suffix: str = ""):
    """Per workload and cache: static, dynamic and total power of the technique's runs over the
    baseline's; `suffix` picks an energy variant's columns (run_spec's `variants`)."""
    import pandas as pd

    b = base.set_index("workload")
    rows = []
    for _, r in tech.iterrows():
        ref = b.loc[r["workload"]]
        for level, label in LEVELS.items():
            if not ref[f"{level}_data_accesses"]:
                continue  # the workload never uses this cache: nothing to compare
            for term, key in (("static", "static_power_w"), ("dynamic", "dynamic_power_w"), ("total", "power_w")):
                col = f"{level}_{key}" + (f"@{suffix}" if suffix else "")
                rows.append({"workload": r["workload"], "cache": label, "term": term,
                             "ratio": r[col] / ref[f"{level}_{key}"]})
    return pd.DataFrame(rows)


def fig6(ctx, base, power):
    import matplotlib.pyplot as plt

    from gpucachex import plot

    import pandas as pd

    bytes_mask = power_ratios(base, power)
    lanes_mask = power_ratios(base, power, "lanes")
    bytes_mask["dwl_select"], lanes_mask["dwl_select"] = "bytes", "lanes"
    both = pd.concat([bytes_mask, lanes_mask], ignore_index=True)
    ctx.table(both, "drowsy_fig6_power", "Fig. 6: static, dynamic and total power with drowsy lines (window 0, "
              "0.4 V) and the divided word line, relative to the baseline, per cache; dwl_select bytes = the "
              "request's byte mask, lanes = the paper's active mask")
    fig, axes = plt.subplots(2, 1, figsize=(max(9, 0.55 * base["workload"].nunique() + 3), 6.5))
    for ax, label in zip(axes, LEVELS.values()):
        rows = bytes_mask[bytes_mask["cache"] == label]
        plot.normalized_bars(rows, "ratio", by="workload", hue="term", ax=ax, reference=1.0,
                             ylabel="relative to baseline",
                             title=f"Fig. 6{'ab'[label == 'L2']}: {label} power (drowsy window 0 at 0.4 V + DWL)")
    fig.tight_layout()
    ctx.figure(fig, "drowsy_fig6_power", "Fig. 6: static, dynamic, total power vs baseline in L1 and L2")
    return both


def fig7(ctx, base, perf):
    import pandas as pd

    from gpucachex import plot

    b = base.set_index("workload")["cycles"]
    frame = pd.DataFrame({"workload": perf["workload"],
                          "wakeup_cycles": perf["drowsy.wakeup_cycles"].astype(int).astype(str) + " cycle(s)",
                          "performance": [b[w] / c for w, c in zip(perf["workload"], perf["cycles"])],
                          "cycles": perf["cycles"], "baseline_cycles": [b[w] for w in perf["workload"]]})
    ctx.table(frame, "drowsy_fig7_performance", "Fig. 7: performance (baseline cycles / cycles) with 1 and 2 "
              "wake-up cycles, not hidden")
    fig = plot.normalized_bars(frame, "performance", by="workload", hue="wakeup_cycles", mean="geo",
                               ylabel="performance vs baseline",
                               title="Fig. 7: drowsy lines with 1 and 2 wake-up cycles")
    lo, hi = frame["performance"].min(), frame["performance"].max()
    fig.axes[0].set_ylim(min(0.9, lo - 0.01), max(1.1, hi + 0.01))
    ctx.figure(fig, "drowsy_fig7_performance", "Fig. 7: performance impact of drowsy lines")
    return frame


# ---- policies ----------------------------------------------------------------------------------------

POLICIES = {
    "drowsy (window 0)": {"l1d.power": "drowsy", "l2.power": "drowsy"},
    "drowsy (window 1000)": {"l1d.power": "drowsy", "l2.power": "drowsy", "drowsy.window": 1000},
    "drowsy periodic (Flautner, 4000)": {"l1d.power": "drowsy", "l2.power": "drowsy", "drowsy.period": 4000},
    "decay (Kaxiras, 8192)": {"l1d.power": "decay", "l2.power": "decay", "decay.interval": 8192},
}


def policies(ctx, base):
    import matplotlib.pyplot as plt
    import pandas as pd

    from gpucachex import plot

    runs = run_spec(ctx, "drowsy_policies", POLICIES)
    b = base.set_index("workload")
    rows = []
    for _, r in runs.iterrows():
        ref = b.loc[r["workload"]]
        row = {"workload": r["workload"], "policy": r["point"], "performance": ref["cycles"] / r["cycles"]}
        for level, label in LEVELS.items():
            used = ref[f"{level}_data_accesses"] > 0
            row[f"{label} energy"] = r[f"{level}_energy_j"] / ref[f"{level}_energy_j"] if used else np.nan
            row[f"{label} static energy"] = (r[f"{level}_static_energy_j"] / ref[f"{level}_static_energy_j"]
                                             if used else np.nan)
            row[f"{label} misses"] = r[f"{level}_misses"] / ref[f"{level}_misses"] if used and ref[
                f"{level}_misses"] else np.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    ctx.table(frame, "drowsy_policies_summary", "Drowsy policies vs the references: L1/L2 energy, static energy, "
              "misses and performance relative to the baseline (32 nm, drowsy 0.4 V, 1 wake-up cycle not hidden)")
    fig, axes = plt.subplots(3, 1, figsize=(max(10, 0.55 * frame["workload"].nunique() + 3), 9))
    for ax, metric in zip(axes, ("L1 energy", "L2 energy", "performance")):
        plot.normalized_bars(frame.dropna(subset=[metric]), metric, by="workload", hue="policy", ax=ax,
                             mean="geo" if metric == "performance" else "arith", ylabel=f"{metric} vs baseline",
                             title=metric)
    fig.tight_layout()
    ctx.figure(fig, "drowsy_policies", "Drowsy (window 0, window 1000), Flautner's periodic policy and cache decay: "
               "cache energy and performance relative to the baseline")
    return frame


def run(ctx) -> None:
    base = run_spec(ctx, "drowsy_baseline")
    characterisation(ctx, base)
    power = run_spec(ctx, "drowsy_power", variants={"lanes": {"dwl_select": "lanes"}})
    fig6(ctx, base, power)
    perf = run_spec(ctx, "drowsy_perf")
    fig7(ctx, base, perf)
    policies(ctx, base)
