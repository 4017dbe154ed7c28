"""Plot kinds: what a method's report section may ask the report to draw. Each kind is a
typed data model (the fields of the `PlotSpec` carrier it reads) and a renderer that
draws it as inline SVG; kinds register in `PLOTS` like methods (the shipped ones from
`report/plots.py`, a method's own from its package, a plug-in's through its entry point)
and the report draws a `PlotSpec` by the kind it names.

This module is the drawing kit they share (matplotlib, Agg). Notebook-safe: nothing here
touches matplotlib's global state. No `matplotlib.use`, no pyplot (so no figure joins
pyplot's figure manager, and a notebook's `plt.show()` never shows one of ours), and no
global rcParams: each figure is a `matplotlib.figure.Figure` on its own Agg canvas, drawn
and saved inside `matplotlib.rc_context(STYLE)`, which puts the caller's settings back on
the way out (tests/unit/api/test_notebook_safe.py).

It lives below `methods/` in the layer order so a method can register the plot kinds
only it draws (BiAxisAudit's reliability map) without the report knowing them.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from biasaudit.registry import PLOTS

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


class PlotData(BaseModel):
    """What every plot kind's data has: the title, axis labels and alt text. A kind's
    model adds the fields of `PlotSpec` it draws (their names are the carrier's), and
    refuses any other, so a misspelt field is an error where the plot is made."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str
    xlabel: str = ""
    ylabel: str = ""
    alt: str = ""

    @property
    def alt_text(self) -> str:
        """The screen readers' text: `alt`, else the title."""
        return self.alt or self.title


D = TypeVar("D", bound=PlotData)


@dataclass(frozen=True)
class PlotKind(Generic[D]):
    """A registered plot kind: its data model and its renderer (data -> an `<svg>`)."""

    data: type[D]
    render: Callable[[D], str]
    title: str
    """What it draws, in a few words (`biasaudit schema plots` lists it)."""

    def draw(self, fields: dict[str, Any]) -> str:
        """The SVG of a plot given as the carrier's fields (those of `data`, validated)."""
        return self.render(self.data.model_validate(fields))


def styled(render: Callable[[D], str]) -> Callable[[D], str]:
    """Draw and save under the report's style, locally: rcParams are read both when the
    figure is built and when it is saved (svg.fonttype, svg.hashsalt)."""

    @functools.wraps(render)
    def wrapper(plot: D) -> str:
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return render(plot)

    return wrapper


def figure(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure outside pyplot, on its own Agg canvas, with one axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def svg_of(fig: Figure, alt: str) -> str:
    """The figure as an inline `<svg>` with its alt text (role/aria-label)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    fig.clear()  # free the artists now (nothing else holds the figure)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    from markupsafe import escape

    label = f'<svg role="img" aria-label="{escape(alt)}" '
    return svg.replace("<svg ", label, 1)  # not re.sub: a backslash in the alt text is text


def labelled(ax: Axes, plot: PlotData) -> None:
    """Axis labels and title."""
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.set_title(plot.title)


def register_plot(name: str, data: type[D], render: Callable[[D], str], title: str) -> PlotKind[D]:
    """Register plot kind `name` (drawn under the report's style)."""
    kind = PlotKind(data=data, render=styled(render), title=title)
    PLOTS.add(name, kind)
    return kind


__all__ = ["PALETTE", "STYLE", "PlotData", "PlotKind", "figure", "labelled", "register_plot", "styled", "svg_of"]
