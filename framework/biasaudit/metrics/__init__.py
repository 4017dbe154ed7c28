"""Metric records and context, the shared disaggregation helper, thresholds and
verdicts. The metrics themselves live in their method packages (`biasaudit.methods`)
and are found by name in `METRICS`."""

from biasaudit.metrics.base import (
    METRICS,
    DefaultCoding,
    MetricContext,
    MetricDef,
    MetricResult,
    PlotSpec,
    ReliabilityItem,
    Table,
)
from biasaudit.metrics.thresholds import VerdictRecord, evaluate, judge
from biasaudit.metrics.validity import ValidityFlag

__all__ = [
    "METRICS",
    "DefaultCoding",
    "MetricContext",
    "MetricDef",
    "MetricResult",
    "ReliabilityItem",
    "PlotSpec",
    "Table",
    "ValidityFlag",
    "VerdictRecord",
    "evaluate",
    "judge",
]
