"""The step between a metric's numbers and the report: a method's report section
(`MetricDef.present`) declares the tables and plots of a computed result from its records,
so that `compute` returns numbers only and a method's presentation lives beside its text."""

from __future__ import annotations

from pydantic import BaseModel

from biasaudit.records.metric_result import MetricResult
from biasaudit.registry import METRICS
from biasaudit.spec import AuditConfig


def present(result: MetricResult, metric: str, params: BaseModel, cfg: AuditConfig) -> MetricResult:
    """`result` with the tables and plots its method's report section declares (unchanged
    when the metric has no `present`: its `compute` made them)."""
    section = METRICS.get(metric).present
    if section is None:
        return result
    tables, plots = section(result, params, cfg)
    return result.model_copy(update={"tables": [*result.tables, *tables], "plots": [*result.plots, *plots]})


__all__ = ["present"]
