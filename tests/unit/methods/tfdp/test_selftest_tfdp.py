"""`biasaudit selftest` of TFDP (methods/tfdp/oracle.py), black-box and white-box: the
shipped specs detect a model that takes the stereotyped (or misinformed) side, stay
quiet on one that answers both sentences alike, and a constant answer or answers that
are all ill-formed (refusals) are undefined, never a WFS of 0 or 0.05 with a zero-width
interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.tfdp.metric import Prediction, uninformative
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.unit.methods.nli_bias.test_selftest_nli_bias import rows

ORTH = 2.0 ** -10
"""powcos (p = 10) of two orthogonal embeddings: ((0 + 1) / 2)^10."""


@pytest.mark.parametrize("args", [["spec=tfdp_gender"], ["spec=tfdp_climate"],
                                  ["spec=tfdp_gender", "probe.kind=next_token"]])
def test_shipped_specs_selftest_pass(cli, workdir: Path, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", *args, *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED" in out
    [planted] = rows(out, "planted")
    assert (planted["expected"], planted["got"], planted["ok"]) == ("FAIL", "FAIL", "ok")
    [null] = rows(out, "null")
    assert float(null["truth"]) == 0.0 and null["got"] != "FAIL"
    [ties] = rows(out, "ties")
    assert ties["got"] == "INCONCLUSIVE" and "undefined: every one of 32 sentences got the same answer" in ties[
        "estimate / reason"]


def _planted(workdir: Path, *args: str) -> dict[str, float]:
    prep = prepare(compose([*args, *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    res = run_oracle(prep, oracle, params, "planted")[0]["tfdp"]
    wfs = {it.stimulus: float(it.diff) for it in res.items}  # every pair's WFS
    assert res.estimates["WFS"].value == pytest.approx(sum(wfs.values()) / len(wfs))
    return wfs


def test_planted_wfs_by_hand(workdir: Path) -> None:
    lam = 0.1
    # parity, one truth ("A man's home is his castle"): S gets "home" (aligned 1 at every
    # scale), S' the stereotyped word (orthogonal at every scale: o); PS = 1 - o,
    # PSD = 1 - (1 + o)/2, WFS = (1 - lam) PS + lam PSD = (1 - o)(1 - lam/2)
    wfs = _planted(workdir, "spec=tfdp_gender")
    assert wfs["0"] == pytest.approx((1 - ORTH) * (1 - lam / 2)) == pytest.approx(0.949072265625)
    # two truths ("Like father, like son / daughter"): both sentences get "son": PSD = 0
    assert wfs["11"] == pytest.approx((1 - lam) * (1 - ORTH))
    assert len(wfs) == 16 and sum(wfs.values()) / 16 == pytest.approx(
        (15 * (1 - ORTH) * (1 - lam / 2) + (1 - lam) * (1 - ORTH)) / 16)  # the headline's truth, 0.94595
    # factuality: both sentences get the misinformation's word: PS = o - 1, PSD = 0
    climate = _planted(workdir, "spec=tfdp_climate", "probe.kind=next_token")
    assert climate["0"] == pytest.approx(-(1 - lam) * (1 - ORTH)) == pytest.approx(-0.89912109375)
    assert climate["13"] == 0.0  # truths heat / heat: the misinformation is in the verb, no filler shows it
    assert sum(climate.values()) / 16 == pytest.approx(-15 * (1 - lam) * (1 - ORTH) / 16)  # -0.84293


def test_constant_or_ill_formed_answers_are_undefined(workdir: Path) -> None:
    prep = prepare(compose(["spec=tfdp_climate", "+stimuli.sample.n=4", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    for kind, why in (("ties", "undefined: every one of 8 sentences got the same answer ('the')"),
                      ("refuse", "undefined: every prediction of 8 sentences was ill-formed")):
        res = run_oracle(prep, oracle, params, kind)[0]["tfdp"]
        # before: WFS 0 (ties) or lam (1 - o)/2 = 0.0499 (refusals) on every pair, a zero-width
        # interval inside the band: PASS on no measurement
        for name in ("WFS", "PS", "PSD", "abs_PS", "WFS.task.factuality"):
            e = res.estimates[name]
            assert e.value is None and e.note.startswith(why), (kind, name, e)


def test_uninformative_answers() -> None:
    home, the = [Prediction("home", 1.0)], [Prediction("the", 1.0)]
    assert uninformative([("home", the), ("lost", the)]) is not None  # one answer whatever the truth
    assert uninformative([("home", home), ("home", home)]) is None  # the truth of both: a measurement
    assert uninformative([("home", home), ("lost", the)]) is None
    assert uninformative([("home", [Prediction(None, 1.0)]), ("lost", [Prediction(None, 1.0)])]) is not None
    # one ill-formed sentence among well-formed ones is scored (as the zero vector)
    assert uninformative([("home", [Prediction(None, 1.0)]), ("lost", home)]) is None
    # white-box: the same distribution for every sentence, however spread
    flat = [Prediction("a", 0.5), Prediction("the", 0.5)]
    assert uninformative([("home", flat), ("lost", list(reversed(flat)))]) is not None
    assert uninformative([("home", flat), ("lost", [Prediction("a", 0.4), Prediction("the", 0.6)])]) is None


def test_thresholds_that_hold_every_wfs_fail_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # a band over the whole range of WFS: the planted 0.95 passes it, nothing detects the bias
    code, out, _ = cli("selftest", "spec=tfdp_gender", "thresholds=[{metric: tfdp.WFS, min: -1, max: 1}]",
                       "+stimuli.sample.n=4", *isolation(workdir))
    assert code == 1 and "self-test FAILED" in out
    assert "no threshold detects the planted bias" in out
    [planted] = rows(out, "planted")
    assert planted["expected"] == "PASS" and planted["got"] == "PASS"
