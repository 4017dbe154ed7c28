"""An NLI classifier and an embedder added by a package outside `framework/` (issue 40,
section 2): tests/fixtures/plugin_example registers `keyword_nli` and `hash_bow` through
its `biasaudit.plugins` entry point only, each with its own config model. A
`classify_nli` spec answered by `keyword_nli`, and an `embedding` layer embedded by
`hash_bow`, validate and run in fresh processes; the numbers are recomputed here from
the inputs by the rules the plug-in documents (never read back from biasaudit's code);
without the plug-in the kind is unknown, and a misspelt option is refused, each in one
line with exit 2."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, spec_and_operator
from tests.unit.registry.plugin_cli import plugin_cli

TRIPLES = [
    ("t1", "Group X people are lazy and rude.", "Group Y people are kind."),
    ("t2", "They are lazy.", "They are lazy too."),
    ("t3", "They are calm.", "They are rude."),
    ("t4", "Lazy, lazy and rude!", "Nice."),
    ("t5", "Rude.", "Calm and kind."),
    ("t6", "Rude and lazy neighbours.", "Rude neighbours."),
]
WORDS, BOOST = ["lazy", "rude"], 2.0

NLI_SPEC = """
audit: {name: keyword-nli, method: nli_bias}
stimuli:
  inline:
@ROWS@
  id_field: id
probe:
  kind: classify_nli
  inputs: {stereo: "{{ stereo_premise }}", counter: "{{ counter_premise }}"}
  hypothesis: "{{ hypothesis }}"
metrics:
  - {name: nli_bias}
thresholds:
  - {metric: nli_bias.M6, min: 0, max: 100}
nli: {backend: keyword_nli, name: keyword-classifier, words: [lazy, rude], boost: 2}
""".replace("@ROWS@", "\n".join(f'    - {{id: {i}, stereo_premise: "{s}", counter_premise: "{c}", hypothesis: "They work little."}}'
                                  for i, s, c in TRIPLES))


def keyword_probs(premise: str) -> tuple[float, float, float]:
    """(E, N, C) by the plug-in's documented rule (its module docstring)."""
    x = BOOST * sum(w in WORDS for w in re.split(r"[^a-z]+", premise.lower()) if w)
    return (x + 1) / (x + 3), 1 / (x + 3), 1 / (x + 3)


def scores(s: tuple[float, float, float], c: tuple[float, float, float]) -> dict[str, bool]:
    """Which of M1..M9 hold for one triple: the table of docs/methods/nli_bias.md ("Per
    triple", from the paper), written out here."""
    (es, ns, cs), (ec, nc, cc) = s, c
    return {"M1": es > ec, "M2": es > 0.25, "M3": es > 0.5, "M4": es > 0.75,
            "M5": es - cs > ec - cc, "M6": es - ns > ec - nc, "M7": es - ns - cs > ec - nc - cc,
            "M8": es - ns / 2 - cs > ec - nc / 2 - cc, "M9": es - ns - cs / 2 > ec - nc - cc / 2}


@pytest.mark.slow  # validate and run in fresh processes
def test_a_plugin_nli_classifier_answers_a_classify_nli_spec(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "nli.yaml", NLI_SPEC)
    assert plugin_cli(workdir, "validate", f"spec={spec}", *ops).returncode == 0
    done = plugin_cli(workdir, "run", f"spec={spec}", *ops, *isolation(workdir))
    assert done.returncode in (0, 1, 3), done.stderr  # a verdict (3: inconclusive, six triples), not an error
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    # the classifier is a model of its own (`own_weights`): it is the audited subject
    assert s["cover"]["model"] == "keyword-classifier"
    est = s["metrics"]["nli_bias"]["estimates"]
    held = [scores(keyword_probs(st), keyword_probs(co)) for _, st, co in TRIPLES]
    for m in ("M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9"):
        assert est[m]["value"] == pytest.approx(100 * sum(h[m] for h in held) / len(TRIPLES)), m
    # not a constant: the triples give different shares for different scores
    assert len({est[m]["value"] for m in ("M1", "M2", "M3", "M4")}) >= 3
    # each answer is the plug-in's, as stored
    for r in read_jsonl(d / "responses.jsonl"):
        e, n, c = keyword_probs(r["request"]["text"])
        assert r["output"]["probs"] == pytest.approx({"entailment": e, "neutral": n, "contradiction": c}, abs=1e-12)


@pytest.mark.slow  # `biasaudit validate` and `schema` in fresh processes
def test_plugin_nli_errors_and_schema(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "typo.yaml", NLI_SPEC.replace("boost: 2", "bost: 2"))
    bad = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert "nli.bost: unknown key 'bost' (hint: did you mean 'boost'?" in bad.stderr, bad.stderr
    spec, ops = spec_and_operator(workdir / "nli.yaml", NLI_SPEC)
    bare = plugin_cli(workdir, "validate", f"spec={spec}", *ops, with_plugin=False)
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1, bare.stderr
    assert "nli.backend: unknown backend 'keyword_nli' (hint: one of: hf_nli, llm_nli)" in bare.stderr, bare.stderr
    config = json.loads(plugin_cli(workdir, "schema", "config").stdout)
    assert config["$defs"]["KeywordNLIConfig"]["properties"]["backend"]["const"] == "keyword_nli"
    [nli] = [a for a in config["properties"]["nli"]["anyOf"] if "discriminator" in a]
    assert nli["discriminator"]["mapping"] == {"hf_nli": "#/$defs/HFNLIConfig", "llm_nli": "#/$defs/LLMNLIConfig",
                                               "keyword_nli": "#/$defs/KeywordNLIConfig"}
    [emb] = [a for a in config["properties"]["embedder"]["anyOf"] if "discriminator" in a]
    assert emb["discriminator"]["mapping"]["hash_bow"] == "#/$defs/HashBowConfig"


ANSWERS = {
    "Tell me about: Group X": "Group X is lazy, people say, but lazy is a stereotype.",
    "Tell me about: Group Y": "No group is rude as such.",
    "Briefly: Group X": "False.",
    "Briefly: Group Y": "Group Y is rude? A stereotype.",
}
STATEMENTS = {"s1": "Group X is lazy.", "s2": "Group Y is rude."}

EMBED_SPEC = """
audit: {name: plugin-embedder, method: label_rates}
stimuli:
  inline:
    - {id: s1, statement: "Group X is lazy."}
    - {id: s2, statement: "Group Y is rude."}
  id_field: id
factors:
  tone:
    calm: {template: "Tell me about: {{ statement }}"}
    short: {template: "Briefly: {{ statement }}"}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies: @ANSWERS@
coding:
  mention: {coder: keyword, keywords: [stereotype], label: names_it, otherwise: silent}
  closeness: {coder: embedding, reference: "{{ statement }}"}
metrics:
  - {name: label_rate, id: named, layer: mention, labels: [names_it]}
thresholds:
  - {metric: named, min: 0.1}
embedder: {backend: hash_bow, name: hashed-words, dims: 32}
""".replace("@ANSWERS@", json.dumps(ANSWERS))


def hashed(text: str, dims: int = 32) -> np.ndarray:
    """The plug-in's documented vector: crc32-hashed word counts, unit length."""
    v = np.zeros(dims)
    for w in re.findall(r"[a-z]+", text.lower()):
        v[zlib.crc32(w.encode()) % dims] += 1
    return v / np.linalg.norm(v) if v.any() else np.eye(dims)[0]


@pytest.mark.slow  # validate and run in fresh processes
def test_a_plugin_embedder_embeds_an_embedding_layer(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "emb.yaml", EMBED_SPEC)
    done = plugin_cli(workdir, "run", f"spec={spec}", *ops, *isolation(workdir))
    assert done.returncode == 0, done.stderr
    [d] = run_dirs(workdir)
    codes = [c for c in read_jsonl(d / "codes.jsonl") if c["layer"] == "closeness"]
    answers = {(r["cell"], r["stimulus"]): r["output"]["text"] for r in read_jsonl(d / "responses.jsonl")}
    assert len(codes) == 4 and sorted(answers.values()) == sorted(ANSWERS.values())
    # each code: the cosine of the answer's vector and its stimulus's statement's (the reference)
    got = {tuple(c["unit"].split("|")[:2]): c["value"] for c in codes}
    expected = {(cell, stim): float(hashed(text) @ hashed(STATEMENTS[stim])) for (cell, stim), text in answers.items()}
    # vectors are stored as float32 in the embedding cache: agreement to 1e-6
    assert got == pytest.approx(expected, abs=1e-6)
    assert len({round(v, 6) for v in expected.values()}) >= 3  # the four cosines are not one constant
    # a misspelt option of the plug-in's embedder: one line, exit 2
    spec, ops = spec_and_operator(workdir / "typo.yaml", EMBED_SPEC.replace("dims: 32", "dimz: 32"))
    bad = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "embedder.dimz: unknown key 'dimz' (hint: did you mean 'dims'?" in bad.stderr, bad.stderr
    bare = plugin_cli(workdir, "validate", f"spec={spec.with_name('emb.yaml')}", *ops[:1], "embedder=test",
                      with_plugin=False)
    assert bare.returncode == 2 and "unknown backend 'hash_bow'" in bare.stderr, bare.stderr
