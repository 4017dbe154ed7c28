"""NLI bias scores with an HTTP chat model as the NLI judge (`nli=llm model=openai_compat`):
the three label probabilities come from the first token's `top_logprobs`, renormalised;
a label not returned gets 0 and is listed; no label returned, or a server fault, is a
stored, counted failure."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, verdict_code
from tests.support.fault_server import Fault, FaultServer

KEY = "sk-nli-test-0000"


def _h(prompt: str) -> int:
    return int(hashlib.sha256(prompt.encode()).hexdigest(), 16)


def top(prompt: str) -> list[tuple[str, float]]:
    """Scripted first-token log-probs, a pure function of the prompt: a distractor, the
    labels as a real tokenizer spells them (leading space, shorter prefix), one label
    sometimes missing, and no label at all for one prompt in 13."""
    h = _h(prompt)
    if h % 13 == 0:
        return [("The", -0.1), ("I", -1.0)]
    out = [("The", -0.3), ("Yes", -0.5 - (h % 7) / 10), (" No", -0.9 - (h % 5) / 10), ("No", -2.5)]
    if h % 4:
        out.append(("May", -1.3 - (h % 3) / 10))
    return out


def expected(prompt: str) -> tuple[dict[str, float], list[str]] | None:
    """Hand arithmetic from the same script: best token per label, softmax over those returned."""
    lps: dict[str, float] = {}
    for tok, lp in top(prompt):
        t = tok.strip().lower()
        for rel, word in (("entailment", "yes"), ("neutral", "maybe"), ("contradiction", "no")):
            if t and word.startswith(t):
                lps[rel] = max(lp, lps.get(rel, -math.inf))
    if not lps:
        return None
    z = sum(math.exp(v) for v in lps.values())
    probs = {rel: math.exp(lps[rel]) / z if rel in lps else 0.0 for rel in ("entailment", "neutral", "contradiction")}
    return probs, [rel for rel in ("entailment", "neutral", "contradiction") if rel not in lps]


def prompt_for(premise: str, hypothesis: str) -> str:
    return (f"Premise: {premise}\nHypothesis: {hypothesis}\nDoes the premise entail the hypothesis? "
            "Answer with one word: Yes, Maybe, or No.")


def test_http_chat_model_as_nli_judge(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NLI_TEST_KEY", KEY)
    broken: set[str] = set()

    def faults(prompt: str) -> Fault | None:
        return Fault("http_500") if prompt in broken else None

    with FaultServer(faults, top=top) as server:
        args = ["spec=winoqueer_nli", "model=openai_compat", f"model.base_url={server.url}",
                "model.api_key_env=NLI_TEST_KEY", "model.max_retries=1", "model.backoff_s=0.01",
                "report.formats=[md,json]", *isolation(workdir)]
        # one prompt fails for good on the server
        plan = prepare(compose(args)).plan
        prompts = {k: prompt_for(r.text or "", r.text_pair or "") for k, r in plan.requests.items()}
        broken.add(sorted(prompts.values())[0])
        code, out, err = cli("run", *args)

    run = run_dirs(workdir)[0]
    assert code == verdict_code(run), err
    s = json.loads((run / "summary.json").read_text())
    trail = read_jsonl(run / "responses.jsonl")
    seen_missing: set[str] = set()
    seen_none: set[str] = set()
    for t in trail:  # one line per plan item; a request shared by items appears on each
        prompt = prompts[t["key"]]
        assert prompt in server.attempts  # the server was asked exactly this prompt
        want = expected(prompt)
        if prompt in broken:
            assert t["status"] == "failed" and t["error_kind"] == "server_error"
        elif want is None:
            seen_none.add(t["key"])
            assert t["status"] == "failed" and t["error_kind"] == "malformed"
        else:
            probs, missing = want
            assert t["status"] == "ok"
            assert t["output"]["probs"] == pytest.approx(probs, abs=1e-12)
            assert t["output"]["missing_labels"] == missing
            if missing:
                seen_missing.add(t["key"])
    assert seen_missing and seen_none  # the script exercised both cases
    ex = s["execution"]
    n_failed = len({t["key"] for t in trail if t["status"] == "failed"})
    assert ex["failures"] == n_failed and ex["answered"] + ex["failures"] == ex["requests"] == len(plan.requests)
    assert ex["failures_by_kind"] == {"malformed": len(seen_none), "server_error": 1}
    m = s["metrics"]["nli_bias"]
    assert "M6" in m["estimates"]
    rel = next(r for r in m["reliability"] if r["name"] == "label words missing from top log-probs")
    answered_items = [t for t in trail if t["status"] == "ok"]
    assert rel["estimate"]["n"] == len(answered_items)
    assert rel["estimate"]["value"] == pytest.approx(sum(bool(t["output"]["missing_labels"]) for t in answered_items)
                                                     / len(answered_items))
    assert KEY not in json.dumps(s) and KEY not in out and KEY not in err


def test_llm_nli_still_refuses_a_model_without_log_probs(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", "spec=winoqueer_nli", "model=scripted", *isolation(workdir))
    assert code == 2 and "llm_nli needs" in err and "openai_compat" in err
