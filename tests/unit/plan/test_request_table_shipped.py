"""Every request of every shipped spec reads back from the compact table (issue 42) as the
plan renders it: the same keys in the same order, the same prompt text, messages, text
pair, stimulus and sample (the record's JSON dump, byte for byte), the same fields set,
and the same plan items (cell, stimulus, slot, variant, sample, key). The requests are
compared with `iter_plan`'s, which builds each `Request` straight from its rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.data import load_stimuli
from biasaudit.plan import compile_plan, iter_plan
from biasaudit.plan.requests import RequestTable
from biasaudit.spec.compose import compose

SPECS = Path(__file__).resolve().parents[3] / "specs"
SHIPPED = sorted(p for p in SPECS.glob("*.yaml") if p.stem != "default_suite")


@pytest.mark.slow
@pytest.mark.parametrize("spec", SHIPPED, ids=[p.stem for p in SHIPPED])
@pytest.mark.parametrize("sends_stimulus", [False, True])
def test_shipped_spec_reads_back_byte_for_byte(spec: Path, sends_stimulus: bool, tmp_path: Path) -> None:
    composed = compose([f"spec={spec}", "model=scripted", f"runtime.cache={tmp_path / 'c.sqlite'}"])
    cfg = composed.config
    stimuli = load_stimuli(cfg.stimuli, composed.spec_file, cfg.runtime.limits)
    # any model: the identity only enters the hash (the model's own checks are elsewhere)
    identity = {"backend": "scripted", "name": "m", "sends_stimulus": sends_stimulus}
    plan = compile_plan(cfg, stimuli, identity, str(spec))
    assert isinstance(plan.requests, RequestTable)
    items, compiled = [], {}
    for item, req in iter_plan(cfg, stimuli, identity, str(spec)):
        items.append(item)
        compiled.setdefault(item.key, req)
    assert plan.items == items
    assert list(plan.requests) == list(compiled) and len(plan.requests) == len(compiled)
    for (key, got), want in zip(plan.requests.items(), compiled.values(), strict=True):
        assert got.model_dump_json() == want.model_dump_json(), key
        assert got.model_fields_set == want.model_fields_set
        assert plan.requests[key].model_dump_json() == want.model_dump_json()
    got_values = [r.model_dump_json() for r in plan.requests.values()]
    assert got_values == [r.model_dump_json() for r in compiled.values()]
