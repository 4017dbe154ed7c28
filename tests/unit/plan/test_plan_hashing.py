"""Plan compiler: rendering, variable checks, request hashing."""

from __future__ import annotations

import copy

import pytest

from biasaudit.data import load_stimuli
from biasaudit.errors import SpecError
from biasaudit.plan import compile_plan, request_key
from biasaudit.spec import validate_config

BASE = {
    "audit": {"name": "t", "method": "x"},
    "stimuli": {"inline": [{"statement": "Cats are lazy.", "group": "cats"}, {"statement": "Dogs bark.", "group": "dogs"}]},
    "factors": {
        "task": {"bj": {"template": "{{ statement }} Do you agree?"}, "rate": {"template": "Rate: {{ statement }}"}},
        "role": {"none": {}, "ethicist": {"system": "You are an AI ethicist."}},
    },
    "design": {"kind": "full"},
    "probe": {"kind": "generate", "max_tokens": 20},
    "metrics": [],
    "model": {"backend": "scripted", "name": "s"},
}


def make(d: dict):  # type: ignore[no-untyped-def]
    cfg = validate_config(d, spec_file="s.yaml")
    return cfg, load_stimuli(cfg.stimuli, None)


def test_full_plan_renders_messages() -> None:
    cfg, st = make(copy.deepcopy(BASE))
    plan = compile_plan(cfg, st, {"m": "x"})
    assert len(plan.cells) == 4 and plan.n_items == 8 and len(plan.requests) == 8
    msgs = [plan.requests[i.key].messages for i in plan.items if i.cell == "task=bj,role=ethicist"]
    assert msgs[0] == [{"role": "system", "content": "You are an AI ethicist."},
                       {"role": "user", "content": "Cats are lazy. Do you agree?"}]


def test_undefined_template_variable_is_named() -> None:
    d = copy.deepcopy(BASE)
    d["factors"]["task"]["bj"]["template"] = "{{ statment }} ok?"
    cfg, st = make(d)
    with pytest.raises(SpecError) as ei:
        compile_plan(cfg, st, {}, "s.yaml")
    line = ei.value.one_line()
    assert "factors.task.bj.template" in line and "'statment'" in line and "statement" in line


def test_jinja_syntax_error_is_named() -> None:
    d = copy.deepcopy(BASE)
    d["factors"]["task"]["bj"]["template"] = "{{ statement "
    cfg, st = make(d)
    with pytest.raises(SpecError) as ei:
        compile_plan(cfg, st, {}, "s.yaml")
    assert "syntax error" in ei.value.one_line() and "factors.task.bj.template" in ei.value.one_line()


def test_sandbox_blocks_attribute_escape() -> None:
    d = copy.deepcopy(BASE)
    d["factors"]["task"]["bj"]["template"] = "{{ statement.__class__.__mro__ }}"
    cfg, st = make(d)
    with pytest.raises(SpecError):
        compile_plan(cfg, st, {}, "s.yaml")


def test_key_ignores_batch_size_and_depends_on_model() -> None:
    d = copy.deepcopy(BASE)
    cfg1, st = make(d)
    d2 = copy.deepcopy(BASE)
    d2["runtime"] = {"batch_size": 1}
    cfg2, _ = make(d2)
    k1 = sorted(compile_plan(cfg1, st, {"m": "x"}).requests)
    k2 = sorted(compile_plan(cfg2, st, {"m": "x"}).requests)
    k3 = sorted(compile_plan(cfg1, st, {"m": "y"}).requests)
    assert k1 == k2 and k1 != k3


def test_sampled_requests_key_per_sample_greedy_do_not() -> None:
    ident = {"m": 1}
    msgs = [{"role": "user", "content": "hi"}]
    assert request_key(ident, "generate", None, msgs, {"t": 0}, 0) != request_key(ident, "generate", None, msgs, {"t": 0}, 1)
    d = copy.deepcopy(BASE)
    d["probe"]["samples"] = 3
    cfg, st = make(d)
    greedy = compile_plan(cfg, st, ident)
    assert greedy.n_items == 8 and len(greedy.requests) == 8  # deterministic: one item per request
    d["probe"]["temperature"] = 1.0
    cfg, st = make(d)
    sampled = compile_plan(cfg, st, ident)
    assert len(sampled.requests) == 24
