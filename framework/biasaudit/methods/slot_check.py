"""Metric parameters that name probe input slots: each must be a slot the probe has, and
two sides of one comparison must be different slots.

A metric skips every stimulus whose slots it does not find, so a misspelt slot would
score nothing (or compare a sentence with itself) instead of failing: these checks refuse
it at validate, before any model call, keyed within the metric's entry."""

from __future__ import annotations

from collections.abc import Mapping

from biasaudit.coding.label_check import MetricLabelError
from biasaudit.spec import AuditConfig


def check_slots(cfg: AuditConfig, named: Mapping[str, str]) -> None:
    """`named`: parameter key (within the metric's entry, e.g. `slots.stereotype`) -> the
    slot it names. Raises MetricLabelError for a slot the probe does not have, or for two
    parameters naming one slot."""
    slots = list(cfg.probe.inputs or {})
    for key, slot in named.items():
        if slot not in slots:
            have = ", ".join(slots) if slots else "none (the probe has no `inputs`)"
            raise MetricLabelError(f"names probe slot {slot!r}, which the probe does not have", key=key,
                                   hint=f"the probe's input slots: {have}")
    seen: dict[str, str] = {}
    for key, slot in named.items():
        if slot in seen:
            raise MetricLabelError(f"names probe slot {slot!r}, as `{seen[slot]}` does: the two sides would be the "
                                   f"same answers", key=key, hint=f"give `{key}` and `{seen[slot]}` different slots")
        seen[slot] = key
