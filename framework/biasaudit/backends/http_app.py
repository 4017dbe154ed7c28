"""`http_app`: a deployed application behind its own HTTP endpoint (a hiring screener, a
support bot), audited as it is deployed.

Each `generate` request becomes the HTTP request the model config's template describes
(`model.request`: method, URL, headers, a JSON or form body), rendered in the spec
sandbox (`spec.templates.render`: no Python internals, no file or environment access,
bounded size, steps and time) over the probe's rendered prompt and the request's
stimulus (its fields, id and the cell's levels: `Request.stimulus`, which the plan
attaches because this backend's identity says `sends_stimulus`). The answer is the
string a JMESPath expression (`model.answer`, the `jmespath` library) selects from the
JSON object the application returns.

Transport is openai_compat's, reused rather than copied (this class is an
`OpenAICompatBackend` whose request body and answer parsing are the application's): the
same adaptive concurrency, per-host rate limit, `Retry-After`, retries of transient
faults, whole-attempt timeout, bounded and decompression-safe body reads, redirects
never followed, and every failure stored with its kind. The key (`api_key_env`) is read
as `api_key` in header templates only and scrubbed from everything written.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import jmespath

from biasaudit.backends.base import BACKENDS, BackendKind
from biasaudit.backends.openai_compat import OpenAICompatBackend, RequestFailed
from biasaudit.backends.openai_parse import OutputFault
from biasaudit.errors import SpecError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from biasaudit.spec.app_request import SESSION_VARS, templates_of
from biasaudit.spec.model_configs import HTTPAppConfig
from biasaudit.spec.templates import render, variables


def _transport(app: HTTPAppConfig) -> OpenAICompatConfig:
    """The application's transport settings in the form openai_compat's client reads them:
    its origin as the base URL (the host every request must go to)."""
    parts = urlsplit(app.request.url)
    return OpenAICompatConfig(
        backend="openai_compat", name=app.name, base_url=f"{parts.scheme}://{parts.netloc}",
        api_key_env=app.api_key_env, timeout=app.timeout, max_retries=app.max_retries,
        concurrency=app.concurrency, min_concurrency=app.min_concurrency, requests_per_s=app.requests_per_s,
        backoff_s=app.backoff_s, max_backoff_s=app.max_backoff_s)


class HTTPAppBackend(OpenAICompatBackend):
    supports = frozenset({"generate"})
    _redirect_note = "requests and the key go to the host of model.request.url only"

    def __init__(self, app: HTTPAppConfig, runtime: RuntimeConfig, **kwargs: Any) -> None:
        # `server` set: no GET /models probe, which an application does not answer
        super().__init__(_transport(app), runtime, server="application", **kwargs)
        self.app = app
        parts = urlsplit(app.request.url)
        self._origin = (parts.scheme, parts.netloc)
        self._answer_expr = jmespath.compile(app.answer)
        self._reads_stimulus = any(variables(t, file=None, key=k) & SESSION_VARS
                                   for k, t, _ in templates_of(app.request, app.session_headers))

    def __repr__(self) -> str:
        return f"HTTPAppBackend(url={self.app.request.url!r})"

    def _default_headers(self) -> dict[str, str]:
        # no Authorization header: the key goes only where the header templates put it
        return {"Accept-Encoding": "gzip, deflate"}

    # -- the application's request and answer, in openai_compat's request cycle ---------
    def _context(self, req: Request) -> dict[str, Any]:
        msgs = req.messages or []
        stim = req.stimulus or {}
        return {
            "prompt": next((m["content"] for m in reversed(msgs) if m.get("role") == "user"), req.text or ""),
            "system": " ".join(m["content"] for m in msgs if m.get("role") == "system"),
            "messages": [dict(m) for m in msgs],
            "stimulus": stim.get("fields") or {},
            "stimulus_id": stim.get("id") or "",
            "levels": stim.get("levels") or {},
        }

    def _render(self, source: str, ctx: dict[str, Any], key: str) -> str:
        try:
            return render(source, ctx, file=None, key=f"model.{key}")
        except SpecError as exc:
            raise RequestFailed("template", f"model.{key}: {exc.message}", 0) from None

    def _fill(self, node: Any, ctx: dict[str, Any], path: str) -> Any:
        if isinstance(node, str):
            return self._render(node, ctx, f"request.body{path}")
        if isinstance(node, dict):
            return {k: self._fill(v, ctx, f"{path}.{k}") for k, v in node.items()}
        if isinstance(node, list):
            return [self._fill(v, ctx, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    def _body(self, req: Request) -> tuple[str, dict[str, Any], int]:
        if req.kind != "generate":
            raise RequestFailed("unsupported", f"http_app cannot do {req.kind}", 0)
        if req.stimulus is None and self._reads_stimulus:
            raise RequestFailed("template", "the request carries no stimulus for the template to read (an "
                                "application answers a spec's own requests, not coding calls)", 0)
        rq = self.app.request
        ctx = self._context(req)
        url = self._render(rq.url, ctx, "request.url")
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != self._origin:  # the path template cannot move the host
            raise RequestFailed("template", f"model.request.url rendered to another host ({parts.netloc[:60]!r})", 0)
        headers = {k: self._render(v, ctx, f"request.session_headers.{k}")
                   for k, v in self.app.session_headers.items()}
        keyed = {**ctx, "api_key": self._key.reveal() if self._key is not None else ""}
        headers |= {k: self._render(v, keyed, f"request.headers.{k}") for k, v in rq.headers.items()}
        for k, v in headers.items():
            if any(c in v for c in "\r\n\x00"):  # a stimulus field must not add a header of its own
                raise RequestFailed("template", f"header {k} rendered with a line break", 0)
        send: dict[str, Any] = {"headers": headers}
        if rq.body is not None:
            send["json"] = self._fill(rq.body, ctx, "")
        elif rq.form is not None:
            send["data"] = {k: self._render(v, ctx, f"request.form.{k}") for k, v in rq.form.items()}
        return url, {"method": rq.method, "send": send}, 0

    async def _attempt(self, client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._send(client, body["method"], path, **body["send"])

    def _parse(self, req: Request, data: dict[str, Any]) -> JSONObject:
        found = self._answer_expr.search(data)
        if not isinstance(found, str):
            what = "nothing" if found is None else f"a {type(found).__name__} ({json.dumps(found)[:60]})"
            raise OutputFault("malformed", f"model.answer {self.app.answer!r} selected {what}, not a string")
        if not found.strip():
            raise OutputFault("empty", f"model.answer {self.app.answer!r} selected an empty string")
        return {"text": found, "finish_reason": "application", "output_tokens": len(found.split())}


def identity(cfg: HTTPAppConfig) -> JSONObject:
    """What decides an answer: the request template and the answer expression (templates,
    never a key's value), and the stimulus each request carries (`sends_stimulus`)."""
    ident: JSONObject = {"backend": "http_app", "sends_stimulus": True,
                         "request": cfg.request.model_dump(mode="json"), "answer": cfg.answer}
    if cfg.session_headers:
        ident["session_headers"] = dict(cfg.session_headers)
    return ident


BACKENDS.add(
    "http_app",
    BackendKind(config=HTTPAppConfig, supports=HTTPAppBackend.supports, identity=identity,
                build=lambda cfg, rt: HTTPAppBackend(cfg, rt), local=False),
)
