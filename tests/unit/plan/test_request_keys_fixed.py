"""Cache keys are fixed: a changed key silently loses every user's cached responses.

The literals below were computed on the code before the request parameters and model
identities were typed as JSON records (issue 28); the test fails if any key moves. It
goes through the real path (spec -> identity builder -> plan compiler / coding route)
and through `request_key` itself, for the probe kinds whose payloads differ: a sampled
generation (decoding parameters and a seed), a scored text, an NLI pair, an embedding.
"""

from __future__ import annotations

from typing import Any

from biasaudit.backends.factory import audit_identity
from biasaudit.coding.coders.embedding import embed_request
from biasaudit.coding.routes import StoreAnswerer, route_identity
from biasaudit.data import load_stimuli
from biasaudit.plan import compile_plan, request_key
from biasaudit.plan.requests import canonical_json
from biasaudit.spec import validate_config

STIMULI = [{"statement": "Nurses are caring.", "counter": "Plumbers are caring.", "hyp": "They care."},
           {"statement": "Ünïcode — «quoted»", "counter": "plain", "hyp": "h"}]
OPENAI = {"backend": "openai_compat", "name": "served", "base_url": "http://127.0.0.1:8000/v1", "model": "m", "system_prompt": "Be brief."}


def _keys(spec: dict[str, Any]) -> tuple[str, list[str]]:
    """(the model identity as the key hashes it, the plan's keys in design order)."""
    cfg = validate_config({"audit": {"name": "k", "method": "x"}, "stimuli": {"inline": STIMULI}, "metrics": [],
                           **spec}, spec_file=None)
    ident = audit_identity(cfg)
    plan = compile_plan(cfg, load_stimuli(cfg.stimuli, None), ident)
    for it in plan.items:  # the request as stored (responses.jsonl, the cache) hashes to its key
        r = plan.requests[it.key]
        assert request_key(ident, r.kind, r.text, r.messages, r.params, r.sample, r.text_pair) == it.key
    return canonical_json(ident), [it.key for it in plan.items]


def test_generate_keys_with_sampling_params() -> None:
    ident, keys = _keys({"probe": {"kind": "generate", "prompt": "{{ statement }} Agree?", "temperature": 0.7,
                                   "top_p": 0.9, "max_tokens": 32, "samples": 2},
                         "model": OPENAI})
    assert ident == IDENT_GENERATE
    assert keys == KEYS_GENERATE


def test_sequence_logprob_keys() -> None:
    ident, keys = _keys({"probe": {"kind": "sequence_logprob", "inputs": {"s": "{{ statement }}", "c": "{{ counter }}"}},
                         "model": {"backend": "scripted", "name": "s", "script": {"scores": {"x": -1.5}}}})
    assert ident == IDENT_SCORED
    assert keys == KEYS_SCORED


def test_classify_nli_keys() -> None:
    ident, keys = _keys({"probe": {"kind": "classify_nli", "inputs": {"p": "{{ statement }}"}, "hypothesis": "{{ hyp }}"},
                         "nli": {"backend": "llm_nli", "name": "llm"}, "model": OPENAI})
    assert ident == IDENT_NLI
    assert keys == KEYS_NLI


def test_embed_key() -> None:
    cfg = validate_config({"audit": {"name": "k", "method": "x"}, "stimuli": {"inline": STIMULI}, "metrics": [],
                           "probe": {"kind": "generate"}, "model": OPENAI,
                           "embedder": {"name": "mini", "path": "sentence-transformers/all-MiniLM-L6-v2"}},
                          spec_file=None)
    ident = route_identity(cfg, "embedder")
    assert canonical_json(ident) == IDENT_EMBED
    assert StoreAnswerer.key(ident, embed_request("the nurse")) == KEY_EMBED


def test_request_key_literals() -> None:
    """`request_key` alone, with parameters of every JSON type (the plan's KeyMaker is
    checked against it in test_plan_stream)."""
    ident = {"backend": "hf_causal", "dtype": "float32", "dir_sha256": "ab" * 32, "chat_template": False}
    params = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "choices": ["Yes", "No"], "stop": None,
              "logit_bias": {"1": -100}, "echo": True}
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q é"}]
    assert request_key(ident, "generate", None, msgs, params, 0) == KEY_LITERAL_CHAT
    assert request_key(ident, "sequence_logprob", "A text.", None, {}, 0) == KEY_LITERAL_SCORED
    assert request_key(ident, "classify_nli", "premise", None, {}, 0, "hypothesis") == KEY_LITERAL_NLI
    assert request_key({"derived_by": {"embedder": {"x": 1}}}, "embed", "t", None, {}, 0) == KEY_LITERAL_EMBED


# -- computed on the code before the change (do not regenerate: a difference is a lost cache) --

IDENT_GENERATE = (
    '{"backend":"openai_compat","base_url":"http://127.0.0.1:8000/v1","model":"m","scoring":2,"'
    'system_prompt":"Be brief."}'
)
KEYS_GENERATE = [
    '1fa047bf80378129d2bdca6a5fa319d2a6173bbcf0aa18950b24b1aa4fa76bbf',
    '364596734fcb329354d05db0b540bdea0cee8c4b88a0823970bfeb92d8d21905',
    'b653013b1c7c5e3e6e53e78ceafb8a2e17a23f1dc7918dc58eff6d1bb13b66f9',
    'dfdd68af452e2301048ddf2b6afa229e07b873632f0ca22847d680150e1ec966',
]
IDENT_SCORED = '{"backend":"scripted","name":"s","script":{"scores":{"x":-1.5}}}'
KEYS_SCORED = [
    'a28a38e0b3d26151b7ccb5a28c4b7e7a0926bea91d6dae4eddfb2a2a2b898c7a',
    '4ff943697a82c39f5fa5d16bfdbf89c878d80b5b707b0a2df9cb9809e735f1a5',
    'c116598b02afa3e05b05a2d74c06b6097251842a187e8e1c4518cad3a09c76c6',
    '4c9bc5ccaceb7e036aa1c3298f903e1648b148be5d1cde12109b017a3c808fea',
]
IDENT_NLI = (
    '{"backend":"llm_nli","labels":{"contradiction":"No","entailment":"Yes","neutral":"Maybe"},'
    '"model":{"backend":"openai_compat","base_url":"http://127.0.0.1:8000/v1","model":"m","scor'
    'ing":2,"system_prompt":"Be brief."},"prompt":"Premise: {{ premise }}\\nHypothesis: {{ hypot'
    'hesis }}\\nDoes the premise entail the hypothesis? Answer with one word: Yes, Maybe, or No.'
    '"}'
)
KEYS_NLI = [
    'de89efa6fc419cccb07fe0e432aa5713e6af0afed5f1d320cfd7a8afc6c0660f',
    '6a7073b8e558eac622212c7f5bba6ac8add25aa546ad3c582af3f10f5a83fdde',
]
IDENT_EMBED = (
    '{"derived_by":{"embedder":{"backend":"sentence_transformers","device":"auto","name":"mini"'
    ',"path":"sentence-transformers/all-MiniLM-L6-v2"}}}'
)
KEY_EMBED = '7c4d9be2ae3dc9940794772eb50ab613a36ebea5a0fb94d942ee27bf00178468'
KEY_LITERAL_CHAT = '3d6a4838ed76344b9f75910dfca94de1a9f29f899106273f4068a3241e6b603d'
KEY_LITERAL_SCORED = '9d4d318aa7e707d7a78baf2e018c672a083b3d6cf12d03e8f6ac487809d7785d'
KEY_LITERAL_NLI = '661d12c3f22e4a010756c1aca5ad003f16d29f03d7acff63baadbc21697b0302'
KEY_LITERAL_EMBED = 'c643be9345376dbdd47dc1c8378226b0728d62e3056f89202311622457cb83c8'
