"""Metrics, one module per method family, found by name in `METRICS`; verdicts."""

from . import biaxis, fisco, likelihood, nli_bias, pivotal, tfdp  # noqa: F401  (registration)
from .base import METRICS, MetricContext, MetricDef, MetricResult, PlotSpec, ReliabilityItem, Table
from .thresholds import VerdictRecord, evaluate, judge

__all__ = [
    "METRICS",
    "MetricContext",
    "MetricDef",
    "MetricResult",
    "ReliabilityItem",
    "PlotSpec",
    "Table",
    "VerdictRecord",
    "evaluate",
    "judge",
]
