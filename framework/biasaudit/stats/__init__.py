"""Shared statistics: one `Estimate` record, intervals, tests."""

from .estimate import Estimate
from .means import mean_t
from .proportions import wilson

__all__ = ["Estimate", "mean_t", "wilson"]
