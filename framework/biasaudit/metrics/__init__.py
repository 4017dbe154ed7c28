"""Metric records and context, the shared disaggregation helper, thresholds and
verdicts. The metrics themselves live in their method packages (`biasaudit.methods`)
and are found by name in `METRICS`."""

from .base import (
    METRICS,
    DefaultCoding,
    MetricContext,
    MetricDef,
    MetricResult,
    PlotSpec,
    ReliabilityItem,
    Table,
)
from .thresholds import VerdictRecord, evaluate, judge
from .validity import ValidityFlag

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
