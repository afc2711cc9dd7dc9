"""Figures in the style of the papers. Each function takes a DataFrame (a sweep's rows) and returns a
matplotlib Figure; none of them simulates.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def normalized_bars(frame, metric: str, *, by: str = "workload", hue: str | None = None, mean: str = "arith",
                    ylabel: str | None = None, title: str = "", reference: float | None = 1.0, ax=None):
    """Grouped bars of `metric` per `by` value (one bar per `hue` value), with a final group for the
    mean over workloads (arithmetic, or geometric with mean="geo")."""
    import pandas as pd

    if metric not in frame.columns:
        raise KeyError(f"no column {metric!r} in the frame")
    hues = [None] if hue is None else list(dict.fromkeys(frame[hue]))
    groups = list(dict.fromkeys(frame[by]))
    table = pd.DataFrame(index=groups, columns=[str(h) for h in hues], dtype=float)
    for h in hues:
        rows = frame if h is None else frame[frame[hue] == h]
        values = rows.groupby(by)[metric].mean()
        table[str(h)] = values.reindex(groups)
    avg = table.apply(lambda c: float(np.exp(np.log(c.dropna()).mean())) if mean == "geo" else float(c.mean()))
    table.loc["mean" if mean != "geo" else "geomean"] = avg
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(6, 0.5 * len(table) + 2), 3.2))
    width = 0.8 / len(table.columns)
    x = np.arange(len(table))
    for i, col in enumerate(table.columns):
        ax.bar(x + (i - (len(table.columns) - 1) / 2) * width, table[col], width,
               label=None if hue is None else col)
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8)
    ax.set_xticks(x, table.index, rotation=45, ha="right")
    ax.set_ylabel(ylabel or metric)
    if hue is not None:
        ax.legend(fontsize="small", ncol=min(4, len(table.columns)))
    ax.set_title(title)
    fig.tight_layout()
    return fig


def lines(frame, x: str, y: str, *, hue: str | None = "workload", xlabel: str | None = None,
          ylabel: str | None = None, title: str = "", logx: bool = False, ax=None):
    """`y` against a swept parameter `x`, one line per `hue` value."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.5))
    groups = [(None, frame)] if hue is None else list(frame.groupby(hue, sort=False))
    for name, rows in groups:
        rows = rows.groupby(x, sort=True)[y].mean()
        ax.plot(rows.index, rows.values, marker="o", label=None if name is None else str(name))
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if hue is not None:
        ax.legend(fontsize="small", ncol=2)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def stacked_bars(frame, columns: Sequence[str], *, by: str = "workload", labels: Sequence[str] | None = None,
                 ylabel: str = "fraction", title: str = "", ax=None):
    """One stacked bar per `by` value from the fractions in `columns` (histograms such as the
    per-block access counts)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(6, 0.5 * frame[by].nunique() + 2), 3.5))
    data = frame.groupby(by, sort=False)[list(columns)].mean()
    bottom = np.zeros(len(data))
    colors = plt.cm.viridis(np.linspace(0, 1, len(columns)))
    for col, label, color in zip(columns, labels or columns, colors):
        ax.bar(range(len(data)), data[col].values, bottom=bottom, label=label, color=color)
        bottom += data[col].values
    ax.set_xticks(range(len(data)), data.index, rotation=45, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="x-small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    ax.set_title(title)
    fig.tight_layout()
    return fig


def save(fig, path_without_suffix, formats=("png", "pdf")) -> list[str]:
    """Write a figure in each format; returns the paths."""
    from pathlib import Path

    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        p = base.with_suffix("." + fmt)
        fig.savefig(p, dpi=150, bbox_inches="tight")
        out.append(str(p))
    plt.close(fig)
    return out
