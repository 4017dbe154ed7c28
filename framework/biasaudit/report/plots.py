"""The shipped plot kinds (each a typed data model and a renderer, registered in `PLOTS`)
and `render_plot`, which draws a `PlotSpec` by the kind it names: a method's own kinds
(BiAxisAudit's reliability map) and a plug-in's register from their packages, and the
report draws them the same way. The drawing kit is `metrics/plotting.py`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import Field

from biasaudit.metrics.plotting import PALETTE, PlotData, figure, labelled, register_plot, svg_of
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import PlotSpec
from biasaudit.registry import PLOTS


class IntervalBarsData(PlotData):
    """One bar per label with its 95% interval, and an optional reference line."""

    labels: list[str] = Field(default_factory=list)
    estimates: list[Estimate] = Field(default_factory=list)
    reference: float | None = None


def interval_bars(plot: IntervalBarsData) -> str:
    fig, ax = figure((max(4.0, 0.7 * len(plot.labels) + 2), 3.2))
    xs = list(range(len(plot.labels)))
    vals = [e.value if e.value is not None else 0.0 for e in plot.estimates]
    lo = [max(0.0, v - (e.ci_low if e.ci_low is not None else v)) for v, e in zip(vals, plot.estimates, strict=True)]
    hi = [max(0.0, (e.ci_high if e.ci_high is not None else v) - v) for v, e in zip(vals, plot.estimates, strict=True)]
    ax.bar(xs, vals, color=PALETTE[0], alpha=0.8)
    ax.errorbar(xs, vals, yerr=[lo, hi], fmt="none", ecolor="black", capsize=4, linewidth=1)
    if plot.reference is not None:
        ax.axhline(plot.reference, color=PALETTE[1], linestyle="--", linewidth=1, label=f"reference {plot.reference:g}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_xticks(xs)
    ax.set_xticklabels(plot.labels, rotation=30, ha="right")
    labelled(ax, plot)
    return svg_of(fig, plot.alt_text)


def _edges(vals: list[float], n: int) -> list[float]:
    """n equal bins over the values. Values that differ only by float rounding (-3.0 and
    -3.0000000000000004) would make numpy's bins narrower than the float spacing ("Too many
    bins for data range"): such a range is drawn as one value, centred in a bin of 5% of its
    size (0.5 around 0)."""
    lo, hi = min(vals), max(vals)
    if hi - lo <= 1e-9 * max(1.0, abs(lo), abs(hi)):
        mid = (lo + hi) / 2
        half = abs(mid) * 0.05 if mid else 0.5
        lo, hi = mid - half, mid + half
    return [float(x) for x in np.linspace(lo, hi, n + 1)]


class HistogramData(PlotData):
    """The distribution of one list of values, and an optional reference line."""

    values: list[float] = Field(default_factory=list)
    reference: float | None = None


def histogram(plot: HistogramData) -> str:
    fig, ax = figure((5.0, 3.0))
    vals = plot.values
    if vals:
        ax.hist(vals, bins=_edges(vals, min(30, max(5, len(vals) // 3))), color=PALETTE[0], alpha=0.85)
    if plot.reference is not None:
        ax.axvline(plot.reference, color=PALETTE[1], linestyle="--", linewidth=1)
    labelled(ax, plot)
    return svg_of(fig, plot.alt_text)


class MultiHistogramData(PlotData):
    """Named value lists drawn over each other on shared bins."""

    series: dict[str, list[float | None]] = Field(default_factory=dict)
    reference: float | None = None


def multi_histogram(plot: MultiHistogramData) -> str:
    fig, ax = figure((5.5, 3.2))
    series = {name: [v for v in vals if v is not None] for name, vals in plot.series.items()}
    all_vals = [v for vals in series.values() for v in vals]
    if all_vals:
        bins = _edges(all_vals, 24)
        for k, (name, vals) in enumerate(series.items()):
            if vals:
                ax.hist(vals, bins=bins, alpha=0.55, color=PALETTE[k % len(PALETTE)], label=f"{name} (n={len(vals)})")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    if plot.reference is not None:
        ax.axvline(plot.reference, color="black", linestyle="--", linewidth=1)
    labelled(ax, plot)
    return svg_of(fig, plot.alt_text)


class HeatmapData(PlotData):
    """A square matrix over `labels` (rows x columns), its colour range `vmin`..`vmax`."""

    labels: list[str] = Field(default_factory=list)
    matrix: list[list[float | None]] = Field(default_factory=list)
    vmin: float | None = None
    vmax: float | None = None


def heatmap(plot: HeatmapData) -> str:
    labels = plot.labels
    vals = np.array([[np.nan if v is None else v for v in row] for row in plot.matrix], dtype=float)
    # wide enough that the title clears the colour bar
    fig, ax = figure((0.8 * len(labels) + 4.0, 0.7 * len(labels) + 2.2))
    vmin = 0.0 if plot.vmin is None else plot.vmin
    # signed coefficients (tau) get a diverging map centred on 0
    im = ax.imshow(vals, vmin=vmin, vmax=1.0 if plot.vmax is None else plot.vmax, cmap="RdBu" if vmin < 0 else "Blues")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            v = vals[i, j]
            ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if not np.isnan(v) and abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, label=plot.ylabel)
    ax.set_title(plot.title)
    return svg_of(fig, plot.alt_text)


class ScatterData(PlotData):
    """One labelled point per label: `points` holds [x, y, size] each."""

    labels: list[str] = Field(default_factory=list)
    points: list[list[float | None]] = Field(default_factory=list)
    reference: float | None = None


def scatter(plot: ScatterData) -> str:
    fig, ax = figure((5.0, 3.6))
    pts = [(lbl, float(x), float(y), size) for lbl, (x, y, size) in zip(plot.labels, plot.points, strict=True)
           if x is not None and y is not None]
    for k, (lbl, x, y, size) in enumerate(pts):
        ax.scatter([x], [y], s=40 + 2000 * float(size or 0), alpha=0.6, color=PALETTE[k % len(PALETTE)], label=lbl)
        ax.annotate(lbl, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    if plot.reference is not None:
        ax.axvline(plot.reference, color="grey", linestyle="--", linewidth=1)
    labelled(ax, plot)
    return svg_of(fig, plot.alt_text)


class LinesData(PlotData):
    """One line per named series over the `labels` on the x axis."""

    labels: list[str] = Field(default_factory=list)
    series: dict[str, list[float | None]] = Field(default_factory=dict)


def lines(plot: LinesData) -> str:
    fig, ax = figure((5.0, 3.2))
    xs = list(range(len(plot.labels)))
    for k, (name, vals) in enumerate(plot.series.items()):
        ax.plot(xs, [np.nan if v is None else v for v in vals], marker="o", color=PALETTE[k % len(PALETTE)], label=name)
    ax.set_xticks(xs)
    ax.set_xticklabels(plot.labels)
    labelled(ax, plot)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return svg_of(fig, plot.alt_text)


register_plot("interval_bars", IntervalBarsData, interval_bars, "bars with 95% intervals")
register_plot("histogram", HistogramData, histogram, "a histogram of values")
register_plot("multi_histogram", MultiHistogramData, multi_histogram, "overlaid histograms of named series")
register_plot("heatmap", HeatmapData, heatmap, "a labelled square matrix")
register_plot("scatter", ScatterData, scatter, "labelled points sized by a third value")
register_plot("lines", LinesData, lines, "one line per named series")


def render_plot(plot: PlotSpec | Mapping[str, Any]) -> str:
    """The SVG of a plot: its registered kind's renderer, given the kind's own fields (the
    carrier, or the mapping summary.json holds, validated as a `PlotSpec` first)."""
    spec = plot if isinstance(plot, PlotSpec) else PlotSpec.model_validate(plot)
    kind = PLOTS.get(spec.kind, key="plots.kind")
    return kind.draw(spec.model_dump(include=set(kind.data.model_fields)))


__all__ = ["HeatmapData", "HistogramData", "IntervalBarsData", "LinesData", "MultiHistogramData", "ScatterData",
           "heatmap", "histogram", "interval_bars", "lines", "multi_histogram", "render_plot", "scatter"]
