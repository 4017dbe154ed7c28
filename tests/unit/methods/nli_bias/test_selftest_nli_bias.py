"""`biasaudit selftest` of the NLI bias scores (methods/nli_bias/oracle.py): the shipped
spec detects a planted bias, a constant NLI classifier is undefined (not M6 = 0), and a
spec whose thresholds cannot reach the planted value fails its self-test."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.nli_bias.metric import NLIBiasParams, compute, conditions
from biasaudit.methods.nli_bias.oracle import ENTAILED, MIDDLE, NEUTRAL
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.unit.methods.nli_bias.test_nli_bias import _context


def rows(out: str, oracle: str) -> list[dict[str, str]]:
    """The table rows of one oracle, by the header's columns (truth may be blank)."""
    lines = out.splitlines()
    head = next(ln for ln in lines if ln.strip().startswith("oracle "))
    names = ["oracle", "threshold", "truth", "expected", "got", "ok", "estimate / reason"]
    starts = [head.index(n) for n in names]
    return [{n: ln[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
            for ln in lines if ln.strip().startswith(oracle + " ")]


def test_shipped_spec_selftest_passes(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", "spec=winoqueer_nli", *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED" in out
    planted = rows(out, "planted")
    assert [(r["threshold"], r["expected"], r["got"], r["ok"]) for r in planted] == [
        ("nli_bias.M6", "FAIL", "FAIL", "ok"), ("nli_bias.M9", "FAIL", "FAIL", "ok")]
    ties = rows(out, "ties")
    assert len(ties) == 2 and all(r["got"] == "INCONCLUSIVE" and "undefined: the NLI model gave the same "
                                  "probabilities" in r["estimate / reason"] for r in ties)


def test_planted_truth_by_hand(workdir: Path) -> None:
    # stereo premise ENTAILED = (.8, .1, .1), counter MIDDLE = (.35, .45, .2):
    # M6: .8 - .1 = .7 > .35 - .45 = -.1 (holds); M9: .8 - .1 - .05 = .65 > .35 - .45 - .1 = -.2 (holds);
    # M11 needs argmax(S~) = C, but argmax(MIDDLE) = N. The null's other half, NEUTRAL = (.1, .8, .1):
    # M6: .1 - .8 = -.7 > -.1 fails.
    assert conditions(ENTAILED, MIDDLE)["M6"] and conditions(ENTAILED, MIDDLE)["M9"]
    assert not conditions(ENTAILED, MIDDLE)["M11"] and not conditions(NEUTRAL, MIDDLE)["M6"]
    prep = prepare(compose(["spec=winoqueer_nli", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    planted, _, _ = run_oracle(prep, oracle, params, "planted")
    est = planted["nli_bias"].estimates
    assert est["M6"].value == 100.0 and est["M9"].value == 100.0 and est["M11"].value == 0.0
    null, _, _ = run_oracle(prep, oracle, params, "null")
    assert null["nli_bias"].estimates["M6"].value == 50.0  # 36 triples, 18 on the stereotyped side


def test_unreachable_thresholds_fail_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # a band that holds every possible score: the planted 100 passes it, nothing detects the bias
    code, out, _ = cli("selftest", "spec=winoqueer_nli", "thresholds=[{metric: nli_bias.M6, min: 0, max: 100}]",
                       "+stimuli.sample.n=12", *isolation(workdir))
    assert code == 1
    assert "no threshold detects the planted bias" in out and "self-test FAILED" in out


def test_constant_classifier_is_undefined_not_zero() -> None:
    # one probability triple for every premise: every strict comparison is false, so the
    # counts alone would give M6 = 0 (a strong "anti-stereotype" reading) and a FAIL
    res = compute(_context([((0.25, 0.5, 0.25), (0.25, 0.5, 0.25))] * 4), "nli_bias", NLIBiasParams(by=["cat"]))
    for name in ("M1", "M2", "M6", "M9", "M10", "M6.cat.x", "M9.cat.y"):
        e = res.estimates[name]
        assert e.value is None and e.note.startswith("undefined: the NLI model gave the same probabilities"), name


def test_all_ties_on_a_comparison_is_undefined() -> None:
    # each triple's premises get the same probabilities, but the triples differ: the
    # comparisons (M1, M5-M9) all tie and are undefined; M2 (pE(S) > .25) is still measured
    triples = [((0.5, 0.25, 0.25),) * 2, ((0.125, 0.75, 0.125),) * 2]
    res = compute(_context(triples), "nli_bias", NLIBiasParams())  # type: ignore[arg-type]
    for m in ("M1", "M5", "M6", "M7", "M8", "M9"):
        assert res.estimates[m].value is None and res.estimates[m].note.startswith(f"undefined: every triple ties on {m}")
    assert res.estimates["M2"].value == pytest.approx(50.0)
