"""From a validated config to a plan: design expansion, rendering, hashed requests."""

from .compile import Plan, compile_plan
from .design import Cell, cell_id, expand_design
from .render import render, variables
from .requests import Derived, PlanItem, Request, canonical_json, request_key

__all__ = [
    "Cell",
    "Derived",
    "Plan",
    "PlanItem",
    "Request",
    "canonical_json",
    "cell_id",
    "compile_plan",
    "expand_design",
    "render",
    "request_key",
    "variables",
]
