"""Figures in the style of the papers. Each function takes a DataFrame (a sweep's rows) and returns a
matplotlib Figure; none of them simulates: normalized_bars, lines, stacked_bars, histogram, heatmap,
pareto (with pareto_front, the rows on the frontier), and save (PNG and PDF).
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Sequence

import matplotlib

# Scripts, CI and `gpucachex reproduce` have no display: draw off-screen, unless a backend was chosen
# already (a notebook's inline backend, MPLBACKEND, or a program that imported pyplot first).
if "ipykernel" not in sys.modules and "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _require(frame, *columns, values: Sequence[str] = (), numeric: bool = True) -> None:
    """KeyError naming the first of `columns`, then of `values`, (None ones skipped) the frame lacks;
    ValueError for a frame without rows (a sweep whose runs all failed), or without a row holding a
    value in every one of `values` (a metric no run reported, a failed baseline's ratios): either
    would draw an empty figure without a word. TypeError for a column of `values` that holds other
    things than numbers, unless not `numeric`."""
    for col in (*columns, *values):
        if col is not None and col not in frame.columns:
            raise KeyError(f"no column {col!r} in the frame (columns: {', '.join(map(str, frame.columns))})")
    if len(frame) == 0:
        raise ValueError("nothing to plot: the frame has no rows")
    if numeric:
        _require_numbers(frame, *values)
    if values and not frame[list(values)].notna().all(axis=1).any():
        shown = " and ".join(repr(c) for c in values)
        raise ValueError(f"nothing to plot: no row of the frame has a value in {shown} (every one is missing)")


def _require_numbers(frame, *columns: str) -> None:
    """TypeError naming the first of `columns` that holds something other than numbers (labels, a
    column read back as text): pandas would fail inside a mean ("dtype 'str' does not support
    operation 'mean'") and numpy inside a conversion ("could not convert string to float"), neither
    naming the column. Missing values are numbers' absence, not an error."""
    import numbers

    import pandas as pd

    for col in columns:
        if pd.api.types.is_numeric_dtype(frame[col]):   # bool too: its mean is a fraction
            continue
        bad = [v for v in frame[col] if not (isinstance(v, numbers.Real) or v is None or v is pd.NA)]
        if bad:
            raise TypeError(f"column {col!r} holds {frame[col].dtype} values, not numbers (such as {bad[0]!r}); "
                            f"it cannot be plotted as a value")


def _warn_partial(plot: str, what: str, frame, keys: Sequence[str | None], columns: Sequence[str]) -> None:
    """Warn naming each group of rows (one per value of `keys`: a bar, a point, a cell) that has a value
    of a `columns` column in some rows but not all: pandas' mean skips the others without a word, and
    that bar would stand for fewer rows (seeds, workloads) than the rest. Groups without any value are
    not drawn; the plots say so themselves where that would not show."""
    keys = [k for k in keys if k is not None]
    notes = []
    for col in columns:
        missing = frame[col].isna()
        if not missing.any():
            continue
        by = [frame[k] for k in keys] if keys else np.zeros(len(frame))   # no keys: one group of every row
        for key, (lacking, rows) in missing.groupby(by, sort=False).agg(["sum", "size"]).iterrows():
            if 0 < lacking < rows:
                key = key if isinstance(key, tuple) else (key,)
                where = ", ".join(f"{k} {v}" for k, v in zip(keys, key)) or "the frame"
                notes.append(f"{where}{'' if len(columns) == 1 else f', {col!r}'} ({lacking} of its {rows} rows)")
    if notes:
        shown = f" of {columns[0]!r}" if len(columns) == 1 else ""
        warnings.warn(f"{plot}: {what}{shown} leave out the rows without a value: {'; '.join(notes)}", stacklevel=3)


def normalized_bars(frame, metric: str, *, by: str = "workload", hue: str | None = None, mean: str = "arith",
                    ylabel: str | None = None, title: str = "", reference: float | None = 1.0, spread: bool = False,
                    ax=None):
    """Grouped bars of `metric` per `by` value (one bar per `hue` value), with a final group for the
    mean over workloads (arithmetic, or geometric with mean="geo"). A bar is the mean of its rows
    (e.g. over seeds); `spread` draws a whisker from their smallest to their largest value. The mean
    covers the `by` values every hue has a value for; it warns naming the others. A geometric mean
    needs every bar it covers above 0."""
    import pandas as pd

    _require(frame, metric, by, hue, values=[metric])
    if mean not in ("arith", "geo"):
        raise ValueError(f"mean must be 'arith' or 'geo', got {mean!r}")
    _warn_partial("normalized_bars", "bars", frame, [by, hue], [metric])
    hues = [None] if hue is None else list(dict.fromkeys(frame[hue]))
    groups = list(dict.fromkeys(frame[by]))
    table = pd.DataFrame(index=groups, columns=[str(h) for h in hues], dtype=float)
    low, high = table.copy(), table.copy()
    for h in hues:
        rows = (frame if h is None else frame[frame[hue] == h]).groupby(by)[metric]
        table[str(h)] = rows.mean().reindex(groups)
        low[str(h)], high[str(h)] = rows.min().reindex(groups), rows.max().reindex(groups)
    # Every mean bar over the same groups: a group some hue lacks (a failed run, a NaN metric) would
    # otherwise leave only that hue's mean, and bars that average different workloads side by side.
    complete = table.notna().all(axis=1)
    if not complete.all():
        dropped = [str(g) for g in table.index[~complete]]
        warnings.warn(f"normalized_bars: the {'geometric ' if mean == 'geo' else ''}mean of {metric!r} leaves out "
                      f"{', '.join(dropped)}, where {'some ' + repr(hue) + ' value has' if hue else 'there is'} "
                      f"no value, so that every bar averages the same {by} values", stacklevel=2)
    common = table[complete]
    if mean == "geo" and (common <= 0).any(axis=None):
        # log(0) and log of a negative value: numpy would only warn, and draw a geometric mean of 0
        # for a single 0, or none at all (NaN) for a negative bar, which reads as 0.
        bad = [f"{v:g} for {g}{'' if hue is None else f' ({hue} {h})'}"
               for h in common.columns for g, v in common[h].items() if v <= 0]
        raise ValueError(f"normalized_bars: a geometric mean needs values above 0; {metric!r} is {', '.join(bad)} "
                         f"(mean='arith' averages them)")
    avg = common.apply(lambda c: float(np.exp(np.log(c).mean())) if mean == "geo" else float(c.mean()))
    table.loc["mean" if mean != "geo" else "geomean"] = avg
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(6, 0.5 * len(table) + 2), 3.2))
    width = 0.8 / len(table.columns)
    x = np.arange(len(table))
    for i, col in enumerate(table.columns):
        at = x + (i - (len(table.columns) - 1) / 2) * width
        ax.bar(at, table[col], width, label=None if hue is None else col)
        if spread:  # not on the mean over workloads
            bars = table[col].iloc[:len(groups)]
            ax.errorbar(at[:len(groups)], bars, yerr=[bars - low[col], high[col] - bars],
                        fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
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
    _require(frame, x, y, hue, values=[y])
    _warn_partial("lines", "points", frame, [hue, x], [y])
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
    per-block access counts), each the mean of its rows; a `by` value where a column has no value
    gets no bar, with a warning naming it."""
    _require(frame, by, *columns, values=columns)
    if labels is not None and len(labels) != len(columns):
        raise ValueError(f"{len(labels)} labels for {len(columns)} columns")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(6, 0.5 * frame[by].nunique() + 2), 3.5))
    _warn_partial("stacked_bars", "bars", frame, [by], list(columns))
    data = frame.groupby(by, sort=False)[list(columns)].mean()
    # A segment without a value draws nothing and leaves every segment above it without a base, so
    # that bar would be cut short or vanish, as if its fractions were 0: leave it out and say so.
    missing = data.isna()
    if missing.any(axis=None):
        left_out = [f"{g} (no value of {', '.join(repr(c) for c in data.columns[missing.loc[g]])})"
                    for g in data.index[missing.any(axis=1)]]
        warnings.warn(f"stacked_bars: no bar for {'; '.join(left_out)}", stacklevel=2)
        data = data[~missing.any(axis=1)]
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


def histogram(frame, x: str | None = None, *, columns: Sequence[str] | None = None, hue: str | None = None,
              labels: Sequence[str] | None = None, bins: int | Sequence[float] = 20, density: bool = False,
              xlabel: str | None = None, ylabel: str | None = None, title: str = "", logx: bool = False, ax=None):
    """A histogram, either of the values of column `x` over the rows (binned here; one outline per
    `hue` value), or of already binned data: `columns` hold one bucket each (the per-block access-count
    buckets A0, A1, A2-3, ...), drawn as bars of the mean over the rows, one series per `hue` value."""
    if (x is None) == (columns is None):
        raise ValueError("histogram needs either x (a column of values) or columns (one column per bucket)")
    data = [x] if x is not None else list(columns)
    _require(frame, *data, hue, values=data)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.5))
    groups = [(None, frame)] if hue is None else list(frame.groupby(hue, sort=False))
    if x is not None:
        lacking = int(frame[x].isna().sum())
        if lacking:   # a run without a value falls in no bin, and the counts would not say so
            warnings.warn(f"histogram: {lacking} of the {len(frame)} rows have no value of {x!r} and are left out",
                          stacklevel=2)
        values = frame[x].dropna().to_numpy(dtype=float)
        if logx:
            positive = values[values > 0]
            if positive.size == 0:
                raise ValueError(f"logx needs positive values of {x!r}")
            edges = np.geomspace(positive.min(), positive.max(), (bins if isinstance(bins, int) else len(bins)) + 1) \
                if isinstance(bins, int) else np.asarray(bins, dtype=float)
            ax.set_xscale("log")
        else:
            edges = np.histogram_bin_edges(values, bins=bins)
        for name, rows in groups:
            ax.hist(rows[x].dropna().to_numpy(dtype=float), bins=edges, density=density,
                    histtype="step" if hue is not None else "bar", linewidth=1.5,
                    label=None if name is None else str(name))
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or ("density" if density else "runs"))
    else:
        columns = list(columns)
        _warn_partial("histogram", "bars", frame, [hue], columns)
        names = list(labels) if labels is not None else columns
        if len(names) != len(columns):
            raise ValueError(f"{len(names)} labels for {len(columns)} columns")
        width = 0.8 / len(groups)
        pos = np.arange(len(columns))
        for i, (name, rows) in enumerate(groups):
            heights = rows[columns].mean().to_numpy(dtype=float)
            missing = np.isnan(heights)
            if missing.any():
                # No bar reads as a bucket of 0, and a NaN total would leave the others un-normalised.
                lacking = ", ".join(repr(c) for c, m in zip(columns, missing) if m)
                where = "" if name is None else f" for {hue} {name}"
                warnings.warn(f"histogram: no value of {lacking}{where}: no bar drawn"
                              + (", the fractions are of the other buckets" if density else ""), stacklevel=2)
            total = np.nansum(heights)
            if density and total > 0:
                heights = heights / total
            ax.bar(pos + (i - (len(groups) - 1) / 2) * width, heights, width, label=None if name is None else str(name))
        ax.set_xticks(pos, names, rotation=45, ha="right")
        ax.set_xlabel(xlabel or "")
        ax.set_ylabel(ylabel or ("fraction" if density else "mean"))
    if hue is not None:
        ax.legend(fontsize="small", ncol=2)
    ax.set_title(title)
    fig.tight_layout()
    return fig


HEATMAP_AGGS = ("mean", "median", "min", "max", "sum", "std", "count", "first", "last")


def heatmap(frame, x: str, y: str, value: str, *, agg: str = "mean", fmt: str = ".3g", cmap: str = "viridis",
            xlabel: str | None = None, ylabel: str | None = None, title: str = "", annotate: bool = True, ax=None):
    """`value` (aggregated with `agg` over the other columns: workloads, seeds) over two swept keys,
    `x` across and `y` down, each cell annotated."""
    if agg not in HEATMAP_AGGS:
        raise ValueError(f"agg must be one of {', '.join(HEATMAP_AGGS)}, got {agg!r}")
    _require(frame, x, y, values=[value], numeric=agg != "count")   # a count counts labels too
    if agg != "count":   # a count counts the values, as its colour bar says
        _warn_partial("heatmap", "cells", frame, [y, x], [value])
    table = frame.pivot_table(index=y, columns=x, values=value, aggfunc=agg).sort_index().sort_index(axis=1)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(
        figsize=(max(4.0, 0.9 * table.shape[1] + 2.5), max(3.0, 0.5 * table.shape[0] + 1.5)))
    data = table.to_numpy(dtype=float)
    image = ax.imshow(data, cmap=cmap, aspect="auto", origin="lower")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns])
    ax.set_yticks(range(table.shape[0]), [str(r) for r in table.index])
    if annotate:
        finite = data[np.isfinite(data)]
        middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
        for (i, j), v in np.ndenumerate(data):
            if np.isfinite(v):
                ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize="small",
                        color="white" if v < middle else "black")
    fig.colorbar(image, ax=ax, label=f"{value} ({agg})")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def pareto_front(frame, x: str, y: str, *, minimize_x: bool = True, maximize_y: bool = True):
    """A boolean Series: True for the rows no other row dominates (one at least as good in both `x` and
    `y` and better in one; by default lower `x`, e.g. energy, and higher `y`, e.g. IPC, are better).
    Rows with a missing value are never on the front."""
    import pandas as pd

    _require(frame, x, y)
    _require_numbers(frame, x, y)
    xs = frame[x].to_numpy(dtype=float) * (1 if minimize_x else -1)
    ys = frame[y].to_numpy(dtype=float) * (-1 if maximize_y else 1)   # both "lower is better" now
    ok = np.isfinite(xs) & np.isfinite(ys)
    front = np.zeros(len(frame), dtype=bool)
    for i in np.flatnonzero(ok):
        better_eq = ok & (xs <= xs[i]) & (ys <= ys[i])
        strictly = (xs < xs[i]) | (ys < ys[i])
        front[i] = not np.any(better_eq & strictly)
    return pd.Series(front, index=frame.index, name="pareto")


def pareto(frame, x: str = "cache_energy_j", y: str = "ipc", *, by: str | Sequence[str] | None = None,
           minimize_x: bool = True, maximize_y: bool = True, annotate: bool = True, xlabel: str | None = None,
           ylabel: str | None = None, title: str = "", ax=None):
    """Energy against performance, one point per row, or per `by` group (the mean of `x` and `y` over
    the group's rows: workloads, seeds), with the Pareto frontier marked (lower `x` and higher `y` are
    better by default) and, with `annotate`, each point labelled with its `by` values."""
    import pandas as pd

    _require(frame, x, y, values=[x, y])
    if by is not None:
        keys = [by] if isinstance(by, str) else list(by)
        _require(frame, *keys)
        _warn_partial("pareto", "points", frame, keys, [x, y])
        data = frame.groupby(keys, sort=False, dropna=False)[[x, y]].mean().reset_index()
        names = [", ".join(str(v) for v in row) for row in data[keys].itertuples(index=False)]
    else:
        data = frame[[x, y]].reset_index(drop=True)
        names = [str(i) for i in range(len(data))]
        lacking = data[[x, y]].isna().any(axis=1)
        if lacking.any():   # no point, and not on the frontier either: say which rows
            shown = ", ".join(map(str, frame.index[lacking.to_numpy()]))
            warnings.warn(f"pareto: rows {shown} have no value of {x!r} or {y!r} and are not drawn", stacklevel=2)
    front = pareto_front(data, x, y, minimize_x=minimize_x, maximize_y=maximize_y).to_numpy()
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 4))
    ax.scatter(data[x][~front], data[y][~front], color="0.6", label="dominated", zorder=2)
    ax.scatter(data[x][front], data[y][front], color="tab:red", label="Pareto frontier", zorder=3)
    ordered = pd.DataFrame({"x": data[x][front], "y": data[y][front]}).sort_values("x")
    ax.step(ordered["x"], ordered["y"], where="post" if minimize_x else "pre", color="tab:red",
            linewidth=1, zorder=1)
    if annotate and by is not None:
        for name, xv, yv in zip(names, data[x], data[y]):
            ax.annotate(name, (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.legend(fontsize="small")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def save(fig, path_without_suffix, formats=("png", "pdf")) -> list[str]:
    """Write a figure in each format (a name such as "png", or several) to the path with ".<format>"
    appended; returns the paths. Names keep their dots ("ipc_vs_l1d.ways" gives ipc_vs_l1d.ways.png);
    only a suffix that is a figure format is replaced ("fig.png" gives fig.png and fig.pdf). It closes
    the figure (pyplot lets it go, so a loop that saves many holds none), and a notebook cell that saves
    it does not show it: ``display(fig)`` still does."""
    from pathlib import Path

    supported = fig.canvas.get_supported_filetypes()
    formats = [formats] if isinstance(formats, str) else list(formats)  # "png", not "p", "n", "g"
    bad = [f for f in formats if f not in supported]
    if bad:   # before writing any: no figure saved in some formats only
        raise ValueError(f"unsupported figure formats {bad} (supported: {', '.join(sorted(supported))})")
    base = Path(path_without_suffix)
    if base.suffix[1:].lower() in supported:
        base = base.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        # Not with_suffix: it would cut a name at its last dot, and dotted configuration keys make
        # figure names ("ipc_vs_l1d.ways", "ipc_vs_l2.ways" would both become ipc_vs_l1d.png, ...).
        p = base.with_name(f"{base.name}.{fmt}")
        fig.savefig(p, dpi=150, bbox_inches="tight")
        out.append(str(p))
    plt.close(fig)
    return out
