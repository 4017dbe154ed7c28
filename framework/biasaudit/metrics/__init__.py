"""Metric records and context, the shared disaggregation helper, thresholds and
verdicts. The metrics themselves live in their method packages (`biasaudit.methods`)
and are found by name in `METRICS`."""

from biasaudit.metrics.base import METRICS, DefaultCoding, MetricContext, MetricDef
from biasaudit.records.metric_result import (
    MetricResult,
    PlotSpec,
    ReliabilityItem,
    Table,
    ValidityFlag,
)

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
]
