"""`scripted`: a deterministic test double for fast unit tests. Never a default.

Script options (model.script): `scores` (text -> total log-prob), `replies` (substring ->
reply), `choices` (substring -> chosen answer word for `choice` requests), `fail_every` (every n-th call fails;
1: every call, a run that cannot measure), `die_after` (SIGKILL this process on the
call after n calls, to test crash safety; once a backend with it is built, it holds for
every scripted backend of the process and counts their calls together, so the kill can
land in judge calls made after the subject's; with `die_shard: i` it counts this
backend's calls and kills only inside shard i's task of a sharded run, with
`die_marker: <file>` only while that file does not exist, creating it first, so the same
command run again goes through), `delay` (seconds per call), `token_delay`
(seconds per generated token: `generate` requests then run in batches of
`runtime.batch_size` rows, one token step for all rows at a time, a row ending after as
many steps as its reply has words, like a local model's batched generation: progress per
token step, and an interrupt drops the batch in progress), `token_steps` (with
`token_delay`: every row takes this many steps, at most its `max_tokens`, instead of its
reply's word count: long answers), `calls_log` (append one line per answered call to this
file), `usage` (the tokens each answer reports, as a provider's `usage`: `{input_tokens: N,
output_tokens: M}` for every answer, or `words`: the prompt's and the reply's word counts).

Without `delay`, `die_after` or `calls_log`, calls are answered `runtime.batch_size` at a
time and each batch is handed over whole (one store write), as a local model's batch is;
with any of them, one call at a time, each answer handed over before the next call.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasaudit._util import interrupt
from biasaudit._util.fileio import atomic_write, open_append
from biasaudit.backends.base import BACKENDS, BackendKind, BatchWatch, Emit, Response, together
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject, JSONValue
from biasaudit.spec import RuntimeConfig, ScriptedConfig


def _token_logprob(token: str) -> float:
    h = int(hashlib.sha256(token.encode()).hexdigest()[:8], 16)
    return -0.25 - (h % 1000) / 200.0


# Calls answered by every scripted backend of this process, and the `die_after` limit.
_process_calls = 0
_die_after: int | None = None


class ScriptedBackend:
    supports = frozenset({"generate", "sequence_logprob", "next_token", "choice"})

    def __init__(self, script: dict[str, Any], batch_size: int = 8) -> None:
        global _die_after
        self.script = script
        self.batch_size = max(1, batch_size)
        self.calls = 0
        # with `die_shard`, the limit is this backend's alone: a Ray worker runs later
        # shards and runs with the same process
        self.die_after = int(script["die_after"]) if script.get("die_after") is not None else None
        if self.die_after is not None and script.get("die_shard") is None:
            _die_after = self.die_after

    def _answer(self, req: Request) -> Response:
        s = self.script
        if req.kind == "sequence_logprob":
            text = req.text or ""
            words = text.split()
            offsets: list[JSONValue] = []
            pos = 0
            for w in words:
                start = text.index(w, pos)
                offsets.append([start, start + len(w)])
                pos = start + len(w)
            lps = [_token_logprob(w) for w in words]
            if text in s.get("scores", {}) and words:
                target = float(s["scores"][text])
                lps = [target / len(words)] * len(words)
            return Response(
                key=req.key, status="ok",
                output={
                    "tokens": ["<s>", *words], "token_ids": [0, *range(1, len(words) + 1)],
                    "logprobs": [None, *lps], "offsets": [[0, 0], *offsets],
                },
            )
        prompt = (req.messages or [{"content": ""}])[-1]["content"]
        if req.kind == "choice":
            words = req.decoding().choices
            pick = words[0]
            for sub, w in s.get("choices", {}).items():
                if sub in prompt and w in words:  # only an offered answer can be chosen
                    pick = w
                    break
            probs = {w: (0.7 if w == pick else 0.3 / max(1, len(words) - 1)) for w in words}
            return Response(key=req.key, status="ok", output={"probs": {**probs}, "choice": pick})
        if req.kind == "next_token":
            return Response(
                key=req.key, status="ok",
                output={"top": [["Yes", -0.5], ["No", -1.2], ["Maybe", -2.5]]},
            )
        reply = self._reply(req)
        return Response(
            key=req.key, status="ok",
            output={"text": reply, "finish_reason": "stop", "output_tokens": len(reply.split())},
        )

    def _reply(self, req: Request) -> str:
        prompt = (req.messages or [{"content": ""}])[-1]["content"]
        for sub, rep in self.script.get("replies", {}).items():
            if sub in prompt:
                return str(rep)
        return "I cannot say."

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        delay = float(self.script.get("token_delay") or 0)
        if not delay:
            self._answer_each(requests, emit)
            return
        gens = [r for r in requests if r.kind == "generate"]
        self._answer_each([r for r in requests if r.kind != "generate"], emit)
        for i in range(0, len(gens), self.batch_size):
            batch = gens[i:i + self.batch_size]
            self._generate_slowly(batch, delay)
            self._answer_each(batch, emit)

    def _generate_slowly(self, batch: list[Request], delay: float) -> None:
        """Spend `delay` seconds per token step on `batch`, as batched generation does:
        rows end at their own length, the batch when its longest row has; an interrupt
        stops it after the current step and nothing of it is emitted."""
        interrupt.check()
        limits = [r.decoding().max_tokens or 128 for r in batch]
        steps = self.script.get("token_steps")
        lengths = [max(1, min(int(steps) if steps else len(self._reply(r).split()), lim))
                   for r, lim in zip(batch, limits, strict=True)]
        watch = BatchWatch(len(batch), max(limits))
        for step in range(1, max(lengths) + 1):
            time.sleep(delay)
            if watch.step(sum(1 for n in lengths if n == step)):
                break
        interrupt.check()

    def _answer_each(self, requests: Sequence[Request], emit: Emit) -> None:
        s = self.script
        if s.get("delay") or s.get("calls_log") or self.die_after is not None or _die_after is not None:
            # a kill, a delay or a log of calls is counted per call: each answer is handed
            # over (and committed) before the next call starts, so a test that kills the
            # run after the n-th stored answer finds exactly n calls made
            for req in requests:
                if self._dies():
                    os.kill(os.getpid(), signal.SIGKILL)
                if s.get("delay"):
                    time.sleep(float(s["delay"]))
                self._emit_all([self._one(req)], requests=[req], emit=emit)
            return
        # Otherwise answered `batch_size` at a time, as a local model's batch: the batch's
        # answers are all in hand when they are handed over, in one write (`together`).
        # Issue 42: one commit a request was most of an instant run's model-call stage.
        # (read batch by batch: the engine's pending requests are built from the plan's
        # table as they are read, and a list of them all would hold every prompt)
        it = iter(requests)
        while batch := list(itertools.islice(it, self.batch_size)):
            self._emit_all([self._one(r) for r in batch], requests=batch, emit=emit)

    def _one(self, req: Request) -> Response:
        """One call answered (or failed, with `fail_every`), counted."""
        global _process_calls
        s = self.script
        self.calls += 1
        _process_calls += 1
        every = s.get("fail_every")
        if every and self.calls % int(every) == 0:
            return Response(key=req.key, status="failed", error="scripted failure")
        resp = self._answer(req)
        if s.get("usage") is not None and resp.output is not None:
            resp = resp.model_copy(update={"output": {**resp.output, "usage": self._usage(req, resp)}})
        return resp

    def _emit_all(self, resps: list[Response], requests: Sequence[Request], emit: Emit) -> None:
        """Hand over answers already made, as one group; a Ctrl-C raised while one is
        handed over lets the rest of the group be handed over first (nothing answered is
        dropped), then stops."""
        stopped: KeyboardInterrupt | None = None
        with together():
            for req, resp in zip(requests, resps, strict=True):
                if self.script.get("calls_log"):
                    with open_append(self.script["calls_log"], key="model.script.calls_log", what="calls log") as f:
                        f.write(req.key + "\n")
                try:
                    emit(resp)
                except KeyboardInterrupt as exc:
                    stopped = exc
        if stopped is not None:
            raise stopped

    def _dies(self) -> bool:
        """Whether `die_after` kills this process before its next call."""
        s = self.script
        if s.get("die_shard") is not None:
            # the shard task sets the variable (runner/shards.py); counted per shard's backend
            if (self.die_after is None or os.environ.get("BIASAUDIT_SHARD") != str(s["die_shard"])
                    or self.calls < self.die_after):
                return False
        elif _die_after is None or _process_calls < _die_after:
            return False
        if s.get("die_marker"):
            marker = str(s["die_marker"])
            if os.path.exists(marker):
                return False
            atomic_write(Path(marker), "killed\n", key="model.script.die_marker", what="kill marker")
        return True

    def _usage(self, req: Request, resp: Response) -> JSONObject:
        """The usage this answer reports (`script.usage`)."""
        u = self.script["usage"]
        if u == "words":
            prompt = " ".join(m["content"] for m in req.messages or []) or (req.text or "")
            text = (resp.output or {}).get("text")
            return {"input_tokens": len(prompt.split()),
                    "output_tokens": len(text.split()) if isinstance(text, str) else 0}
        return {"input_tokens": int(u["input_tokens"]), "output_tokens": int(u["output_tokens"])}

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        pass


def _identity(cfg: ScriptedConfig) -> JSONObject:
    return {"backend": "scripted", "name": cfg.name, "script": {k: v for k, v in cfg.script.items() if k in ("scores", "replies", "choices")}}


def _build(cfg: ScriptedConfig, runtime: RuntimeConfig) -> ScriptedBackend:
    return ScriptedBackend(dict(cfg.script), runtime.batch_size)


BACKENDS.add(
    "scripted",
    BackendKind(config=ScriptedConfig, supports=ScriptedBackend.supports, identity=_identity, build=_build, local=True,
                # stands in for a billed model in the tests of budgets (not billed: no cost shown)
                stated_price=lambda cfg: cfg.price),
)
