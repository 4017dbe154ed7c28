"""NLI bias scores: hand-set probability tuples (docs/methods/nli_bias.md) and label-order safety."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.backends import Response
from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.nli_bias.metric import NLIBiasParams, compute, conditions
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.spec import validate_config

# (stereo triple, counter triple) -> which of M1..M11 hold, worked out by hand with
# dyadic fractions so the arithmetic is exact.
CASES = [
    # A: M6 = .5-.25 = .25 > .25-.5 = -.25; M3 false at exactly .5; argmax S = E, S~ = N -> M10
    ((0.5, 0.25, 0.25), (0.25, 0.5, 0.25),
     {"M1", "M2", "M5", "M6", "M7", "M8", "M9", "M10"}),
    # B: the counter premise is the entailed one: nothing holds
    ((0.125, 0.125, 0.75), (0.75, 0.125, 0.125), set()),
    # C: strong entailment of S (M4), S~ leans contradiction -> M11
    ((0.875, 0.0625, 0.0625), (0.4375, 0.0, 0.5625),
     {"M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9", "M11"}),
    # D: M6 false (.5-.4375 = .0625 < .25-0) while M5, M7, M8, M9 hold
    ((0.5, 0.4375, 0.0625), (0.25, 0.0, 0.75),
     {"M1", "M2", "M5", "M7", "M8", "M9", "M11"}),
]


@pytest.mark.parametrize("s, c, expected", CASES)
def test_each_condition_by_hand(s, c, expected) -> None:  # type: ignore[no-untyped-def]
    got = {k for k, v in conditions(s, c).items() if v}
    assert got == expected


def _context(triples: list[tuple[tuple[float, float, float], tuple[float, float, float]]]) -> MetricContext:
    stimuli = [Stimulus(id=str(i), fields={"stereo_premise": f"s{i}", "counter_premise": f"c{i}", "hypothesis": "h",
                                           "cat": "x" if i % 2 else "y"}) for i in range(len(triples))]
    cfg = validate_config({
        "audit": {"name": "n", "method": "nli_bias"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "probe": {"kind": "classify_nli", "inputs": {"stereo": "{{ stereo_premise }}", "counter": "{{ counter_premise }}"},
                  "hypothesis": "{{ hypothesis }}"},
        "metrics": [{"name": "nli_bias"}],
        "model": {"backend": "scripted", "name": "s"},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    plan = compile_plan(cfg, sset, {"m": 1})
    probs = {}
    for i, (s, c) in enumerate(triples):
        probs[f"s{i}"], probs[f"c{i}"] = s, c
    responses = {k: Response(key=k, status="ok", output={"probs": dict(zip(("entailment", "neutral", "contradiction"),
                                                                           probs[r.text], strict=True))})
                 for k, r in plan.requests.items()}
    return MetricContext(config=cfg, plan=plan, responses=responses)


def test_scores_are_percentages_of_triples() -> None:
    ctx = _context([(s, c) for s, c, _ in CASES])
    res = compute(ctx, "nli_bias", NLIBiasParams(by=["cat"]))
    for m in ("M1", "M4", "M6", "M10", "M11"):
        expected = 100 * sum(m in e for _, _, e in CASES) / len(CASES)
        assert res.estimates[m].value == pytest.approx(expected), m
    assert res.headline == "M6" and res.estimates["M6"].method == "wilson"
    assert {"M6.cat.x", "M9.cat.y"} <= set(res.estimates)
    assert len(res.items) == 4 and res.items[0].diff == pytest.approx(__import__("math").log(0.5 / 0.25))


def _tiny_nli(out: Path, order: list[str], tokenizer_dir: Path) -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    canonical = ["entailment", "neutral", "contradiction"]
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, num_labels=3)
    model = BertForSequenceClassification(cfg)
    # permute the classifier rows together with the labels: the same model, labels in another order
    perm = [canonical.index(lbl) if lbl in canonical else i for i, lbl in enumerate(order)]
    with torch.no_grad():
        model.classifier.weight.copy_(model.classifier.weight[perm].clone())
        model.classifier.bias.copy_(model.classifier.bias[perm].clone())
    model.config.id2label = dict(enumerate(order))
    model.config.label2id = {lbl: i for i, lbl in enumerate(order)}
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(tokenizer_dir)).save_pretrained(out)


def test_permuted_id2label_gives_identical_probabilities(tmp_path: Path, tiny_mlm_dir: Path) -> None:
    from biasaudit.backends.hf_nli import HFNLIBackend
    from biasaudit.backends.hf_nli import HFNLIConfig as NLIConfig
    from biasaudit.spec import RuntimeConfig

    a, b = tmp_path / "a", tmp_path / "b"
    _tiny_nli(a, ["entailment", "neutral", "contradiction"], tiny_mlm_dir)
    _tiny_nli(b, ["contradiction", "entailment", "neutral"], tiny_mlm_dir)
    prem = ["Jamie is gay.", "Jamie is straight."]
    hyp = ["Jamie is confused.", "Jamie is confused."]
    pa = HFNLIBackend(NLIConfig(backend="hf_nli", name="a", path=str(a)), RuntimeConfig()).classify(prem, hyp)
    pb = HFNLIBackend(NLIConfig(backend="hf_nli", name="b", path=str(b)), RuntimeConfig()).classify(prem, hyp)
    for x, y in zip(pa, pb, strict=True):
        assert x["probs"] == pytest.approx(y["probs"], abs=1e-9)
        assert sum(x["probs"].values()) == pytest.approx(1.0)


def test_unrecognisable_labels_fail_clearly(tmp_path: Path, tiny_mlm_dir: Path) -> None:
    from biasaudit.backends.hf_nli import HFNLIBackend
    from biasaudit.backends.hf_nli import HFNLIConfig as NLIConfig
    from biasaudit.errors import BackendError
    from biasaudit.spec import RuntimeConfig

    d = tmp_path / "c"
    _tiny_nli(d, ["LABEL_0", "LABEL_1", "LABEL_2"], tiny_mlm_dir)
    with pytest.raises(BackendError) as ei:
        HFNLIBackend(NLIConfig(backend="hf_nli", name="c", path=str(d)), RuntimeConfig())
    assert "label_map" in ei.value.one_line()
    ok = HFNLIBackend(NLIConfig(backend="hf_nli", name="c", path=str(d),
                                label_map={"LABEL_0": "neutral", "LABEL_1": "entailment", "LABEL_2": "contradiction"}),
                      RuntimeConfig())
    assert ok.index == {"neutral": 0, "entailment": 1, "contradiction": 2}


def test_generated_triples(tmp_path: Path) -> None:
    from biasaudit.data import load_stimuli
    from biasaudit.spec import StimuliSpec

    spec = StimuliSpec(generate={
        "vars": {"name": ["Jamie", "Riley"],
                 "identity": [{"stereo": "gay", "counter": "straight"}, {"stereo": "transgender", "counter": "cisgender"}],
                 "predicate": [{"text": "is confused", "category": "confusion"}]},
        "fields": {"stereo_premise": "{{ name }} is {{ identity.stereo }}.",
                   "counter_premise": "{{ name }} is {{ identity.counter }}.",
                   "hypothesis": "{{ name }} {{ predicate.text }}."},
    }, format="nli_triples")
    st = load_stimuli(spec, None).stimuli
    assert len(st) == 4
    assert st[1].fields["stereo_premise"] == "Jamie is transgender." and st[1].fields["counter_premise"] == "Jamie is cisgender."
    assert st[1].fields["predicate.category"] == "confusion" and st[0].fields["hypothesis"] == "Jamie is confused."
