"""Plots as inline SVG (matplotlib, Agg): intervals drawn, axis labels, alt text.

Notebook-safe: nothing here touches matplotlib's global state. No `matplotlib.use`, no
pyplot (so no figure joins pyplot's figure manager, and a notebook's `plt.show()` never
shows one of ours), and no global rcParams: each figure is a `matplotlib.figure.Figure`
on its own Agg canvas, drawn and saved inside `matplotlib.rc_context(STYLE)`, which puts
the caller's settings back on the way out (tests/unit/api/test_notebook_safe.py).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

PALETTE = ["#1f5f8b", "#c0504d", "#4f8f4f", "#8064a2", "#d08a2c", "#4a9fb5"]

# text.parse_math off: every label is literal text. Labels come from the data and the
# spec (group values, cell ids, titles), and `$...$` in one would be parsed as mathtext,
# where an unknown macro such as `$\\undefinedmacro$` aborts the drawing.
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                               "axes.spines.right": False, "svg.hashsalt": "biasaudit", "text.parse_math": False,
                               "text.usetex": False}


def _styled(render: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """Draw and save under the report's style, locally: rcParams are read both when the
    figure is built and when it is saved (svg.fonttype, svg.hashsalt)."""

    @functools.wraps(render)
    def wrapper(plot: dict[str, Any]) -> str:
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return render(plot)

    return wrapper


def _figure(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure outside pyplot, on its own Agg canvas, with one axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _svg(fig: Figure, alt: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    fig.clear()  # free the artists now (nothing else holds the figure)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    from markupsafe import escape

    # role/aria-label give screen readers the alt text.
    label = f'<svg role="img" aria-label="{escape(alt)}" '
    svg = svg.replace("<svg ", label, 1)  # not re.sub: a backslash in the alt text is text
    return svg


@_styled
def interval_bars(plot: dict[str, Any]) -> str:
    labels = plot["labels"]
    ests = plot["estimates"]
    fig, ax = _figure((max(4.0, 0.7 * len(labels) + 2), 3.2))
    xs = list(range(len(labels)))
    vals = [e["value"] if e["value"] is not None else 0.0 for e in ests]
    lo = [max(0.0, v - (e["ci_low"] if e["ci_low"] is not None else v)) for v, e in zip(vals, ests, strict=True)]
    hi = [max(0.0, (e["ci_high"] if e["ci_high"] is not None else v) - v) for v, e in zip(vals, ests, strict=True)]
    ax.bar(xs, vals, color=PALETTE[0], alpha=0.8)
    ax.errorbar(xs, vals, yerr=[lo, hi], fmt="none", ecolor="black", capsize=4, linewidth=1)
    if plot.get("reference") is not None:
        ax.axhline(plot["reference"], color=PALETTE[1], linestyle="--", linewidth=1, label=f"reference {plot['reference']:g}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    return _svg(fig, plot.get("alt") or plot["title"])


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


@_styled
def histogram(plot: dict[str, Any]) -> str:
    fig, ax = _figure((5.0, 3.0))
    vals = plot["values"]
    if vals:
        ax.hist(vals, bins=_edges(vals, min(30, max(5, len(vals) // 3))), color=PALETTE[0], alpha=0.85)
    if plot.get("reference") is not None:
        ax.axvline(plot["reference"], color=PALETTE[1], linestyle="--", linewidth=1)
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    return _svg(fig, plot.get("alt") or plot["title"])


@_styled
def multi_histogram(plot: dict[str, Any]) -> str:
    fig, ax = _figure((5.5, 3.2))
    all_vals = [v for vals in plot["series"].values() for v in vals]
    if all_vals:
        bins = _edges(all_vals, 24)
        for k, (name, vals) in enumerate(plot["series"].items()):
            if vals:
                ax.hist(vals, bins=bins, alpha=0.55, color=PALETTE[k % len(PALETTE)], label=f"{name} (n={len(vals)})")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    if plot.get("reference") is not None:
        ax.axvline(plot["reference"], color="black", linestyle="--", linewidth=1)
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    return _svg(fig, plot.get("alt") or plot["title"])


@_styled
def heatmap(plot: dict[str, Any]) -> str:
    labels = plot["labels"]
    vals = np.array([[np.nan if v is None else v for v in row] for row in plot["matrix"]], dtype=float)
    # wide enough that the title clears the colour bar
    fig, ax = _figure((0.8 * len(labels) + 4.0, 0.7 * len(labels) + 2.2))
    vmin = plot.get("vmin")
    vmin = 0.0 if vmin is None else vmin
    vmax = plot.get("vmax")
    # signed coefficients (tau) get a diverging map centred on 0
    im = ax.imshow(vals, vmin=vmin, vmax=1.0 if vmax is None else vmax, cmap="RdBu" if vmin < 0 else "Blues")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            v = vals[i, j]
            ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if not np.isnan(v) and abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, label=plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    return _svg(fig, plot.get("alt") or plot["title"])


@_styled
def scatter(plot: dict[str, Any]) -> str:
    fig, ax = _figure((5.0, 3.6))
    pts = [(lbl, pt) for lbl, pt in zip(plot["labels"], plot["points"], strict=True) if pt[0] is not None and pt[1] is not None]
    for k, (lbl, (x, y, size)) in enumerate(pts):
        ax.scatter([x], [y], s=40 + 2000 * float(size or 0), alpha=0.6, color=PALETTE[k % len(PALETTE)], label=lbl)
        ax.annotate(lbl, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    if plot.get("reference") is not None:
        ax.axvline(plot["reference"], color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    return _svg(fig, plot.get("alt") or plot["title"])


@_styled
def reliability_map(plot: dict[str, Any]) -> str:
    """(IR, DNI) per cell over the paper's regimes: reliable (IR < 0.10), over-estimation
    (DNI > 0), under-estimation (DNI < 0), and the cancellation-trap band."""
    fig, ax = _figure((5.5, 4.0))
    pts = [(lbl, pt) for lbl, pt in zip(plot["labels"], plot["points"], strict=True) if pt[0] is not None]
    xmax = max([0.3] + [float(pt[0]) * 1.15 for _, pt in pts])
    ymax = max([0.2] + [abs(float(pt[1])) * 1.15 for _, pt in pts])
    band = float(plot.get("reference") or 0.02)
    ax.axvspan(0, 0.10, color=PALETTE[2], alpha=0.12, label="reliable (IR < 0.10)")
    ax.fill_between([0.10, xmax], band, ymax, color=PALETTE[1], alpha=0.10, label="over-estimation (DNI > 0)")
    ax.fill_between([0.10, xmax], -ymax, -band, color=PALETTE[0], alpha=0.10, label="under-estimation (DNI < 0)")
    ax.fill_between([0.10, xmax], -band, band, color="black", alpha=0.15, hatch="//", label="cancellation trap")
    for k, (lbl, (x, y, size)) in enumerate(pts):
        ax.scatter([x], [y], s=30 + 400 * float(size or 0), color=PALETTE[k % len(PALETTE)], alpha=0.8, edgecolors="black")
        ax.annotate(lbl, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(0, xmax)
    ax.set_ylim(-ymax, ymax)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=7)
    return _svg(fig, plot.get("alt") or plot["title"])


@_styled
def lines(plot: dict[str, Any]) -> str:
    fig, ax = _figure((5.0, 3.2))
    xs = list(range(len(plot["labels"])))
    for k, (name, vals) in enumerate(plot["series"].items()):
        ax.plot(xs, [np.nan if v is None else v for v in vals], marker="o", color=PALETTE[k % len(PALETTE)], label=name)
    ax.set_xticks(xs)
    ax.set_xticklabels(plot["labels"])
    ax.set_xlabel(plot.get("xlabel", ""))
    ax.set_ylabel(plot.get("ylabel", ""))
    ax.set_title(plot["title"])
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(fig, plot.get("alt") or plot["title"])


RENDERERS = {"reliability_map": reliability_map, "lines": lines, "scatter": scatter, "heatmap": heatmap, "interval_bars": interval_bars, "histogram": histogram, "multi_histogram": multi_histogram}


def render_plot(plot: dict[str, Any]) -> str:
    return RENDERERS[plot["kind"]](plot)
