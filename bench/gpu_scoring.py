"""Scoring throughput on a GPU: `hf_causal` on CUDA for each `model.dtype`, against
lm-evaluation-harness's `HFLM.loglikelihood` on the same weights.

Not part of `make bench` (the CI machine has no GPU). Run it on a machine with one; it
needs only torch, transformers, gguf, pydantic and lm-eval (no Hydra):

    python bench/gpu_scoring.py --model smollm2 --dtypes float32,bfloat16
    python bench/gpu_scoring.py --model gemma3_270m --gguf /path/gemma-3-270m-q4_k_m.gguf

Workload: the shipped minimal pairs (CrowS-Pairs, WinoQueer and BLiMP samples),
repeated `--copies` times, every copy but the first made distinct by a numbered
suffix (" (7)"), so no two sentences are the same and prefix trees share only what real
pairs share. A GPU needs thousands of sentences to be busy; the samples have a few
hundred. Rows: biasaudit's default (prefix trees, token budget sized from free GPU
memory), its padded token-budget batches, and lm-eval at several batch sizes, timed in
interleaved rounds (best of each), then paired rounds against lm-eval's fastest row.
Every row is checked against the float32 padded path: max |log-likelihood difference|
and the CrowS-Pairs bias score of the first copy.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "framework"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import yaml  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))

from scoring_paths import bias_score, lm_eval_peer, ours  # noqa: E402

from biasaudit.backends import build_backend  # noqa: E402
from biasaudit.spec import ModelConfig, RuntimeConfig  # noqa: E402

DATA = ROOT / "specs" / "data"


def pairs() -> tuple[list[tuple[str, str]], int]:
    """All shipped minimal pairs, and how many of them (the first) are CrowS-Pairs."""
    with open(DATA / "crows_pairs_sample.csv", newline="", encoding="utf-8") as f:
        crows = [(r["sent_more"], r["sent_less"]) for r in csv.DictReader(f)]
    with open(DATA / "winoqueer_sample.csv", newline="", encoding="utf-8") as f:
        wq = [(r["sent_x"], r["sent_y"]) for r in csv.DictReader(f)]
    blimp = []
    for name in ("anaphor_gender_agreement", "animate_subject_passive"):  # the first 8 pairs of each shipped set
        with open(DATA / "blimp" / f"{name}.jsonl", encoding="utf-8") as f:
            blimp += [(d["sentence_good"], d["sentence_bad"]) for d in map(json.loads, f.readlines()[:8])]
    return crows + wq + blimp, len(crows)


def workload(copies: int) -> tuple[list[str], int]:
    base, n_crows = pairs()
    texts = []
    for k in range(copies):
        suffix = f" ({k})" if k else ""
        for a, b in base:
            texts += [a + suffix, b + suffix]
    return texts, n_crows


def model_config(name: str, gguf: str | None, dtype: str) -> ModelConfig:
    d = yaml.safe_load((ROOT / "conf" / "model" / f"{name}.yaml").read_text(encoding="utf-8"))
    if gguf:  # a copy of the model file given directly (the package is not installed there)
        d.update(path=str(Path(gguf).resolve().parent), gguf_file=Path(gguf).name)
        d.pop("gguf_parts", None)
        d.pop("gguf_sha256", None)
    d.update(dtype=dtype, device="auto")
    return ModelConfig(**d)


def lm_eval_rows(backend: Any, sizes: list[int]) -> dict[str, Any]:
    try:
        return {f"lm-eval HFLM, batch {n}": lm_eval_peer(backend, n) for n in sizes}
    except ImportError as exc:
        print(f"  (lm-eval not importable here: {exc}; peer rows left out)")
        return {}


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Any, texts: list[str]) -> float:
    sync()
    t0 = time.perf_counter()
    fn(texts)
    sync()
    return time.perf_counter() - t0


def free_gpu_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def bench_dtype(name: str, gguf: str | None, dtype: str, runtime: RuntimeConfig, texts: list[str], n_crows: int,
                reference: list[float] | None, sizes: list[int], rounds: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    backend = build_backend(model_config(name, gguf, dtype), runtime)
    load_s = time.perf_counter() - t0
    budget = backend.batch_tokens

    def mode(packed: bool) -> Any:
        def fn(t: list[str]) -> list[float]:
            backend.packed = packed
            try:
                return ours(backend, t)
            finally:
                backend.packed = True
        return fn

    fns = {f"biasaudit default (prefix trees, <= {budget} tokens)": mode(True),
           f"biasaudit, padded batches of <= {budget} tokens": mode(False),
           **lm_eval_rows(backend, sizes)}
    answers = {label: fn(texts) for label, fn in fns.items()}  # also the warm-up
    ref = reference if reference is not None else answers[f"biasaudit, padded batches of <= {budget} tokens"]
    diffs = {label: max(abs(a - b) for a, b in zip(ref, got, strict=True)) for label, got in answers.items()}
    scores = {label: bias_score(got, n_crows) for label, got in answers.items()}
    best = {label: float("inf") for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            best[label] = min(best[label], timed(fn, texts))
    first = next(iter(fns))
    peers = [label for label in fns if label.startswith("lm-eval")]
    paired: list[float] = []
    fastest = min(peers, key=best.__getitem__) if peers else None
    if fastest:
        for _ in range(rounds):
            a, b = timed(fns[first], texts), timed(fns[fastest], texts)
            best[first], best[fastest] = min(best[first], a), min(best[fastest], b)
            paired.append(b / a)
    import torch

    out = {"model": name, "dtype": dtype, "device": backend.device, "load_s": load_s, "budget": budget,
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "packing_exact": bool(backend.packing_exact), "n": len(texts),
           "rows": {label: len(texts) / best[label] for label in fns}, "diffs": diffs, "scores": scores,
           "fastest_peer": fastest, "paired": sorted(paired),
           "float32_padded": answers[f"biasaudit, padded batches of <= {budget} tokens"]}
    return out  # the model goes with this frame; main() collects it before the next dtype


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="smollm2", help="a config in conf/model (smollm2, gemma3_270m)")
    ap.add_argument("--gguf", help="the model's GGUF file, when its PyPI package is not installed")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated model.dtype values")
    ap.add_argument("--copies", type=int, default=20, help="copies of the shipped pairs (default 20)")
    ap.add_argument("--batch-sizes", default="64,256,1024", help="lm-eval batch sizes to time")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (default 3)")
    ap.add_argument("--models-dir", help="runtime.models_dir: where the converted model is kept")
    ap.add_argument("--json", help="write the figures here as JSON")
    a = ap.parse_args()
    texts, n_crows = workload(a.copies)
    runtime = RuntimeConfig(models_dir=a.models_dir, progress=False)
    sizes = [int(x) for x in a.batch_sizes.split(",") if x]
    results = []
    reference = None
    for dtype in a.dtypes.split(","):
        r = bench_dtype(a.model, a.gguf, dtype, runtime, texts, n_crows, reference, sizes, a.rounds)
        gc.collect()
        free_gpu_cache()
        if reference is None and dtype == "float32":
            reference = r["float32_padded"]
        r.pop("float32_padded")
        results.append(r)
        print(f"{a.model}, {dtype} on {r['gpu'] or r['device']}: {r['n']} sentences, token budget {r['budget']}, "
              f"load {r['load_s']:.1f} s, packed path exact: {r['packing_exact']}")
        print(f"  {'path':<50}{'sentences/s':>12}{'max |diff|':>12}{'bias score':>11}")
        for label, rate in r["rows"].items():
            print(f"  {label:<50}{rate:>12.0f}{r['diffs'][label]:>12.1e}{r['scores'][label]:>11.1f}")
        if r["fastest_peer"]:
            first = next(iter(r["rows"]))
            p = r["paired"]
            print(f"  ratio default / {r['fastest_peer']}: {r['rows'][first] / r['rows'][r['fastest_peer']]:.2f} "
                  f"(paired rounds: median {statistics.median(p):.2f}, {p[0]:.2f} to {p[-1]:.2f})")
        sys.stdout.flush()
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
