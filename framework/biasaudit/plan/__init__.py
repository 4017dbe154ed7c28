"""From a validated config to a plan: design expansion, rendering, hashed requests."""

from biasaudit.plan.compile import Plan, Row, compile_plan, iter_plan, iter_rows, request_params
from biasaudit.plan.design import Cell, cell_id, expand_design
from biasaudit.plan.requests import (
    Decoding,
    KeyMaker,
    PlanItem,
    Request,
    RequestTable,
    canonical_json,
    estimated_tokens,
    request_key,
)
from biasaudit.spec.templates import render, variables

__all__ = [
    "Cell",
    "Decoding",
    "KeyMaker",
    "Plan",
    "PlanItem",
    "Request",
    "RequestTable",
    "Row",
    "canonical_json",
    "cell_id",
    "compile_plan",
    "estimated_tokens",
    "iter_plan",
    "iter_rows",
    "expand_design",
    "render",
    "request_key",
    "request_params",
    "variables",
]
