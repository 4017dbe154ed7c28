"""`hf_causal`: a causal LM through transformers: a hub id, a local directory, or a GGUF
file (dequantized to float32 by transformers). Scores, next-token distributions and
generation, batched and length-sorted; uses a GPU when one is present."""

from __future__ import annotations

import functools
import logging
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasaudit._util import interrupt
from biasaudit.backends.base import (
    Emit,
    Response,
    resolve_model_path,
    run_batches,
    run_in_batches,
    stoppable,
    token_budget_batches,
)
from biasaudit.backends.devices import cuda_token_budget, torch_setup
from biasaudit.backends.identity import directory_digest
from biasaudit.backends.model_files import converted_dir, gguf_sha256, joined_gguf, save_converted
from biasaudit.backends.packed_scoring import (
    pack_rows,
    row_batches,
    score_rows,
    token_order_batches,
)
from biasaudit.backends.weights import shared
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import HFCausalConfig, RuntimeConfig

log = logging.getLogger(__name__)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _identity(cfg: HFCausalConfig) -> JSONObject:
    if cfg.path is None:
        raise BackendError("hf_causal needs `model.path`", key="model.path")
    ident: JSONObject = {"backend": "hf_causal", "dtype": cfg.dtype}
    if cfg.system_prompt:
        ident["system_prompt"] = cfg.system_prompt
    if not cfg.chat_template:
        ident["chat_template"] = False  # plain-text prompts: a different request
    if cfg.gguf_parts:  # a split GGUF: its declared hash (checked when the pieces are joined)
        ident.update(gguf_file=cfg.gguf_file, sha256=gguf_sha256(cfg))
        return ident
    where = resolve_model_path(cfg.path)
    if isinstance(where, Path):
        if cfg.gguf_file:
            ident.update(gguf_file=cfg.gguf_file, sha256=gguf_sha256(cfg))
        elif where.is_dir():
            ident.update(dir_sha256=directory_digest(where))
        else:
            raise BackendError(f"model path {where} is not a directory", key="model.path")
    else:
        ident.update(hub_id=where, revision=cfg.revision or "main")
    return ident


# Texts the packed path is checked on: a shared start, then two long different
# continuations, so that a row mask that let one see the other, or positions counted
# along the row, move log-probs by nats (with a pair that differs in its last words, by
# ~0.2: no more than half precision's own rounding).
PACKING_PROBE = ("Paris is the capital of France, and its museums draw visitors from all over the world.",
                 "Paris is a small town in Texas where the county fair opens every September.")

# Longest prefix-tree row in packed scoring: each row attends within itself (an L x L
# mask), so long rows waste attention work on masked pairs, short ones split pairs.
ROW_TOKENS = 128


class HFCausalBackend:
    supports = frozenset({"generate", "sequence_logprob", "next_token", "choice"})

    def __init__(self, cfg: HFCausalConfig, runtime: RuntimeConfig) -> None:
        self.cfg = cfg
        self.row_tokens = ROW_TOKENS
        self.share_prefixes = True  # packed scoring: one node per shared prefix (False: plain packing)
        self.balance_rows = True  # packed scoring: rows of even length (False: greedy filling; `make bench`)
        self.gpu_budget: int | None = None
        self.apply_runtime(runtime)
        self.device, dtype = torch_setup(cfg.device, cfg.dtype, runtime.threads)
        t0 = time.perf_counter()
        # variants of one model (system prompts, chat settings) share its weights
        key = {"path": cfg.path, "gguf_file": cfg.gguf_file, "gguf_parts": cfg.gguf_parts, "revision": cfg.revision,
               "dtype": str(dtype), "device": self.device, "converted": str(converted_dir(cfg, runtime))}
        self.tok, self.model = shared("causal_lm", key, lambda: self._load_eval(cfg, runtime, dtype, self.device))
        log.info("loaded %s on %s in %.1fs", cfg.name, self.device, time.perf_counter() - t0)
        bos = self.tok.bos_token_id
        self.bos_id = bos if bos is not None else self.tok.eos_token_id
        if self.device.startswith("cuda"):
            # On a GPU the budget is what fits in free memory, not the CPU-sized default.
            self.gpu_budget = cuda_token_budget(self.device, self.model.config, self.model.dtype.itemsize,
                                                runtime.gpu_memory_fraction)
            self.apply_runtime(runtime)

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Run-time settings that do not change the model (also applied to an instance a
        sweep or test session already loaded)."""
        self.batch_size = runtime.batch_size
        self.prefix_cache = runtime.prefix_cache
        self.batch_tokens = runtime.batch_tokens
        if self.batch_tokens is not None and self.gpu_budget is not None:
            self.batch_tokens = self.gpu_budget
        self.packed = runtime.packed_scoring and runtime.batch_tokens is not None

    @classmethod
    def _load_eval(cls, cfg: HFCausalConfig, runtime: RuntimeConfig, dtype: Any, device: str) -> tuple[Any, Any]:
        tok, model = cls._load(cfg, runtime, dtype)
        model.to(device).eval()
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return tok, model

    @staticmethod
    def _load(cfg: HFCausalConfig, runtime: RuntimeConfig, dtype: Any) -> tuple[Any, Any]:
        """Tokenizer and model: the converted copy of a GGUF model when there is one, else
        the GGUF (joined from its pieces first when split), dequantized and converted once."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        converted = converted_dir(cfg, runtime)
        kwargs: dict[str, Any] = {}
        if cfg.revision:
            kwargs["revision"] = cfg.revision
        try:
            if converted is not None and (converted / "config.json").is_file():
                return (AutoTokenizer.from_pretrained(str(converted)),
                        AutoModelForCausalLM.from_pretrained(str(converted), dtype=dtype))
            where = joined_gguf(cfg, runtime) if cfg.gguf_parts else resolve_model_path(cfg.path or "")
            if cfg.gguf_file:
                kwargs["gguf_file"] = cfg.gguf_file
            tok = AutoTokenizer.from_pretrained(str(where), **kwargs)
            model = AutoModelForCausalLM.from_pretrained(str(where), dtype=dtype, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"cannot load model {cfg.path!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                key="model.path",
                hint="models are never downloaded at run time; give a local path or install the package",
            ) from None
        if converted is not None:
            save_converted(tok, model, converted)
        return tok, model

    # -- scoring -----------------------------------------------------------------
    def _encode_scoring(self, text: str) -> tuple[list[int], list[list[int]]]:
        enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = [self.bos_id, *enc["input_ids"]]
        offsets = [[0, 0], *[list(o) for o in enc["offset_mapping"]]]
        return ids, offsets

    def sequence_logprobs(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Per-token log p(x_t | x_<t) for each text with BOS prepended, in one padded
        forward pass (right padding keeps causal positions exact). A model variant's
        system prompt is a conditioning prefix: in the context, not in the output. With
        `prefix_cache`, the prefix shared by the whole batch (BOS + system prompt) is run
        once and its keys/values repeated over the batch instead of recomputed per row."""

        encoded = [self._encode_scoring(t) for t in texts]
        prefix = self._prefix_ids()
        shared = [encoded[0][0][0], *prefix] if encoded else []
        if self.packed and encoded:
            scored = self._packed_logprobs([[*shared, *ids[1:]] for ids, _ in encoded])
            return [self._scoring_output(ids, offsets, scored[i][len(prefix):])
                    for i, (ids, offsets) in enumerate(encoded)]
        if self.prefix_cache and prefix:
            picked = self._suffix_logprobs(shared, [ids[1:] for ids, _ in encoded])
        else:
            picked = self._batch_logprobs([[*shared, *ids[1:]] for ids, _ in encoded])[:, len(prefix):]
        return [self._scoring_output(ids, offsets, picked[i, : len(ids) - 1].tolist())
                for i, (ids, offsets) in enumerate(encoded)]

    def _scored(self, texts: list[str]) -> list[dict[str, Any]]:
        """`sequence_logprobs`, halving a batch that runs out of GPU memory (the budget is
        an estimate; other processes take memory too) and later batches with it. Log-probs
        that are not finite (float16 overflows on some models, Gemma's among them) fail
        the batch with a cause instead of reaching the metrics."""
        import torch

        try:
            out = self.sequence_logprobs(texts)
        except torch.OutOfMemoryError:
            if len(texts) == 1:
                raise
            torch.cuda.empty_cache()
            if self.batch_tokens and self.batch_tokens > 1:
                self.batch_tokens //= 2
                log.warning("out of GPU memory: scoring batches halved to %d tokens", self.batch_tokens)
            half = len(texts) // 2
            return self._scored(texts[:half]) + self._scored(texts[half:])
        if any(not math.isfinite(x) for o in out for x in o["logprobs"][1:]):
            raise ValueError(f"the model gave non-finite log-probabilities in {self.cfg.dtype} (overflow?): "
                             "use model.dtype=bfloat16 or float32")
        return out

    def _scoring_output(self, ids: list[int], offsets: list[list[int]], lps: list[float]) -> dict[str, Any]:
        return {"tokens": self.tok.convert_ids_to_tokens(ids), "token_ids": ids, "logprobs": [None, *lps],
                "offsets": offsets}

    def _prefix_ids(self) -> list[int]:
        """The tokens of a variant's standing system prompt, conditioning every scored text."""
        if not self.cfg.system_prompt:
            return []
        return list(self.tok(self.cfg.system_prompt + "\n", add_special_tokens=False)["input_ids"])

    @functools.cached_property
    def packing_exact(self) -> bool:
        """Whether packed scoring reproduces this model's forward pass (checked once, on first use)."""
        return self._packing_is_exact()

    def _packing_is_exact(self) -> bool:
        """Packed scoring reads the decoder body and applies the output head itself; check on
        two short texts that this reproduces the model's own forward pass (an architecture
        that scales or caps logits some other way, or ignores a 4D mask, falls back to
        the padded path)."""
        seqs = [self._encode_scoring(t)[0] for t in PACKING_PROBE]
        try:
            rows = pack_rows(seqs, self.row_tokens)
            got = score_rows(self.model, rows, self.tok.pad_token_id, self.device)
        except (RuntimeError, ValueError, TypeError, AttributeError) as exc:
            log.info("packed scoring unavailable for %s (%s): padded batches", self.cfg.name, exc)
            return False
        ref = self._batch_logprobs(seqs)
        worst: float = max(abs(a - b) for i, q in enumerate(seqs)
                           for a, b in zip(got[i], ref[i, : len(q) - 1].tolist(), strict=True))
        import torch

        # float32 agrees to ~1e-5. Half precision rounds the two paths differently (the
        # model soft-caps Gemma's logits in bfloat16, the packed head in float32): up to
        # ~0.15 nats on the probe, where a wrong mask or wrong positions give 2 or more
        # (measured on SmolLM2 and Gemma 3 with the mask or the positions broken on purpose).
        tol = 1e-4 if self.model.dtype == torch.float32 else 0.5
        if worst > tol:
            log.info("packed scoring differs from %s's forward pass by %.1e: padded batches", self.cfg.name, worst)
        return worst <= tol

    def _packed_logprobs(self, seqs: list[list[int]]) -> list[list[float]]:
        """Log-probs of tokens 1.. of each sequence, from prefix-tree rows (packed_scoring):
        no padding inside a row, each shared prefix (BOS, system prompt, a pair's common
        start) computed once, and the vocabulary projection only where a token is scored."""
        window = getattr(self.model.config, "sliding_window", None)
        if not self.packing_exact or (window and max(len(q) for q in seqs) > window):
            # the tree mask replaces the model's own masks, sliding windows included:
            # sequences longer than the window take the padded path
            picked = self._batch_logprobs(seqs)
            return [picked[i, : len(q) - 1].tolist() for i, q in enumerate(seqs)]
        rows = pack_rows(seqs, self.row_tokens, share=self.share_prefixes, balance=self.balance_rows)
        got: dict[int, list[float]] = {}
        for batch in row_batches(rows, self.batch_tokens or self.row_tokens):
            interrupt.check()  # a long scoring batch stops between its row batches
            got.update(score_rows(self.model, batch, self.tok.pad_token_id, self.device))
        return [got[i] for i in range(len(seqs))]

    def _padded(self, rows: list[list[int]]) -> tuple[Any, Any]:
        import torch

        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return input_ids, mask

    @staticmethod
    def _token_logprobs(logits: Any, targets: Any) -> Any:
        """log p(target) per position: the target's logit minus the log normaliser, without
        materialising the [batch, length, vocabulary] log-softmax (less memory traffic)."""
        import torch

        logits = logits.float()
        return (logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)).double()

    def _batch_logprobs(self, rows: list[list[int]]) -> Any:
        """[batch, width - 1] log-probs of tokens 1.. of each row (padding positions hold junk).
        Each row's last token is not fed: nothing is predicted from it (as lm-eval does),
        which saves one position per row."""
        import torch

        if max(len(r) for r in rows) < 2:  # BOS alone: nothing to predict
            return torch.zeros((len(rows), 0), dtype=torch.float64)
        inputs, _mask = self._padded([r[:-1] for r in rows])
        targets, _ = self._padded([r[1:] for r in rows])
        with torch.inference_mode():
            # No attention mask: with right padding, causal attention already keeps every
            # real token from seeing the pads after it, and leaving the mask out lets the
            # attention kernel take its plain causal path (noticeably faster on CPU).
            logits = self.model(input_ids=inputs.to(self.device)).logits
            return self._token_logprobs(logits, targets.to(self.device)).cpu()

    def _suffix_logprobs(self, shared: list[int], suffixes: list[list[int]]) -> Any:
        """[batch, width] log-probs of each suffix's tokens after the shared prefix, the
        prefix computed once (its last logits predict every suffix's first token)."""
        import torch

        if max(len(x) for x in suffixes) == 0:
            return torch.zeros((len(suffixes), 0), dtype=torch.float64)
        targets, _ = self._padded(suffixes)
        with torch.inference_mode():
            pre = self.model(input_ids=torch.tensor([shared], device=self.device), use_cache=True)
            joined = pre.logits[:, -1:, :].expand(len(suffixes), -1, -1)
            if targets.shape[1] > 1:
                cache = pre.past_key_values
                cache.batch_repeat_interleave(len(suffixes))
                # right padding: no mask needed (as above); the last suffix token predicts nothing
                inputs = targets[:, :-1]
                logits = self.model(input_ids=inputs.to(self.device), past_key_values=cache, use_cache=True).logits
                # position j of the suffix is predicted by suffix position j-1, or by the prefix for j = 0
                joined = torch.cat([joined, logits], dim=1)
            return self._token_logprobs(joined, targets.to(self.device)).cpu()

    # -- chat --------------------------------------------------------------------
    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        if self.cfg.system_prompt and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": self.cfg.system_prompt}, *messages]
        if self.cfg.chat_template and getattr(self.tok, "chat_template", None):
            return str(self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return "\n".join(m["content"] for m in messages) + "\n"

    def next_token(self, messages_list: Sequence[list[dict[str, str]]], top_k: int) -> list[JSONObject]:
        import torch

        prompts = [self._chat_prompt(m) for m in messages_list]
        self.tok.padding_side = "left"
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            # only the last position is needed: skip the vocabulary projection elsewhere
            logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}, logits_to_keep=1).logits[:, -1, :].float()
            logp = torch.log_softmax(logits, dim=-1).double().cpu()
        vals, idx = torch.topk(logp, k=top_k, dim=-1)
        out: list[JSONObject] = []
        for i in range(len(prompts)):
            toks = self.tok.convert_ids_to_tokens(idx[i].tolist())
            texts = [self.tok.convert_tokens_to_string([t]) for t in toks]
            out.append({"top": [[t, float(v)] for t, v in zip(texts, vals[i].tolist(), strict=True)]})
        return out

    def choice_logprobs(self, messages_list: Sequence[list[dict[str, str]]], token_ids: list[int]) -> list[list[float]]:
        """log p(next token = t) for each t in `token_ids`, after each chat prompt."""
        import torch

        prompts = [self._chat_prompt(m) for m in messages_list]
        self.tok.padding_side = "left"
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}, logits_to_keep=1).logits[:, -1, :]
            logp = torch.log_softmax(logits.double(), dim=-1)[:, token_ids].cpu()
        return [[float(x) for x in row] for row in logp.tolist()]

    def generate(self, reqs: Sequence[Request]) -> list[JSONObject]:
        import torch

        p = reqs[0].decoding()
        prompts = [self._chat_prompt(r.messages or []) for r in reqs]
        self.tok.padding_side = "left"
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        temperature = p.temperature or 0.0
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": p.max_tokens if p.max_tokens is not None else 128,
            "pad_token_id": self.tok.pad_token_id,
        }
        if temperature > 0:
            gen_kwargs.update(do_sample=True, temperature=temperature, top_p=p.top_p if p.top_p is not None else 1.0,
                              top_k=0)
            # One sampled request per call, seeded from its key, so a sample is the same
            # whatever batch it would have fallen in.
            torch.manual_seed(int(reqs[0].key[:12], 16) % (2**31))
        else:
            gen_kwargs.update(do_sample=False)
        from transformers import StoppingCriteriaList

        from biasaudit.backends.base import BatchWatch, RowsFinished

        # Checked after every generated token: the progress bar advances as each row ends
        # and shows the token step (a batch of long answers takes minutes), and an
        # interrupt stops the batch after this step instead of when every row has ended.
        ends = {t for t in (self.tok.eos_token_id, self.tok.pad_token_id) if t is not None}
        watch = BatchWatch(len(reqs), gen_kwargs["max_new_tokens"])
        gen_kwargs["stopping_criteria"] = StoppingCriteriaList([RowsFinished(ends, watch)])
        with torch.inference_mode():
            out = self.model.generate(**enc, **gen_kwargs)
        # Stopped by an interrupt: the rows are cut short, not finished answers. None is
        # stored; the batch is generated again when the run resumes.
        interrupt.check()
        new = out[:, enc["input_ids"].shape[1]:]
        results = []
        eos = self.tok.eos_token_id
        for row in new.tolist():
            n = len(row)
            finish = "length"
            for j, t in enumerate(row):
                if t == eos or t == self.tok.pad_token_id:
                    n, finish = j, "stop"
                    break
            text = self.tok.decode(row[:n], skip_special_tokens=True)
            results.append({"text": text, "finish_reason": finish, "output_tokens": n})
        return results

    # -- engine entry ------------------------------------------------------------
    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        with stoppable(self.model):  # Ctrl-C takes effect inside a forward pass too
            self._execute(requests, emit)

    def _execute(self, requests: Sequence[Request], emit: Emit) -> None:
        by_kind: dict[str, list[Request]] = {}
        for r in requests:
            by_kind.setdefault(r.kind, []).append(r)
        for kind, reqs in by_kind.items():
            if kind not in self.supports:
                for r in reqs:
                    emit(Response(key=r.key, status="failed", error=f"hf_causal cannot do {kind}"))
                continue
            # Sorted by token length (not characters: ~9% less padding on CrowS-Pairs at batch 8).
            lengths = self._token_lengths(kind, reqs)
            reqs = [reqs[i] for i in sorted(range(len(reqs)), key=lengths.__getitem__)]
            size = 1 if kind == "generate" and (reqs[0].decoding().temperature or 0) > 0 else self.batch_size
            groups: dict[str, list[Request]] = {}
            for r in reqs:
                groups.setdefault(repr(sorted(r.params.items())), []).append(r)
            for group in groups.values():
                if kind == "sequence_logprob" and self.batch_tokens:
                    run_batches(self._scoring_batches(group), functools.partial(self._answer, kind), emit)
                elif kind == "generate" and size > 1 and self.batch_tokens:
                    run_batches(self._generation_batches(group), functools.partial(self._answer, kind), emit)
                else:
                    run_in_batches(group, size, functools.partial(self._answer, kind), emit)

    def _token_lengths(self, kind: str, reqs: list[Request]) -> list[int]:
        if kind == "sequence_logprob":
            texts = [r.text or "" for r in reqs]
        else:
            texts = [self._chat_prompt(r.messages or []) for r in reqs]
        return [len(ids) for ids in self.tok(texts, add_special_tokens=False)["input_ids"]]

    def _scoring_batches(self, reqs: list[Request]) -> list[list[Request]]:
        """Token-budget batches by exact token length (BOS and, unless it is computed once
        per batch, the variant's system prompt included). On a CPU, large batches of short
        sentences run about twice as fast per sentence as batches of 8 (`make bench`)."""
        if self.packed:
            return self._packed_batches(reqs)
        extra = 1
        if self.cfg.system_prompt and not self.prefix_cache:
            extra += len(self.tok(self.cfg.system_prompt + "\n", add_special_tokens=False)["input_ids"])
        lengths = [extra + len(ids) for ids in self.tok([r.text or "" for r in reqs], add_special_tokens=False)["input_ids"]]
        return token_budget_batches(reqs, lengths, self.batch_tokens or 1)

    def _packed_batches(self, reqs: list[Request]) -> list[list[Request]]:
        ids = self.tok([r.text or "" for r in reqs], add_special_tokens=False)["input_ids"]
        return token_order_batches(reqs, ids, self.batch_tokens or 1)

    def _generation_batches(self, reqs: list[Request]) -> list[list[Request]]:
        """Greedy generation: token-budget batches over prompt + new tokens, at most
        `batch_size` rows (long prompts or long answers get smaller batches)."""
        new = reqs[0].decoding().max_tokens
        new = new if new is not None else 128
        prompts = [self._chat_prompt(r.messages or []) for r in reqs]
        lengths = [len(ids) + new for ids in self.tok(prompts, add_special_tokens=False)["input_ids"]]
        out: list[list[Request]] = []
        for b in token_budget_batches(reqs, lengths, self.batch_tokens or 1):
            out.extend(b[i:i + self.batch_size] for i in range(0, len(b), self.batch_size))
        return out

    def choices(self, batch: list[Request]) -> list[dict[str, Any]]:
        """Multiple choice by one next-token read: the log-prob of the first token of each
        answer word, renormalised over the answers (judges, parsers)."""
        import math

        words = batch[0].decoding().choices
        ids = [int(self.tok(w, add_special_tokens=False)["input_ids"][0]) for w in words]
        if len(set(ids)) != len(ids):
            raise ValueError(f"answer words {words} share a first token")
        out = []
        for lps in self.choice_logprobs([r.messages or [] for r in batch], ids):
            top = max(lps)
            z = sum(math.exp(x - top) for x in lps)
            probs: dict[str, float] = {w: math.exp(x - top) / z for w, x in zip(words, lps, strict=True)}
            best = max(words, key=lambda w: probs[w])
            out.append({"probs": probs, "logprobs": dict(zip(words, lps, strict=True)), "choice": best})
        return out

    def _answer(self, kind: str, batch: list[Request]) -> list[JSONObject]:
        if kind == "choice":
            return self.choices(batch)
        if kind == "sequence_logprob":
            return self._scored([r.text or "" for r in batch])
        if kind == "next_token":
            top_k = batch[0].decoding().top_k
            return self.next_token([r.messages or [] for r in batch], top_k if top_k is not None else 20)
        return self.generate(batch)

    def close(self) -> None:
        pass

