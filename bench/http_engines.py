"""In-process against managed inference engines, measured side by side in one run.

Generation: the default suite's generation work, fisco_gender's greedy answers (60 new
tokens at most) for its three chat subjects (smollm2, smollm2_fair, smollm2_cynic), answered
(a) in-process (hf_causal, float32 weights dequantized from the shipped GGUF), (b) by the
managed llama.cpp server on the exact float32 weights, (c) by llama.cpp on the shipped Q4_1
file, (d) by the managed vLLM (CPU build, float32). One backend per engine answers all three
subjects: each request carries its subject's system prompt as a system message, which is
what every backend does with `model.system_prompt` when a request has none, so the prompts
are the ones `model=<subject>` sends, without starting an engine per subject.

Scoring: crows_pairs_tp's 80 `sequence_logprob` requests in-process, by llama.cpp (exact)
and by vLLM (one echo request per sentence over HTTP).

Every backend is built (engines started) before the first timed round, and the rounds run
one backend after the other, in the reverse order on every other round, so that noise from
other processes on the machine shows up in the per-round numbers instead of in one
engine's row. Start-up (building the backend: the float32 copy of the weights when missing,
the tokenizer, the engine until it answers) is timed separately and left out of the rates.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biasaudit.backends import Response, build_backend
from biasaudit.backends.factory import _LOADED
from biasaudit.backends.managed_engine import VLLM_PYTHON_ENV
from biasaudit.methods.token_probability.metric import ar_full
from biasaudit.plan import Request
from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose

ROOT = Path(__file__).resolve().parents[1]
SUBJECTS = ("smollm2", "smollm2_fair", "smollm2_cynic")
ROUNDS = 2
VLLM_READY = ROOT / ".venv-vllm" / ".biasaudit-setup"

# label -> overrides added to `model=smollm2`
GEN_ENGINES = {
    "in-process (hf_causal)": [],
    "llama.cpp exact (f32)": ["model.serve=llamacpp"],
    "llama.cpp as_shipped (Q4_1)": ["model.serve=llamacpp", "model.serve_weights=as_shipped"],
    "vLLM (CPU, f32)": ["model.serve=vllm"],
}
SCORE_ENGINES = ("in-process (hf_causal)", "llama.cpp exact (f32)", "vLLM (CPU, f32)")


def generation_requests() -> list[Request]:
    """fisco_gender's `generate` requests for each subject, the subject's system prompt as
    a system message, keyed `<subject>:<plan key>`."""
    out = []
    for subject in SUBJECTS:
        c = compose(["spec=fisco_gender", f"model={subject}"])
        system = c.config.model.system_prompt
        for r in prepare(c).plan.requests.values():
            if r.kind != "generate":
                continue
            msgs = [{"role": "system", "content": system}, *(r.messages or [])] if system else list(r.messages or [])
            out.append(Request(key=f"{subject}:{r.key}", kind="generate", messages=msgs, params=r.params,
                               sample=r.sample))
    return out


def scoring_requests() -> list[Request]:
    reqs = [r for r in prepare(compose(["spec=crows_pairs_tp", "model=smollm2"])).plan.requests.values()
            if r.kind == "sequence_logprob"]
    return reqs


def _answer(backend: Any, reqs: list[Request]) -> tuple[float, dict[str, Any]]:
    got: list[Response] = []
    t0 = time.perf_counter()
    backend.execute(reqs, got.append)
    secs = time.perf_counter() - t0
    bad = [(r.key, r.error) for r in got if r.status != "ok"]
    if bad or len(got) != len(reqs):
        raise RuntimeError(f"{len(bad)} failed of {len(reqs)} ({len(got)} answered): {bad[:3]}")
    return secs, {r.key: r.output for r in got}


def _available(label: str) -> bool:
    """Whether the engine of a row is installed. vLLM: `make setup-vllm` may still be
    installing it (.venv-vllm without its marker): waited for, 10 minutes at most."""
    overrides = GEN_ENGINES[label]
    if "model.serve=llamacpp" in overrides:
        return importlib.util.find_spec("llama_cpp") is not None
    if "model.serve=vllm" in overrides:
        if os.environ.get(VLLM_PYTHON_ENV):
            return True
        t0 = time.monotonic()
        while VLLM_READY.parent.is_dir() and not VLLM_READY.is_file() and time.monotonic() - t0 < 600:
            time.sleep(10)
        return VLLM_READY.is_file()
    return True


def _rounds(labels: list[str], fn: Callable[[str], float], rounds: int) -> dict[str, list[float]]:
    """`fn(label)` for every label, `rounds` times, the order reversed every other round."""
    secs: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(rounds):
        for label in labels if i % 2 == 0 else labels[::-1]:
            secs[label].append(fn(label))
    return secs


def run(rounds: int = ROUNDS) -> dict[str, Any]:
    """Start every backend, then time generation and scoring on each; stop the engines."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    gen, score = generation_requests(), scoring_requests()
    labels = [label for label in GEN_ENGINES if _available(label)]
    backends: dict[str, Any] = {}
    startup: dict[str, float] = {}
    result: dict[str, Any] = {"n_generate": len(gen), "n_score": len(score), "rounds": rounds,
                              "subjects": list(SUBJECTS), "startup_s": startup, "skipped": sorted(set(GEN_ENGINES) - set(labels))}
    load_before = os.getloadavg()[0]
    try:
        for label in labels:
            cfg = compose(["model=smollm2", *GEN_ENGINES[label]]).config
            t0 = time.perf_counter()
            backends[label] = build_backend(cfg.model, cfg.runtime)
            startup[label] = time.perf_counter() - t0
            # warm-up, not timed: first-call allocations, vLLM's first batch, the scoring probe
            _answer(backends[label], [Request(key="warm", kind="generate", messages=gen[0].messages,
                                              params={**gen[0].params, "max_tokens": 8})])
            if label in SCORE_ENGINES:
                _answer(backends[label], score[:2])

        # -- generation ----------------------------------------------------------------
        texts: dict[str, list[dict[str, str]]] = {label: [] for label in labels}
        tokens: dict[str, list[int]] = {label: [] for label in labels}

        def generate(label: str) -> float:
            secs, out = _answer(backends[label], gen)
            texts[label].append({k: str(v["text"]) for k, v in out.items()})
            tokens[label].append(sum(int(v["output_tokens"]) for v in out.values()))
            return secs

        gen_secs = _rounds(labels, generate, rounds)
        ref = texts[labels[0]][0]
        result["generation"] = {
            label: {
                "seconds": gen_secs[label],
                "tokens": tokens[label],
                "identical": sum(texts[label][0][k] == ref[k] for k in ref),
                "stable": all(t == texts[label][0] for t in texts[label]),
            }
            for label in labels
        }

        # -- scoring -------------------------------------------------------------------
        s_labels = [label for label in SCORE_ENGINES if label in backends]
        scored: dict[str, dict[str, float]] = {}

        def score_once(label: str) -> float:
            secs, out = _answer(backends[label], score)
            scored[label] = {k: ar_full(v) for k, v in out.items()}
            return secs

        score_secs = _rounds(s_labels, score_once, rounds)
        base = scored[s_labels[0]]
        result["scoring"] = {
            label: {"seconds": score_secs[label],
                    "max_abs_diff": max(abs(scored[label][k] - base[k]) for k in base)}
            for label in s_labels
        }
        result["load_avg_1min"] = (load_before, os.getloadavg()[0])
    finally:
        for key in [k for k, b in _LOADED.items() if hasattr(b, "shutdown")]:
            _LOADED.pop(key).shutdown()  # type: ignore[attr-defined]
    return result


def print_table(r: dict[str, Any]) -> None:
    n, rounds = r["n_generate"], r["rounds"]
    g = r["generation"]
    base = next(iter(g))
    toks0 = g[base]["tokens"][0]
    print(f"  generation: fisco_gender for {', '.join(r['subjects'])}: {n} greedy requests (max 60 new tokens), "
          f"{toks0} tokens generated in-process; best of {rounds} rounds, alternating order")
    print(f"  {'engine':<30}{'requests/s':>11}{'tokens/s':>10}{'vs in-proc':>11}{'tokens':>8}"
          f"{'same text':>11}  seconds per round")
    best0 = min(g[base]["seconds"])
    for label, row in g.items():
        best = min(row["seconds"])
        toks = row["tokens"][row["seconds"].index(best)]
        same = f"{row['identical']}/{n}" + ("" if row["stable"] else "*")
        per = ", ".join(f"{s:.1f}" for s in row["seconds"])
        print(f"  {label:<30}{n / best:>11.2f}{toks / best:>10.1f}{best0 / best:>10.2f}x{toks:>8}{same:>11}  {per}")
    print("  (vs in-proc: in-process seconds / engine seconds for the same requests; tokens: as each engine "
          "counts them; same text: identical to in-process at temperature 0, * = changed between rounds)")
    s = r["scoring"]
    ns = r["n_score"]
    sbase = next(iter(s))
    sbest0 = min(s[sbase]["seconds"])
    print(f"  scoring: crows_pairs_tp, {ns} sequence_logprob requests (smollm2), best of {rounds} rounds")
    print(f"  {'engine':<30}{'sentences/s':>12}{'vs in-proc':>11}{'max |diff|':>12}  seconds per round")
    for label, row in s.items():
        best = min(row["seconds"])
        per = ", ".join(f"{x:.2f}" for x in row["seconds"])
        print(f"  {label:<30}{ns / best:>12.1f}{sbest0 / best:>10.2f}x{row['max_abs_diff']:>12.1e}  {per}")
    print("  (max |diff|: largest per-sentence log-prob difference from in-process, nats)")
    start = ", ".join(f"{label} {secs:.1f} s" for label, secs in r["startup_s"].items())
    print(f"  start-up, not in the rates (build_backend: model load / weights copy, tokenizer, engine until it "
          f"answers): {start}")
    before, after = r["load_avg_1min"]
    print(f"  1-minute load average before / after: {before:.2f} / {after:.2f} on {os.cpu_count()} CPUs "
          "(other processes slow every row)")
    if r["skipped"]:
        print(f"  skipped (not installed): {', '.join(r['skipped'])}")


def main() -> None:
    print_table(run())


if __name__ == "__main__":
    main()
