"""AdmL1D (Do, Kim, Kim): switching the L1D off when its warm-up R-to-A ratio exceeds the B-threshold.
Reproduces Figures 1, 2, 5, 6 and 7, sweeps the B-threshold and the warm-up period, and tabulates the
classification accuracy, the IPC gain and L1D power saving on Type-N workloads next to the paper's.

Definitions (the paper's, Section 3.2 and 5): a workload is Type-N when its IPC without an L1D is at
least its IPC with one (`l1d.admission = "off"` vs `"always"`), else Type-P; AdmL1D predicts Type-N
when it switches the L1D off. Averages over workloads are arithmetic means of per-workload ratios,
as in the paper; geometric means are given beside them.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpucachex.experiments import by_workload, workload_classes

NAME = "admL1D"
TITLE = "AdmL1D: workload characteristics-based L1 data cache switching-off (Do, Kim, Kim)"

# The paper's headline numbers (abstract, Sections 5.2 and 5.3).
PAPER = {
    "ipc_gain_type_n": 0.094,         # AdmL1D's IPC over the baseline, Type-N average
    "l1d_power_saving_type_n": 0.521,  # L1D power saved, Type-N average
    "l1d_energy_saving_type_n": 0.585,
    "ipc_change_type_p_worst": 0.0,    # "does not degrade the performance for all simulated applications"
    "ipc_change_no_l1d_all": -0.086,   # the L1D off for every application
    "b_threshold": 3.0,
}

ADMISSION = "l1d.admission"
THRESHOLD = "l1d.admL1D.b_threshold"
WARMUP = "l1d.admL1D.warmup_cycles"


# ---- tables ---------------------------------------------------------------------------------------

def classify(main):
    """One row per workload from the main sweep (always / off / admL1D): IPCs and their ratios, the
    L1D miss rate, the Type (actual and predicted), R-to-A over the warm-up and the whole run, and
    the L1D power and energy AdmL1D saves."""
    import pandas as pd

    on, off, adm = (by_workload(main, ADMISSION, a) for a in ("always", "off", "admL1D"))
    out = pd.DataFrame(index=on.index)
    out["class"] = workload_classes(out.index)
    out["cycles"] = on["cycles"]
    out["ipc_always"] = on["ipc"]
    out["ipc_off"] = off["ipc"]
    out["ipc_admL1D"] = adm["ipc"]
    out["ipc_off_norm"] = off["ipc"] / on["ipc"]
    out["ipc_admL1D_norm"] = adm["ipc"] / on["ipc"]
    out["l1d_miss_rate"] = on["l1d_miss_rate"]
    out["l1d_hit_rate"] = on["l1d_hit_rate"]
    out["r_to_a_warmup"] = adm["admL1D_r_to_a"]
    out["r_to_a_run"] = on["l1d_r_to_a"]
    out["switched_off"] = adm["admL1D_switched_off"] >= 1.0
    out["decided"] = adm["admL1D_decided"] >= 1.0
    out["type"] = np.where(off["ipc"] >= on["ipc"], "N", "P")
    out["predicted"] = np.where(out["switched_off"], "N", "P")
    out["correct"] = out["type"] == out["predicted"]
    for what in ("power_w", "energy_j"):
        out[f"l1d_{what}_always"] = on[f"l1d_{what}"]
        out[f"l1d_{what}_off"] = off[f"l1d_{what}"]
        out[f"l1d_{what}_admL1D"] = adm[f"l1d_{what}"]
    out["l1d_power_saving"] = 1 - adm["l1d_power_w"] / on["l1d_power_w"]
    out["l1d_energy_saving"] = 1 - adm["l1d_energy_j"] / on["l1d_energy_j"]
    out["l1d_power_saving_off"] = 1 - off["l1d_power_w"] / on["l1d_power_w"]
    out.index.name = "workload"
    return out.reset_index()


def _geo(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.exp(np.log(x).mean())) if len(x) else float("nan")


def _mean(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(x.mean()) if len(x) else float("nan")


def headline(summary):
    """The paper's headline numbers measured on our suite, one row each: metric, ours, paper, note."""
    import pandas as pd

    n = summary[summary["type"] == "N"]
    p = summary[summary["type"] == "P"]
    best = summary["ipc_admL1D"] / np.maximum(summary["ipc_always"], summary["ipc_off"])
    rows = [
        ("workloads", len(summary), float("nan"), "simulated"),
        ("type_n_workloads", len(n), 5, "IPC without the L1D >= with it (paper: 5 of 15)"),
        ("classification_accuracy", _mean(summary["correct"]), 1.0,
         "AdmL1D switched off exactly the Type-N workloads (paper: every one classified right)"),
        ("type_n_switched_off", _mean(n["switched_off"]), 1.0, "fraction of Type-N workloads switched off"),
        ("type_p_kept", _mean(~p["switched_off"]), 1.0, "fraction of Type-P workloads whose L1D stayed on"),
        ("ipc_gain_type_n", _mean(n["ipc_admL1D_norm"]) - 1, PAPER["ipc_gain_type_n"],
         "AdmL1D IPC / baseline IPC - 1, arithmetic mean over Type-N"),
        ("ipc_gain_type_n_geomean", _geo(n["ipc_admL1D_norm"]) - 1, float("nan"), "geometric mean over Type-N"),
        ("ipc_gain_type_n_median", float(np.median(n["ipc_admL1D_norm"])) - 1 if len(n) else float("nan"),
         float("nan"), "median over Type-N"),
        ("ipc_gain_type_n_no_l1d", _mean(n["ipc_off_norm"]) - 1, float("nan"),
         "the bound: no L1D from cycle 0 on Type-N, arithmetic mean"),
        ("l1d_power_saving_type_n", _mean(n["l1d_power_saving"]), PAPER["l1d_power_saving_type_n"],
         "1 - AdmL1D L1D power / baseline L1D power, mean over Type-N"),
        ("l1d_energy_saving_type_n", _mean(n["l1d_energy_saving"]), PAPER["l1d_energy_saving_type_n"],
         "1 - AdmL1D L1D energy / baseline, mean over Type-N"),
        ("ipc_change_type_p_mean", _mean(p["ipc_admL1D_norm"]) - 1, 0.0, "AdmL1D on Type-P, arithmetic mean"),
        ("ipc_change_type_p_worst", float(p["ipc_admL1D_norm"].min()) - 1 if len(p) else float("nan"),
         PAPER["ipc_change_type_p_worst"], "AdmL1D on the Type-P workload it slows most"),
        ("type_p_slowed_over_1pct", int((p["ipc_admL1D_norm"] < 0.99).sum()), 0,
         "Type-P workloads AdmL1D slows by more than 1%"),
        ("decisions_within_3pct_of_best", int((best >= 0.97).sum()), float("nan"),
         "workloads where AdmL1D's IPC is within 3% of the better of L1D on and L1D off"),
        ("ipc_vs_best_choice_mean", _mean(best), float("nan"),
         "AdmL1D IPC / max(IPC with L1D, IPC without), arithmetic mean"),
        ("ipc_change_all_admL1D", _mean(summary["ipc_admL1D_norm"]) - 1, float("nan"),
         "AdmL1D on every workload, arithmetic mean"),
        ("ipc_change_no_l1d_all", _mean(summary["ipc_off_norm"]) - 1, PAPER["ipc_change_no_l1d_all"],
         "the L1D off for every workload, arithmetic mean"),
        ("ipc_change_no_l1d_all_geomean", _geo(summary["ipc_off_norm"]) - 1, float("nan"),
         "the L1D off for every workload, geometric mean"),
    ]
    return pd.DataFrame(rows, columns=["metric", "ours", "paper", "note"])


def sweep_summary(frame, summary, key: str):
    """Per value of the swept `key`: accuracy, fraction switched off, the IPC of Type-N and Type-P
    workloads against the baseline (types from the main sweep) and the Type-N L1D power saving."""
    import pandas as pd

    ref = summary.set_index("workload")
    rows = []
    for value, runs in frame.groupby(key, sort=True):
        runs = runs.set_index("workload").join(ref[["type", "ipc_always", "l1d_power_w_always"]], how="inner")
        switched = runs["admL1D_switched_off"] >= 1.0
        norm = runs["ipc"] / runs["ipc_always"]
        saving = 1 - runs["l1d_power_w"] / runs["l1d_power_w_always"]
        n, p = runs["type"] == "N", runs["type"] == "P"
        rows.append({
            key: value, "workloads": len(runs),
            "accuracy": _mean(switched == n),
            "switched_off": _mean(switched),
            "type_n_switched_off": _mean(switched[n]),
            "type_p_kept": _mean(~switched[p]),
            "ipc_gain_type_n": _mean(norm[n]) - 1,
            "ipc_change_type_p_mean": _mean(norm[p]) - 1,
            "ipc_change_type_p_worst": float(norm[p].min()) - 1 if p.any() else float("nan"),
            "ipc_change_all": _mean(norm) - 1,
            "l1d_power_saving_type_n": _mean(saving[n]),
            "r_to_a_warmup_mean": _mean(runs["admL1D_r_to_a"].replace(np.inf, np.nan).dropna()),
        })
    return pd.DataFrame(rows)


# ---- figures ---------------------------------------------------------------------------------------

def _clip(ax, x, values, top: float) -> None:
    """Cut the y axis at `top` and write the value of each bar that goes beyond it (a few workloads
    run several times faster without an L1D and would flatten every other bar)."""
    ax.set_ylim(top=top)
    for xi, v in zip(x, values):
        if np.isfinite(v) and v > top:
            ax.text(xi, top * 0.98, f"{v:.1f}", ha="center", va="top", fontsize="x-small", rotation=90)


def _typed_bars(summary, columns, labels, ylabel, title, reference=1.0, percent=False, top=None):
    """Bars per workload, Type-P first then Type-N, with the mean of each type at the end (the
    paper's Figs. 1, 6 and 7)."""
    import matplotlib.pyplot as plt

    table = summary.sort_values(["type", "workload"], ascending=[False, True])
    names = [f"{w} ({t})" for w, t in zip(table["workload"], table["type"])]
    values = [list(table[c]) for c in columns]
    for t in ("P", "N"):
        rows = table[table["type"] == t]
        names.append(f"mean {t}")
        for i, c in enumerate(columns):
            values[i].append(float(rows[c].mean()) if len(rows) else float("nan"))
    scale = 100.0 if percent else 1.0
    fig, ax = plt.subplots(figsize=(max(7, 0.42 * len(names) + 2), 3.4))
    x = np.arange(len(names))
    width = 0.8 / len(columns)
    for i, (vals, label) in enumerate(zip(values, labels)):
        xs = x + (i - (len(columns) - 1) / 2) * width
        ax.bar(xs, np.asarray(vals) * scale, width, label=label)
        if top is not None:
            _clip(ax, xs, np.asarray(vals) * scale, top)
    if reference is not None:
        ax.axhline(reference * scale, color="black", linewidth=0.8)
    n_p = int((table["type"] == "P").sum())
    ax.axvline(n_p - 0.5, color="grey", linewidth=0.6, linestyle=":")
    ax.axvline(len(table) - 0.5, color="grey", linewidth=0.6)
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize="small")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    if len(columns) > 1:
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def figure1(summary):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(max(7, 0.42 * len(summary) + 2), 6.2))
    table = summary.sort_values(["type", "workload"], ascending=[False, True])
    names = [f"{w} ({t})" for w, t in zip(table["workload"], table["type"])]
    x = np.arange(len(names))
    colors = ["tab:blue" if t == "P" else "tab:red" for t in table["type"]]
    axes[0].bar(x, table["ipc_off_norm"], color=colors)
    _clip(axes[0], x, table["ipc_off_norm"], 2.0)
    axes[0].axhline(1.0, color="black", linewidth=0.8)
    axes[0].set_ylabel("IPC without L1D\n/ with L1D")
    axes[0].set_title("(a) Normalized IPC without the L1D (red: Type-N)", fontsize="medium")
    axes[1].bar(x, table["l1d_miss_rate"], color=colors)
    axes[1].set_ylim(0, 1.05)
    axes[1].set_ylabel("L1D miss rate")
    axes[1].set_title("(b) L1D miss rate with the L1D", fontsize="medium")
    for ax in axes:
        ax.set_xticks(x, names, rotation=60, ha="right", fontsize="small")
    fig.tight_layout()
    return fig


def figure2(series: dict, types: dict, warmup: int, threshold: float, horizon: int):
    """(a) R-to-A per sampling interval and (b) the cumulative R-to-A a warm-up ending there would
    measure, over the first `horizon` cycles of baseline runs."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=False)
    for name, ts in series.items():
        ts = ts[ts["cycle"] <= horizon]
        style = "-" if types.get(name) == "P" else "--"
        label = f"{name} ({types.get(name, '?')})"
        axes[0].plot(ts["cycle"], ts["r_to_a"], style, linewidth=1, label=label)
        fails, acc = ts["l1d_fails"].cumsum(), ts["l1d_accesses"].cumsum()
        axes[1].plot(ts["cycle"], fails / acc.where(acc > 0), style, linewidth=1, label=label)
    for ax in axes:
        ax.axhline(threshold, color="black", linewidth=0.8)
        ax.set_xlabel("cycle")
    axes[1].axvline(warmup, color="grey", linewidth=0.8, linestyle=":")
    axes[0].set_ylabel("R-to-A in the interval")
    axes[1].set_ylabel("R-to-A from cycle 0")
    axes[0].set_title("(a) R-to-A per interval (solid: Type-P, dashed: Type-N)", fontsize="medium")
    axes[1].set_title("(b) What a warm-up ending at that cycle measures", fontsize="medium")
    axes[1].legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    return fig


def figure5(per_sm, name: str, scope_rows, summary, threshold: float):
    """(a) Per-SM L1D accesses, misses and reservation fails of one baseline run (the paper shows
    BFS); (b) the spread of the warm-up R-to-A over SMs for every workload, with the global value and
    the B-threshold the runs used."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1, 1.4]})
    x = np.arange(len(per_sm))
    for i, col in enumerate(("accesses", "misses", "fails")):
        axes[0].bar(x + (i - 1) * 0.27, per_sm[col], 0.27, label=col)
    axes[0].set_xticks(x, [str(s) for s in per_sm["sm"]])
    axes[0].set_xlabel("SM")
    axes[0].set_ylabel("count over the run")
    axes[0].set_title(f"(a) L1D behaviour per SM: {name}", fontsize="medium")
    axes[0].legend(fontsize="small")
    rows = scope_rows.set_index("workload").join(summary.set_index("workload")[["r_to_a_warmup", "type"]])
    rows = rows.sort_values(["type", "r_to_a_warmup"], ascending=[False, True])
    y = np.arange(len(rows))
    lo, hi = rows["admL1D_sm_r_to_a_min"], rows["admL1D_sm_r_to_a_max"]
    axes[1].vlines(y, lo, hi, color="tab:blue", linewidth=3, label="SMs' range")
    axes[1].plot(y, rows["r_to_a_warmup"], "k_", markersize=10, label="whole GPU")
    axes[1].set_xticks(y, [f"{w} ({t})" for w, t in zip(rows.index, rows["type"])], rotation=60, ha="right",
                       fontsize="small")
    axes[1].set_yscale("symlog", linthresh=1.0)
    finite = np.asarray(hi[np.isfinite(hi)], dtype=float)
    axes[1].set_ylim(0, 2 * max(float(finite.max()) if len(finite) else 1.0, threshold))
    axes[1].axhline(threshold, color="black", linewidth=0.8, linestyle=":")
    axes[1].set_ylabel("warm-up R-to-A")
    axes[1].set_title("(b) Warm-up R-to-A across SMs", fontsize="medium")
    axes[1].legend(fontsize="small")
    fig.tight_layout()
    return fig


def sweep_figure(table, key: str, xlabel: str, logx: bool, default: float):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    x = table[key]
    axes[0].plot(x, table["accuracy"] * 100, "o-", label="classification accuracy")
    axes[0].plot(x, table["type_n_switched_off"] * 100, "s--", label="Type-N switched off")
    axes[0].plot(x, table["type_p_kept"] * 100, "^--", label="Type-P kept on")
    axes[0].set_ylabel("%")
    axes[0].set_ylim(-5, 105)
    axes[1].plot(x, table["ipc_gain_type_n"] * 100, "o-", label="Type-N IPC gain (mean)")
    axes[1].plot(x, table["ipc_change_type_p_mean"] * 100, "s-", label="Type-P IPC change (mean)")
    axes[1].plot(x, table["ipc_change_type_p_worst"] * 100, "^:", label="Type-P IPC change (worst)")
    axes[1].axhline(0, color="black", linewidth=0.8)
    axes[1].set_ylabel("IPC vs baseline, %")
    for ax in axes:
        ax.axvline(default, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlabel(xlabel)
        if logx:
            ax.set_xscale("log")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


# ---- runs that need more than a sweep row -----------------------------------------------------------

def baseline_runs(ctx, name: str):
    """Simulate the spec `name` workload by workload and keep each Result (time series, per-SM)."""
    from gpucachex import presets, simulate
    from gpucachex.experiments import spec_workloads

    spec = ctx.spec(name)
    cfg = presets.get(spec["preset"], **spec["set"])
    names = spec_workloads(spec)
    with ThreadPoolExecutor(max_workers=ctx.jobs or None) as pool:
        results = list(pool.map(lambda w: simulate(cfg, w, seed=spec["seeds"][0]), names))
    return {w.split(":")[0]: r for w, r in zip(names, results)}


def run(ctx) -> None:
    import pandas as pd

    from gpucachex import presets
    from gpucachex.techniques.admL1D import per_sm

    defaults = presets.get("admL1D")
    warmup, threshold = defaults[WARMUP], defaults[THRESHOLD]
    series_spec = ctx.spec("admL1D_timeseries")
    if len(series_spec["seeds"]) != 1:
        # Figs. 2 and 5 draw one baseline run per workload; checked before any sweep spends its time.
        raise ValueError(f"{series_spec['path']}: Figs. 2 and 5 draw one run per workload, so this spec takes one "
                         f"seed, got seeds = {series_spec['seeds']}")

    main = ctx.sweep("admL1D_main")
    summary = classify(main)
    ctx.table(summary, "admL1D_summary", "Per workload: IPC always / off / AdmL1D, miss rate, Type, R-to-A, "
                                          "L1D power and energy saving")
    ctx.table(headline(summary), "admL1D_headline", "Headline numbers next to the paper's")
    ctx.figure(figure1(summary), "admL1D_fig1", "Fig. 1: (a) IPC without the L1D, normalized; (b) L1D miss rate")
    ctx.figure(_typed_bars(summary, ["ipc_admL1D_norm", "ipc_off_norm"], ["AdmL1D", "no L1D"],
                           "IPC / baseline", "Fig. 6: IPC of AdmL1D (and of no L1D) normalized to the baseline",
                           top=2.0),
               "admL1D_fig6", "Fig. 6: IPC of AdmL1D normalized to the baseline, per workload and type")
    ctx.figure(_typed_bars(summary, ["l1d_power_saving", "l1d_energy_saving"], ["power", "energy"],
                           "L1D saving, %", "Fig. 7: L1D power and energy saved by AdmL1D", reference=0.0,
                           percent=True),
               "admL1D_fig7", "Fig. 7: L1D power (and energy) saving of AdmL1D, per workload and type")

    for spec_name, key, label, logx, default in (("admL1D_threshold", THRESHOLD, "B-threshold", False, threshold),
                                                 ("admL1D_warmup", WARMUP, "warm-up period (cycles)", True, warmup)):
        rows = ctx.sweep(spec_name)
        table = sweep_summary(rows, summary, key)
        ctx.table(table, f"{spec_name}_summary", f"{label} sweep: accuracy and IPC by type")
        ctx.figure(sweep_figure(table, key, label, logx, default), spec_name,
                   f"{label} sweep: classification accuracy and IPC against the baseline")

    scope = ctx.sweep("admL1D_scope")
    scope_rows = scope[["workload", "ipc", "admL1D_sms_off", "admL1D_sm_r_to_a_min", "admL1D_sm_r_to_a_max"]]
    scope_table = scope_rows.merge(summary[["workload", "type", "ipc_always", "ipc_admL1D", "switched_off"]],
                                   on="workload")
    scope_table["ipc_per_sm_norm"] = scope_table["ipc"] / scope_table["ipc_always"]
    scope_table["ipc_global_norm"] = scope_table["ipc_admL1D"] / scope_table["ipc_always"]
    ctx.table(scope_table, "admL1D_scope_summary", "Per-SM against global decisions")

    runs = baseline_runs(ctx, "admL1D_timeseries")
    types = dict(zip(summary["workload"], summary["type"]))
    series = {w: r.timeseries for w, r in runs.items()}
    ts_rows = pd.concat([s.assign(workload=w) for w, s in series.items()], ignore_index=True)
    ctx.table(ts_rows, "admL1D_timeseries_rows", "Baseline time series (per interval) of the Fig. 2 workloads")
    horizon = 1_000_000 if not ctx.quick else 200_000
    ctx.figure(figure2(series, types, warmup, threshold, horizon), "admL1D_fig2",
               "Fig. 2: R-to-A over time of baseline runs")
    sm_frames = pd.concat([per_sm(r).assign(workload=w) for w, r in runs.items()], ignore_index=True)
    ctx.table(sm_frames, "admL1D_per_sm", "Per-SM L1D accesses, misses and fails of the baseline runs")
    shown = "bfs" if "bfs" in runs else next(iter(runs))
    ctx.figure(figure5(per_sm(runs[shown]), shown, scope_rows, summary, threshold), "admL1D_fig5",
               "Fig. 5: L1D behaviour across SMs")
