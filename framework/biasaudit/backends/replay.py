"""`replay`: answers from a recorded `responses.jsonl` (a previous run's audit trail),
matched by request content, so recorded model outputs are re-scored without querying
any model. A `.json` file is read by the first registered recorded-response format that
recognises it (method packages register published formats, e.g. FiSCo's raw.json),
matched by the user prompt. A request with no recording fails with a clear reason
(counted)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import excerpt, path_problem, read_capped
from biasaudit._util.trail import json_records
from biasaudit.backends.base import BACKENDS, BackendKind, Emit, Response
from biasaudit.backends.identity import sha256_file
from biasaudit.errors import BackendError, DataError
from biasaudit.plan import Request, canonical_json
from biasaudit.records.json import JSONObject
from biasaudit.registry import RECORDINGS
from biasaudit.spec import ReplayConfig, RuntimeConfig, RuntimeLimits

_PLACEHOLDER = re.compile(r"\[[A-Za-z_]+\]")


def content_key(kind: str, text: str | None, messages: Any, params: JSONObject, sample: int,
                text_pair: str | None = None) -> str:
    return canonical_json([kind, text, messages, params, sample, text_pair])


class ReplayBackend:
    supports = frozenset({"generate", "sequence_logprob", "next_token", "classify_nli", "embed"})

    def __init__(self, cfg: ReplayConfig, max_bytes: int = RuntimeLimits().max_data_bytes) -> None:
        path = recorded_file(cfg)
        self.recorded: dict[str, JSONObject] = {}
        self.by_prompt: dict[str, list[str]] = {}
        raw = read_capped(path, max_bytes, key="model.responses", what="recorded responses file", error=BackendError,
                          hint="point model.responses at a run's responses.jsonl (or raise "
                               "runtime.limits.max_data_bytes)")
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise BackendError(f"not UTF-8 text (invalid byte at offset {exc.start})", file=str(path),
                               key="model.responses", hint="point model.responses at a run's responses.jsonl") from None
        if path.suffix == ".json":
            self._load_recorded_json(text, path)
            return
        hint = "a run's responses.jsonl: one JSON object per line"
        for i, row in json_records(text, file=str(path), error=BackendError, key="model.responses", hint=hint,
                                   objects=False, kind="responses"):
            try:
                if not isinstance(row, dict):
                    raise TypeError
                if row.get("status") != "ok":
                    continue
                req = row["request"]
                ck = content_key(req["kind"], req.get("text"), req.get("messages"), req.get("params", {}),
                                 req.get("sample", 0), req.get("text_pair"))
                self.recorded[ck] = row["output"]
            except (KeyError, TypeError, AttributeError):
                raise BackendError(f"line {i} is not a recorded response (request and output)", file=str(path),
                                   key="model.responses", hint="a run's responses.jsonl, unchanged") from None

    def _load_recorded_json(self, text: str, path: Path) -> None:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise BackendError("recorded responses file is not valid JSON", file=str(path), key="model.responses") from None
        for _name, fmt in RECORDINGS.items():
            if fmt.matches(path, data):
                try:
                    self.by_prompt = fmt.prompts(data)
                except DataError as exc:  # the format's own refusal: named, with the file it is in
                    raise DataError(exc.message, file=str(path), key=exc.key, hint=exc.hint) from None
                except (KeyError, TypeError, AttributeError, ValueError) as exc:
                    raise BackendError(f"recorded responses file is malformed: {excerpt(str(exc))}", file=str(path),
                                       key="model.responses") from None
                return
        raise BackendError("recorded responses file is in no known format", file=str(path), key="model.responses",
                           hint=f"a run's responses.jsonl, or one of: {', '.join(RECORDINGS.names()) or '(none)'}")

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        for r in requests:
            ck = content_key(r.kind, r.text, r.messages, r.params, r.sample, r.text_pair)
            user = (r.messages or [{"content": ""}])[-1]["content"] if r.messages else None
            if r.kind == "generate" and user in self.by_prompt and self.by_prompt[user]:
                outs = self.by_prompt[user]
                text_out = outs[r.sample % len(outs)]
                emit(Response(key=r.key, status="ok", output={"text": text_out, "finish_reason": "recorded",
                                                              "output_tokens": len(text_out.split()), "replayed": True}))
            elif ck in self.recorded:
                emit(Response(key=r.key, status="ok", output=self.recorded[ck]))
            else:
                emit(Response(key=r.key, status="failed", error=self._missing(user)))

    def _missing(self, user: str | None) -> str:
        """Why a request has no recording; a prompt that still holds a placeholder the
        recorded prompts fill (FiSCo's `[age]`) says so."""
        left = _PLACEHOLDER.search(user or "") if self.by_prompt else None
        if left is not None:
            return (f"no recorded response for this request: its prompt still holds {left.group(0)}, which the "
                    "recorded prompts fill per answer (render it from the level's vars)")
        return "no recorded response for this request"

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        pass


def recorded_file(cfg: ReplayConfig) -> Path:
    """`model.responses`, checked as an untrusted input file (a regular file; nothing
    under /proc, /sys or /dev) before it is hashed or read."""
    path = Path(cfg.responses or "").expanduser()
    problem = path_problem(path) if cfg.responses else "not set"
    if problem:
        raise BackendError(f"recorded responses file: {problem}", file=cfg.responses, key="model.responses",
                           hint="point model.responses at a run's responses.jsonl")
    return path


def _identity(cfg: ReplayConfig) -> JSONObject:
    return {"backend": "replay", "sha256": sha256_file(recorded_file(cfg))}


BACKENDS.add(
    "replay",
    BackendKind(config=ReplayConfig, supports=ReplayBackend.supports, identity=_identity,
                build=lambda cfg, rt: ReplayBackend(cfg, rt.limits.max_data_bytes), local=True),
)
