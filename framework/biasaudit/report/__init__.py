"""Report rendering: HTML (self-contained, inline SVG), Markdown, JSON."""

from biasaudit.report.render import fmt_est, fmt_num, render_all, render_compare

__all__ = ["fmt_est", "fmt_num", "render_all", "render_compare"]
