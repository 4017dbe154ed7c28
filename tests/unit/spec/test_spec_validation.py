"""Spec language: Pydantic validation with located, hinted errors."""

from __future__ import annotations

import copy

import pytest

from biasaudit.spec import ConfigErrors, validate_config

BASE = {
    "audit": {"name": "t", "method": "token_probability"},
    "stimuli": {"inline": [{"more": "a b", "less": "a c"}]},
    "probe": {"kind": "sequence_logprob", "inputs": {"more": "{{ more }}", "less": "{{ less }}"}},
    "metrics": [{"name": "bias_score"}],
    "model": {"backend": "scripted", "name": "s"},
}


def test_valid_config_round_trips() -> None:
    cfg = validate_config(copy.deepcopy(BASE), spec_file="s.yaml")
    assert cfg.probe.kind == "sequence_logprob"
    assert cfg.runtime.batch_size == 8
    assert cfg.metrics[0].key == "bias_score"


def test_unknown_key_names_file_path_and_suggests() -> None:
    data = copy.deepcopy(BASE)
    data["stimuli"]["sourc"] = "x.csv"
    with pytest.raises(ConfigErrors) as ei:
        validate_config(data, spec_file="specs/x.yaml")
    line = ei.value.lines()[0]
    assert line.startswith("error: specs/x.yaml: stimuli.sourc: unknown key 'sourc'")
    assert "did you mean 'source'" in line


def test_wrong_type_reports_value() -> None:
    data = copy.deepcopy(BASE)
    data["runtime"] = {"batch_size": "many"}
    with pytest.raises(ConfigErrors) as ei:
        validate_config(data, spec_file="s.yaml")
    assert "runtime.batch_size" in ei.value.lines()[0]
    assert "'many'" in ei.value.lines()[0]


def test_model_key_error_points_at_model_config_file() -> None:
    data = copy.deepcopy(BASE)
    data["model"]["bakend"] = "x"
    with pytest.raises(ConfigErrors) as ei:
        validate_config(data, spec_file="s.yaml", choices={"model": "mine"})
    assert ei.value.lines()[0].startswith("error: conf/model/mine.yaml: model.bakend")


def test_source_and_inline_are_exclusive() -> None:
    data = copy.deepcopy(BASE)
    data["stimuli"]["source"] = "x.csv"
    with pytest.raises(ConfigErrors) as ei:
        validate_config(data, spec_file="s.yaml")
    assert "exactly one of" in ei.value.lines()[0]


def test_threshold_needs_a_bound() -> None:
    data = copy.deepcopy(BASE)
    data["thresholds"] = [{"metric": "bias_score"}]
    with pytest.raises(ConfigErrors) as ei:
        validate_config(data, spec_file="s.yaml")
    assert "thresholds[0]" in ei.value.lines()[0]


def test_json_schema_lists_sections() -> None:
    from biasaudit.spec import json_schema

    schema = json_schema()
    for key in ("audit", "stimuli", "factors", "design", "probe", "metrics", "thresholds", "report"):
        assert key in schema["properties"]
