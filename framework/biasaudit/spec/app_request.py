"""Checks of an application's request template (`model.request`, backend `http_app`),
made when the model config is validated, so a bad template stops `validate` and `run`
in one line before anything is sent:

- the URL's scheme is http or https and its host is literal: a template fills the path
  and query only, so every request (and the key) goes to the one host the config names;
- each template reads only what a request has (`prompt`, `system`, `messages`,
  `stimulus`, `stimulus_id`, `levels`), `api_key` only in headers (a key in a URL or
  body would reach the application's logs), and session headers only the stimulus;
- a trial render over stand-in values: what the sandbox refuses (`''.__class__`, a
  string past the size bound) is refused here, not once per request.

Rendering itself is `spec.templates.render`, the sandbox every spec template uses.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from biasaudit.errors import SpecError
from biasaudit.spec.templates import sandbox_refusal, variables

if TYPE_CHECKING:
    from biasaudit.spec.model_configs import AppRequest

REQUEST_VARS = frozenset({"prompt", "system", "messages", "stimulus", "stimulus_id", "levels"})
"""What a request template may read."""
SESSION_VARS = frozenset({"stimulus", "stimulus_id", "levels"})
"""What a session header may read: the stimulus alone, so it names one session per stimulus."""


_LOADS = re.compile(r"{%[-+]?\s*(include|import|from|extends)\b")


class _AnyField(dict[str, Any]):
    """Stand-in stimulus fields for the trial render: every field exists."""

    def __missing__(self, key: str) -> str:
        return "x"


def _stand_in() -> dict[str, Any]:
    return {"prompt": "x", "system": "x", "messages": [{"role": "user", "content": "x"}],
            "stimulus": _AnyField(), "stimulus_id": "x", "levels": _AnyField(), "api_key": "x"}


def templates_of(request: AppRequest, session_headers: dict[str, str]) -> list[tuple[str, str, frozenset[str]]]:
    """(key path, template, the variables it may read) for every template of the request."""
    out = [("request.url", request.url, REQUEST_VARS)]
    out += [(f"request.headers.{k}", v, REQUEST_VARS | {"api_key"}) for k, v in request.headers.items()]
    out += [(f"session_headers.{k}", v, SESSION_VARS) for k, v in session_headers.items()]
    out += [(f"request.form.{k}", v, REQUEST_VARS) for k, v in (request.form or {}).items()]
    out += [(f"request.body{p}", v, REQUEST_VARS) for p, v in string_leaves(request.body, "")]
    return out


def string_leaves(node: Any, path: str) -> list[tuple[str, str]]:
    """(path, string) of every string in a JSON body (keys are not templates)."""
    if isinstance(node, str):
        return [(path, node)]
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in string_leaves(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in string_leaves(v, f"{path}[{i}]")]
    return []


def check_app_request(request: AppRequest, session_headers: dict[str, str], api_key_env: str | None) -> None:
    """Raise ValueError (Pydantic reports it at `model`) for the first problem found."""
    parts = urlsplit(request.url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"request.url must be an http:// or https:// URL with a host, got {request.url[:80]!r}")
    if any(c in parts.scheme + parts.netloc for c in "{}%"):
        raise ValueError("request.url: the scheme and host must be literal (a template may fill the path and "
                         "query only), so requests go to the host the config names")
    for where, source, allowed in templates_of(request, session_headers):
        try:
            read = variables(source, file=None, key=where)
        except SpecError as exc:
            raise ValueError(f"{where}: {exc.message}") from None
        extra = sorted(read - allowed)
        if extra:
            why = ("the key goes in request.headers only" if extra[0] == "api_key" else
                   f"it may read {', '.join(sorted(allowed))}")
            raise ValueError(f"{where}: the template reads {extra[0]!r}: {why}")
        if "api_key" in read and api_key_env is None:
            raise ValueError(f"{where}: the template reads 'api_key' but no `api_key_env` names its variable")
        if _LOADS.search(source):
            raise ValueError(f"{where}: the template loads another ({{% include %}}, import, extends): "
                             "there is no template loader, and no file is read")
        refused = sandbox_refusal(source, _stand_in())
        if refused is not None:
            raise ValueError(f"{where}: the template sandbox refuses it: {refused}")
    for name in [*request.headers, *session_headers]:
        if not name or any(c in name for c in ":\r\n ") or not name.isascii():
            raise ValueError(f"header name {name[:40]!r} is not a valid HTTP header name")


__all__ = ["REQUEST_VARS", "SESSION_VARS", "check_app_request", "string_leaves", "templates_of"]
