"""Report rendering: HTML (self-contained, inline SVG), Markdown, JSON."""

from .render import fmt_est, fmt_num, render_all

__all__ = ["fmt_est", "fmt_num", "render_all"]
