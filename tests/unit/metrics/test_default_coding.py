"""DefaultCoding: a metric's default layers cross to the runner as the spec's own records."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from biasaudit.metrics import DefaultCoding
from biasaudit.spec import CodingLayerSpec, ReliabilityPairSpec


def test_of_reads_a_spec_section_into_the_spec_records() -> None:
    d = DefaultCoding.of({"sel": {"coder": "rules", "labels": ["E", "N"], "by": "task"},
                          "elab": {"coder": "judge_panel", "strip": "sel"}},
                         [{"pair": ["sel", "elab"], "map": {"elab": {"QE": "E"}}}])
    assert isinstance(d.layers["sel"], CodingLayerSpec)
    assert d.layers["sel"].labels == ["E", "N"] and d.layers["sel"].options() == {"by": "task"}
    assert d.layers["elab"].strip == "sel" and d.layers["elab"].input == "response"
    assert d.reliability == [ReliabilityPairSpec(pair=("sel", "elab"), map={"elab": {"QE": "E"}})]


def test_no_defaults_is_empty() -> None:
    assert DefaultCoding().layers == {} and DefaultCoding().reliability == []


def test_a_broken_default_fails_where_it_is_made() -> None:
    with pytest.raises(ValidationError):
        DefaultCoding.of({"sel": {"labels": ["E"]}})  # no coder
    with pytest.raises(ValidationError):
        DefaultCoding.of({}, [{"pair": ["only_one"]}])


def test_two_metrics_asking_for_the_same_layer_compare_equal() -> None:
    # runner.checks.coding_plan merges the defaults of several metrics by name
    a = DefaultCoding.of({"claims": {"coder": "claims", "min_words": 5}})
    b = DefaultCoding.of({"claims": {"coder": "claims", "min_words": 5}})
    c = DefaultCoding.of({"claims": {"coder": "claims", "min_words": 6}})
    assert a.layers["claims"] == b.layers["claims"] != c.layers["claims"]
