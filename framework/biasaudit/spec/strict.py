"""The base of every spec and config model: unknown keys and values of another type are errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are refused, and so are values of another type: `"3"` or `3.0` for a
    whole number, `"true"` or `1` for true/false, `"0.5"` for a number are errors, not
    coerced (a whole number for a number is fine: `min_valid_share: 0`). Command-line
    overrides arrive typed (`runtime.batch_size=8` is a whole number)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, strict=True)
