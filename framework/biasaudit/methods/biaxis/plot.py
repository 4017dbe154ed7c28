"""BiAxisAudit's own plot kind, `reliability_map`: each cell placed by its inconsistency
rate (IR) and net imbalance (DNI) over the paper's regimes. Method knowledge (the 0.10
reliability bound and the cancellation-trap band are the paper's), so it is drawn here
and registered in `PLOTS`, not in the report."""

from __future__ import annotations

from pydantic import Field

from biasaudit.metrics.plotting import PALETTE, PlotData, figure, labelled, register_plot, svg_of

RELIABLE_IR = 0.10
"""Below this inconsistency rate a cell's measurement is reliable (the paper's bound)."""


class ReliabilityMapData(PlotData):
    """One labelled point per cell: `points` holds [IR, DNI, selection BER (its size)];
    `reference` is the cancellation-trap half-width in DNI."""

    labels: list[str] = Field(default_factory=list)
    points: list[list[float | None]] = Field(default_factory=list)
    reference: float | None = None


def reliability_map(plot: ReliabilityMapData) -> str:
    """(IR, DNI) per cell over the paper's regimes: reliable (IR < 0.10), over-estimation
    (DNI > 0), under-estimation (DNI < 0), and the cancellation-trap band."""
    fig, ax = figure((5.5, 4.0))
    pts = [(lbl, float(x), float("nan") if y is None else float(y), size)
           for lbl, (x, y, size) in zip(plot.labels, plot.points, strict=True) if x is not None]
    xmax = max([0.3] + [x * 1.15 for _, x, _, _ in pts])
    ymax = max([0.2] + [abs(y) * 1.15 for _, _, y, _ in pts if y == y])  # nan != nan: a cell without a DNI
    band = float(plot.reference or 0.02)
    ax.axvspan(0, RELIABLE_IR, color=PALETTE[2], alpha=0.12, label="reliable (IR < 0.10)")
    ax.fill_between([RELIABLE_IR, xmax], band, ymax, color=PALETTE[1], alpha=0.10, label="over-estimation (DNI > 0)")
    ax.fill_between([RELIABLE_IR, xmax], -ymax, -band, color=PALETTE[0], alpha=0.10, label="under-estimation (DNI < 0)")
    ax.fill_between([RELIABLE_IR, xmax], -band, band, color="black", alpha=0.15, hatch="//", label="cancellation trap")
    for k, (lbl, x, y, size) in enumerate(pts):
        ax.scatter([x], [y], s=30 + 400 * float(size or 0), color=PALETTE[k % len(PALETTE)], alpha=0.8,
                   edgecolors="black")
        ax.annotate(lbl, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(0, xmax)
    ax.set_ylim(-ymax, ymax)
    ax.axhline(0, color="grey", linewidth=0.8)
    labelled(ax, plot)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=7)
    return svg_of(fig, plot.alt_text)


register_plot("reliability_map", ReliabilityMapData, reliability_map, "BiAxisAudit's (IR, DNI) map of cells")
