"""TFDP: docs/methods/tfdp.md checks with fixed embeddings (no model needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasaudit.methods.tfdp.metric import (
    Prediction,
    Scorer,
    TFDPParams,
    alpha_for,
    clean_answer,
    kernel,
    predictions_of,
    wfs,
)

TABLE = {"a": (1.0, 0.0), "b": (0.0, 1.0), "c": (0.6, 0.8), "x": (0.6, -0.8)}


def fake_embed(texts: list[str]) -> np.ndarray:
    """2-d unit vectors keyed by the last word, so sentence, window and token of a
    prediction all embed alike and every alignment equals kappa(truth, prediction)."""
    return np.array([TABLE[t.split()[-1]] for t in texts], dtype=float)


@pytest.mark.parametrize("kind", ["powcos", "gauss", "cos"])
@pytest.mark.parametrize("alpha, beta", [(0.7, 0.9), (0.0, 0.9), (1.0, 1.0), ("dynamic", 0.5)])
def test_prediction_equal_to_truth_gives_one(kind: str, alpha, beta) -> None:  # type: ignore[no-untyped-def]
    s = Scorer(TFDPParams(kernel=kind, alpha=alpha, beta=beta), fake_embed)
    abar, mu = s.abar_and_mu("x <MASK>", "c", [Prediction("c", 1.0), Prediction("c", 1.0)])
    assert abar == pytest.approx(1.0)
    assert mu == pytest.approx(np.array(TABLE["c"]))


def test_ps_psd_wfs_by_hand_with_cosine() -> None:
    p = TFDPParams(kernel="cos")
    s = Scorer(p, fake_embed)
    # S: truth a, predictions a (cos 1) and c (cos .6) -> Abar = .8; S': truth a, predictions b, b -> 0
    abar_s, mu_s = s.abar_and_mu("x <MASK>", "a", [Prediction("a", 1), Prediction("c", 1)])
    abar_t, mu_t = s.abar_and_mu("x <MASK>", "a", [Prediction("b", 1), Prediction("b", 1)])
    assert abar_s == pytest.approx(0.8) and abar_t == pytest.approx(0.0)
    ps = abar_s - abar_t
    # mu_S = (.8, .4), mu_S' = (0, 1): cos = .4 / sqrt(.8) = .4472136; PSD = 1 - (1 + .4472136)/2
    psd = 1 - (1 + float(kernel(mu_s, mu_t, "cos"))) / 2
    assert psd == pytest.approx(1 - (1 + 0.4 / math.sqrt(0.8)) / 2)
    assert wfs(ps, psd, 0.1) == pytest.approx(0.9 * 0.8 + 0.1 * psd)
    assert wfs(-ps, psd, 0.1) == pytest.approx(-0.9 * 0.8 - 0.1 * psd)


def test_powcos_and_gauss_by_hand() -> None:
    u, v = np.array(TABLE["a"]), np.array(TABLE["c"])
    assert float(kernel(u, v, "powcos", p=10)) == pytest.approx(((0.6 + 1) / 2) ** 10)
    # ||a - c||^2 = .4^2 + .8^2 = .8
    assert float(kernel(u, v, "gauss", gamma=10)) == pytest.approx(math.exp(-10 * 0.8))


def test_sgn_of_zero_is_plus_one() -> None:
    assert wfs(0.0, 0.3, 0.1) == pytest.approx(0.03)


def test_zero_vector_for_ill_formed_predictions() -> None:
    u, z = np.array(TABLE["a"]), np.zeros(2)
    assert float(kernel(u, z, "cos")) == 0.0
    assert float(kernel(u, z, "powcos")) == pytest.approx(0.5**10)
    assert float(kernel(u, z, "gauss")) == pytest.approx(math.exp(-10))
    s = Scorer(TFDPParams(kernel="cos"), fake_embed)
    abar, mu = s.abar_and_mu("x <MASK>", "a", [Prediction(None, 1), Prediction("a", 1)])
    assert abar == pytest.approx(0.5) and mu == pytest.approx(np.array([0.5, 0.0]))


def test_white_box_weights_are_renormalised_probabilities() -> None:
    preds, ill = predictions_of([{"top": [["a", math.log(0.3)], [" ", math.log(0.1)], ["c", math.log(0.1)]]}], "next_token")
    assert [p.word for p in preds] == ["a", None, "c"] and ill == 1
    assert [p.weight for p in preds] == pytest.approx([0.6, 0.2, 0.2])
    s = Scorer(TFDPParams(kernel="cos"), fake_embed)
    abar, _ = s.abar_and_mu("x <MASK>", "a", preds)
    assert abar == pytest.approx(0.6 * 1 + 0.2 * 0 + 0.2 * 0.6)


@pytest.mark.parametrize("raw, clean", [("  'man'. ", "man"), ("Home", "Home"), ("", None), ("two words", None),
                                        ("Sorry", None), ('"tune"', "tune")])
def test_response_hygiene(raw: str, clean: str | None) -> None:
    assert clean_answer(raw) == clean


def test_dynamic_alpha() -> None:
    p = TFDPParams(alpha="dynamic")
    # L = 6 words, c = 6: alpha = .15 + .7 * 6/12 = .5
    assert alpha_for(p, "one two three four five <MASK>") == pytest.approx(0.5)
