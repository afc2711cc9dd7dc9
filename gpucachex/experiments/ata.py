"""ATA-Cache (Xu et al.): private, remote-sharing, decoupled-sharing and ATA L1Ds on the paper's
30-SM GPU (preset `ata`, clusters of 10): Figure 3 (L1 latency, private vs decoupled), Figure 8 (IPC
normalized to private, high and low inter-core-locality workloads), Figure 10 (L1 latency normalized
to private), and sweeps over the cluster size and the cluster crossbar's bandwidth.

Inter-core locality is measured, not assumed: a workload has high inter-core locality when, with
private L1Ds, a line filled into an L1D is on average present in at least HIGH_LOCALITY_COPIES L1Ds
of its cluster right after the fill (`l1d_replication`, the replication the paper classifies by).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

NAME = "ata"
TITLE = "ATA-Cache: shared L1D clusters (remote, decoupled, ATA) against private L1Ds"

HIGH_LOCALITY_COPIES = 1.5
MODES = ["private", "remote", "decoupled", "ata"]
LABELS = {"private": "private", "remote": "remote-sharing", "decoupled": "decoupled-sharing", "ata": "ATA-Cache"}

# The paper's averages (Section IV): ATA's IPC over private on high inter-core-locality workloads,
# ATA's IPC over decoupled on low ones, and the L1 latency of decoupled and ATA over private, set
# beside two measures of that latency: `l1_latency_avg` (a load's issue to its last answer, L2 and
# DRAM included) and `avg_l1_access_latency` (issue to the completion of its L1D accesses, the
# paper's "completion time of the L1 cache accesses for all requests from a single load instruction").
PAPER = {
    "ata_ipc_vs_private_high": 0.120,
    "ata_ipc_vs_decoupled_low": 0.229,
    "decoupled_l1_latency_vs_private": 0.672,
    "ata_l1_latency_vs_private": 0.060,
    "decoupled_l1_latency_vs_private_max": 1.74,  # "up to 2.74x"
    "decoupled_l1_access_latency_vs_private": 0.672,
    "ata_l1_access_latency_vs_private": 0.060,
    "decoupled_l1_access_latency_vs_private_max": 1.74,
}
LATENCIES = {"l1_latency": "l1_latency_avg", "l1_access": "avg_l1_access_latency"}

SHARING = "l1d.sharing"


def locality_classes(frame: pd.DataFrame) -> pd.Series:
    """'high' or 'low' inter-core locality per workload, from its private run's replication."""
    private = frame[frame[SHARING] == "private"].groupby("workload")["l1d_replication"].mean()
    return private.map(lambda copies: "high" if copies >= HIGH_LOCALITY_COPIES else "low").rename("locality")


def normalized(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`metric` of every row divided by the private run with the same workload, seed and swept
    cluster keys."""
    keys = ["workload", "seed"] + [k for k in ("l1d.cluster_size", "cluster.flits_per_cycle") if k in frame.columns]
    base = frame[frame[SHARING] == "private"][keys + [metric]].rename(columns={metric: "__base"})
    out = frame.merge(base, on=keys, how="left")
    out[f"{metric}_norm"] = out[metric] / out["__base"]
    return out.drop(columns="__base")


def _ratios(runs: pd.DataFrame) -> dict:
    """One workload's runs with one seed, indexed by organisation: its ratios over private."""
    row = {"replication": runs.loc["private", "l1d_replication"]}
    for m in MODES:
        if m not in runs.index:
            continue
        row[f"ipc_{m}"] = runs.loc[m, "ipc"] / runs.loc["private", "ipc"]
        for name, metric in LATENCIES.items():
            row[f"{name}_{m}"] = runs.loc[m, metric] / runs.loc["private", metric]
        row[f"l1_hit_rate_{m}"] = runs.loc[m, "l1_hit_rate"]
        row[f"remote_hits_{m}"] = runs.loc[m, "l1d_remote_hits"]
        row[f"l2_requests_{m}"] = runs.loc[m, "l2_accesses"] / runs.loc["private", "l2_accesses"]
        row[f"cluster_flits_{m}"] = runs.loc[m, "cluster_flits"]
    if "ata" in runs.index and "decoupled" in runs.index:
        row["ipc_ata_vs_decoupled"] = runs.loc["ata", "ipc"] / runs.loc["decoupled", "ipc"]
    return row


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per workload: its locality class and, per organisation, IPC and L1 latency over
    private, L1 hit rates, remote hits, L2 requests and cluster traffic, each the mean over the
    seeds; with several seeds, the IPC ratios' smallest and largest values over them too (`_min`,
    `_max`: how far the run-to-run variability moves them)."""
    classes = locality_classes(frame)
    per_seed = []
    for (w, seed), runs in frame.groupby(["workload", "seed"], sort=False):
        per_seed.append({"workload": w, "seed": seed, **_ratios(runs.set_index(SHARING))})
    per_seed = pd.DataFrame(per_seed)
    grouped = per_seed.drop(columns="seed").groupby("workload", sort=False)
    out = grouped.mean()
    ipc = [c for c in out.columns if c.startswith("ipc_")]
    out = out.join(grouped[ipc].min().add_suffix("_min")).join(grouped[ipc].max().add_suffix("_max"))
    out.insert(0, "seeds", grouped.size())
    out.insert(0, "locality", classes.reindex(out.index))
    return out.reset_index()


def paper_comparison(summ: pd.DataFrame) -> pd.DataFrame:
    """The paper's averages next to ours (arithmetic means of per-workload ratios)."""
    high, low = summ[summ.locality == "high"], summ[summ.locality == "low"]

    def mean(s):
        return float(s.mean()) if len(s) else float("nan")

    ours = {
        "ata_ipc_vs_private_high": mean(high.ipc_ata) - 1,
        "ata_ipc_vs_decoupled_low": mean(low.ipc_ata_vs_decoupled) - 1,
        "decoupled_l1_latency_vs_private": mean(summ.l1_latency_decoupled) - 1,
        "ata_l1_latency_vs_private": mean(summ.l1_latency_ata) - 1,
        "decoupled_l1_latency_vs_private_max": float(summ.l1_latency_decoupled.max()) - 1,
        "decoupled_l1_access_latency_vs_private": mean(summ.l1_access_decoupled) - 1,
        "ata_l1_access_latency_vs_private": mean(summ.l1_access_ata) - 1,
        "decoupled_l1_access_latency_vs_private_max": float(summ.l1_access_decoupled.max()) - 1,
    }
    what = {
        "ata_ipc_vs_private_high": f"ATA IPC over private, high inter-core locality ({len(high)} workloads)",
        "ata_ipc_vs_decoupled_low": f"ATA IPC over decoupled, low inter-core locality ({len(low)} workloads)",
        "decoupled_l1_latency_vs_private": "decoupled L1 latency (issue to last answer) over private (all workloads)",
        "ata_l1_latency_vs_private": "ATA L1 latency (issue to last answer) over private (all workloads)",
        "decoupled_l1_latency_vs_private_max": "decoupled L1 latency (issue to last answer) over private, largest",
        "decoupled_l1_access_latency_vs_private": "decoupled L1 access latency (the paper's) over private (all workloads)",
        "ata_l1_access_latency_vs_private": "ATA L1 access latency (the paper's) over private (all workloads)",
        "decoupled_l1_access_latency_vs_private_max": "decoupled L1 access latency (the paper's) over private, largest",
    }
    return pd.DataFrame([{"quantity": k, "description": what[k], "paper": PAPER[k], "ours": ours[k],
                          "difference": ours[k] - PAPER[k]} for k in PAPER])


def _grouped_bars(frame, metric: str, modes: list[str], ylabel: str, title: str, reference=1.0, spread=False):
    """Bars per workload, high and low inter-core locality side by side, each with its mean."""
    import matplotlib.pyplot as plt

    from gpucachex import plot

    classes = locality_classes(frame)
    rows = frame[frame[SHARING].isin(modes)].copy()
    rows["organisation"] = pd.Categorical(rows[SHARING].map(LABELS), [LABELS[m] for m in modes])
    # A stable sort: pandas' default quicksort reorders the rows of one organisation, and with them
    # the workloads, which the bars show in the order of their first row.
    rows = rows.sort_values(["organisation"], kind="stable")
    groups = [g for g in ("high", "low") if (classes == g).any()]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 + 3.5 * len(groups), 3.6), squeeze=False,
                             gridspec_kw={"width_ratios": [max(1, (classes == g).sum()) + 1 for g in groups]})
    for i, (ax, g) in enumerate(zip(axes[0], groups)):
        part = rows[rows["workload"].map(classes) == g]
        plot.normalized_bars(part, metric, hue="organisation", ylabel=ylabel, reference=reference,
                             title=f"{g} inter-core locality", spread=spread, ax=ax)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
        if i > 0:
            ax.get_legend().remove()
        else:
            ax.legend(fontsize="small", ncol=len(modes), loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def figure3(frame):
    """L1 latency in cycles per load instruction, private and decoupled-sharing."""
    return _grouped_bars(frame, "l1_latency_avg", ["private", "decoupled"], "L1 latency (cycles)",
                         "Figure 3: L1 latency of private and decoupled-sharing L1Ds", reference=None)


def figure8(frame):
    norm = normalized(frame, "ipc")
    return _grouped_bars(norm, "ipc_norm", ["decoupled", "remote", "ata"], "IPC / private",
                         "Figure 8: IPC normalized to private L1Ds (whiskers: smallest to largest over seeds)",
                         spread=True)


def figure10(frame):
    norm = normalized(frame, "l1_latency_avg")
    return _grouped_bars(norm, "l1_latency_avg_norm", ["decoupled", "remote", "ata"], "L1 latency / private",
                         "Figure 10: L1 latency (issue to last answer) normalized to private L1Ds")


def figure10_l1_access(frame):
    """Cycles from a load's issue to the completion of its L1D accesses, private, ATA and decoupled, on
    a log scale: private's misses complete the cycle after issue, so ratios over it say little."""
    fig = _grouped_bars(frame, "avg_l1_access_latency", ["private", "ata", "decoupled"],
                        "L1 access latency (cycles)", "Figure 10, the paper's measure: issue to the completion "
                        "of a load's L1D accesses", reference=None)
    for ax in fig.axes:
        ax.set_yscale("log")
        ax.set_ylim(1, ax.get_ylim()[1] * 20)  # room for the legend above the bars
    return fig


def _sweep_lines(frame, x: str, xlabel: str, title: str, logx=False):
    """Means over workloads against a swept key: IPC over private, L1 hit rate, L1 latency over
    private, replication and cluster traffic, one line per organisation."""
    import matplotlib.pyplot as plt

    norm = normalized(normalized(frame, "ipc"), "l1_latency_avg")
    norm["organisation"] = norm[SHARING].map(LABELS)
    panels = [("ipc_norm", "IPC / private"), ("l1_hit_rate", "L1 hit rate (local + remote)"),
              ("l1_latency_avg_norm", "L1 latency / private"), ("l1d_replication", "copies of a line at fill"),
              ("cluster_flits", "cluster crossbar flits")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4))
    for ax, (metric, label) in zip(axes, panels):
        for name, rows in norm.groupby("organisation", sort=False):
            means = rows.groupby(x)[metric].mean()
            ax.plot(means.index, means.values, marker="o", label=name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        if logx:
            ax.set_xscale("log")
            ax.set_xticks(sorted(frame[x].unique()), [str(v) for v in sorted(frame[x].unique())])
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def run(ctx) -> None:
    suite = ctx.sweep("ata_suite")
    summ = summary(suite)
    ctx.table(summ, "ata_summary", "Per workload: inter-core locality class (private replication) and, per "
                                   "organisation, IPC and L1 latency over private, hit rates, remote hits, L2 "
                                   "requests over private, cluster flits")
    cmp = paper_comparison(summ)
    ctx.table(cmp, "ata_paper_comparison", "The paper's averages next to ours")
    ctx.figure(figure3(suite), "ata_fig3_l1_latency", "Figure 3: L1 latency (cycles per load instruction) of "
                                                      "private and decoupled-sharing L1Ds")
    ctx.figure(figure8(suite), "ata_fig8_ipc", "Figure 8: IPC normalized to private L1Ds, high and low inter-core "
                                               "locality")
    ctx.figure(figure10(suite), "ata_fig10_l1_latency", "Figure 10: L1 latency (a load's issue to its last "
                                                        "answer) normalized to private L1Ds")
    ctx.figure(figure10_l1_access(suite), "ata_fig10b_l1_access_latency",
               "Figure 10 with the paper's measure: cycles from a load's issue to the completion of its L1D "
               "accesses (an L1D's answer, or its miss leaving for the L2)")

    sizes = ctx.sweep("ata_cluster_size")
    ctx.figure(_sweep_lines(sizes, "l1d.cluster_size", "SMs per cluster", "Cluster size (30 SMs)", logx=True),
               "ata_cluster_size", "Means over workloads against the cluster size: IPC and L1 latency over private, "
                                   "L1 hit rate, replication at fills, cluster flits")
    bandwidth = ctx.sweep("ata_bandwidth")
    ctx.figure(_sweep_lines(bandwidth, "cluster.flits_per_cycle", "cluster crossbar flits per cycle per port",
                            "Cluster crossbar bandwidth (clusters of 10)", logx=True),
               "ata_bandwidth", "Means over workloads against the cluster crossbar's bandwidth")
    per_size = (normalized(sizes, "ipc").groupby(["l1d.cluster_size", SHARING])
                [["ipc_norm", "l1_hit_rate", "l1_latency_avg", "l1d_replication", "cluster_flits"]].mean().reset_index())
    ctx.table(per_size, "ata_cluster_size_means", "Means over workloads per cluster size and organisation")
    per_bw = (normalized(bandwidth, "ipc").groupby(["cluster.flits_per_cycle", SHARING])
              [["ipc_norm", "l1_hit_rate", "l1_latency_avg", "cluster_flits"]].mean().reset_index())
    ctx.table(per_bw, "ata_bandwidth_means", "Means over workloads per crossbar bandwidth and organisation")
