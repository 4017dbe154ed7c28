"""Broken variants of every shipped spec (issue 37, section 3, acceptance 5): the
self-test (validate too, for a parity band) fails each, naming the mistake; a variant no
check can see is expected to pass, strictly, and docs/validity.md says why. The variants
and their transformations: tests/fixtures/broken_specs/variants.py. That every unbroken
shipped spec passes its self-test: test_selftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.broken_specs.variants import BAND, SPECS, VARIANTS, Variant, outcome

SLOW_SPECS = {"refusal_stance", "hiring_impact", "biaxis_oat", "biaxis_factorial"}
"""Specs whose self-test takes several seconds (coding layers over many units)."""


def _param(v: Variant) -> object:
    marks = [pytest.mark.slow] if v.spec in SLOW_SPECS or v.real_model else []
    if not v.caught:
        marks.append(pytest.mark.xfail(strict=True, reason="a mistake no content field reveals (docs/validity.md)"))
    return pytest.param(v, id=v.name, marks=marks)


@pytest.mark.parametrize("variant", [_param(v) for v in VARIANTS if not v.real_model])
def test_selftest_fails_each_broken_variant_naming_the_mistake(variant: Variant, tmp_path: Path) -> None:
    caught, message = outcome(variant, tmp_path)
    assert caught, message
    assert variant.expect in message, message


def test_every_shipped_spec_has_broken_variants() -> None:
    """Every shipped spec of a method a class applies to has at least one variant, and
    every class has several instances."""
    covered = {v.spec for v in VARIANTS}
    methods_without = {"pivotal_nonsense"}
    shipped = {p.stem for p in SPECS.glob("*.yaml")} - {"default_suite"}
    assert shipped - covered <= methods_without, shipped - covered - methods_without
    per_class: dict[str, int] = {}
    for v in VARIANTS:
        per_class[v.cls] = per_class.get(v.cls, 0) + 1
    assert len(per_class) == 7 and min(per_class.values()) >= 2, per_class


def test_validate_warns_on_a_parity_band_without_the_no_bias_value(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.fixtures.broken_specs.variants import write

    band = next(v for v in VARIANTS if v.cls == BAND and v.spec == "crows_pairs_tp")
    code, out, err = cli("validate", f"spec={write(band, tmp_path)}")
    assert code == 0, out + err
    assert "warning: thresholds[0] (bias_score): the band [0, 10] does not contain 50" in out
    assert "0-100, centred at 50" in out
    code, out, _ = cli("validate", "spec=crows_pairs_tp")
    assert code == 0 and "warning" not in out


@pytest.mark.slow
def test_swapped_nli_label_words_fail_through_the_real_model(tmp_path: Path) -> None:
    """SmolLM2 (the shipped default model) answers 8 unambiguous NLI cases: with the
    spec's words the entailed pairs come out more entailed; with entailment and
    contradiction's words swapped, the self-test fails naming the words (about 4 minutes
    on two CPU cores, mostly loading the model)."""
    from biasaudit.runner.selftest_words import nli_word_rows
    from biasaudit.spec.compose import compose

    rows, problems = nli_word_rows(compose(["spec=winoqueer_nli"]).config)
    assert [r.got for r in rows] == ["PASS"] and not problems
    words = next(v for v in VARIANTS if v.name == "wq_nli_words_entail_contra")
    caught, message = outcome(words, tmp_path, label_words=True)
    assert caught and "nli.labels {entailment: 'No'" in message, message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["refusal_stance_judge_words_swapped", "biaxis_oat_judge_words_swapped"])
def test_swapped_judge_words_fail_through_a_competent_judge(name: str, tmp_path: Path) -> None:
    """The scripted backend as a competent judge (A to a plainly endorsing answer, D to a
    plainly rejecting one): with the judge group's words E and D swapped, `--label-words`
    fails the self-test naming the words (old main sent nothing to judges and passed)."""
    v = next(v for v in VARIANTS if v.name == name)
    v = Variant(v.name, v.spec, v.cls, v.transform, v.expect, real_model=True,
                overrides=(*v.overrides, f"runtime.cache={tmp_path / 'cache.sqlite'}"))
    caught, message = outcome(v, tmp_path, label_words=True)
    assert caught, message
    assert "judge words read backwards" in message and "labels {E: 'D', QE: 'B', N: 'C', D: 'A'" in message, message
