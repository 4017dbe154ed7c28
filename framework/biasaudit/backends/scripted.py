"""`scripted`: a deterministic test double for fast unit tests. Never a default.

Script options (model.script): `scores` (text -> total log-prob), `replies` (substring ->
reply), `choices` (substring -> chosen answer word for `choice` requests), `fail_every` (every n-th call fails;
1: every call, a run that cannot measure), `die_after` (SIGKILL this process on the
call after n calls, to test crash safety; once a backend with it is built, it holds for
every scripted backend of the process and counts their calls together, so the kill can
land in judge calls made after the subject's), `delay` (seconds per call), `calls_log`
(append one line per answered call to this file).
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from biasaudit._util.fileio import open_append
from biasaudit.backends.base import BACKENDS, BackendKind, Emit, Response
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

    def __init__(self, script: dict[str, Any]) -> None:
        global _die_after
        self.script = script
        self.calls = 0
        if script.get("die_after") is not None:
            _die_after = int(script["die_after"])

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
        reply = "I cannot say."
        for sub, rep in s.get("replies", {}).items():
            if sub in prompt:
                reply = rep
                break
        return Response(
            key=req.key, status="ok",
            output={"text": reply, "finish_reason": "stop", "output_tokens": len(reply.split())},
        )

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        global _process_calls
        s = self.script
        for req in requests:
            if _die_after is not None and _process_calls >= _die_after:
                os.kill(os.getpid(), signal.SIGKILL)
            if s.get("delay"):
                time.sleep(float(s["delay"]))
            self.calls += 1
            _process_calls += 1
            every = s.get("fail_every")
            if every and self.calls % int(every) == 0:
                resp = Response(key=req.key, status="failed", error="scripted failure")
            else:
                resp = self._answer(req)
            if s.get("calls_log"):
                with open_append(s["calls_log"], key="model.script.calls_log", what="calls log") as f:
                    f.write(req.key + "\n")
            emit(resp)

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        pass


def _identity(cfg: ScriptedConfig) -> JSONObject:
    return {"backend": "scripted", "name": cfg.name, "script": {k: v for k, v in cfg.script.items() if k in ("scores", "replies", "choices")}}


def _build(cfg: ScriptedConfig, runtime: RuntimeConfig) -> ScriptedBackend:
    return ScriptedBackend(dict(cfg.script))


BACKENDS.add(
    "scripted",
    BackendKind(config=ScriptedConfig, supports=ScriptedBackend.supports, identity=_identity, build=_build, local=True),
)
