"""The viewer page: one self-contained HTML file (data, script and style inline).

Why a file and not a local server: nothing to bind, no port, no process left running,
and the file travels in an evidence pack and opens on any machine, offline.

How untrusted text is kept inert (model answers, stimuli, spec text):

* the data is JSON inside `<script type="application/json">`, which the browser never
  runs; every `<`, `>` and `&` in it is written as a `\\u` escape and the JSON is ASCII
  (`ensure_ascii`: U+2028/U+2029, NUL and other controls escaped too), so no text can
  close the element (`</script>`), open a comment (`<!--`) or end a JavaScript line;
* the script builds the page with DOM calls and `textContent` only (never `innerHTML`);
* a Content-Security-Policy allows nothing by default and only the page's own script and
  style by their sha256: an injected element could neither run nor load anything, and
  the page makes no request beyond itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from importlib.resources import files
from typing import Any

from biasaudit.report.viewer.model import ViewData

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def embed_json(obj: Any) -> str:
    """JSON safe inside a `<script type="application/json">` element (see the module text)."""
    text = json.dumps(_finite(obj), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    for ch, esc in _ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def _finite(obj: Any) -> Any:
    """NaN and infinities are not JSON: None (`json.dumps` would write NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def _asset(name: str) -> str:
    return files("biasaudit.report.viewer").joinpath(name).read_text(encoding="utf-8")


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def csp(script: str, style: str) -> str:
    return (f"default-src 'none'; script-src {_sha(script)}; style-src {_sha(style)}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


SCRIPTS = ("dom.js", "review.js", "viewer.js")
"""One inline script, so one hash in the CSP: dom.js holds the DOM helpers every page
shares, review.js defines what viewer.js calls to label, flag and comment on responses
and download the review sheet."""
STYLES = ("viewer.css", "review.css")


def html_page(*, title: str, scripts: tuple[str, ...], styles: tuple[str, ...], payload: str, noscript: str) -> str:
    """The one shape of every biasaudit page: the named assets inline (one script, one
    style, so one hash each in the CSP), the data in a non-executable element."""
    script = "\n".join(_asset(n) for n in scripts)
    style = "\n".join(_asset(n) for n in styles)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp(script, style)}\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        "<meta name=\"generator\" content=\"biasaudit\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{title}</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n"
        f"<noscript>{noscript}</noscript>\n"
        "<main id=\"app\"></main>\n"
        f"<script type=\"application/json\" id=\"viewer-data\">{payload}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def render_page(data: ViewData) -> str:
    return html_page(title="biasaudit viewer", scripts=SCRIPTS, styles=STYLES,
                     payload=embed_json(data.model_dump(mode="json")),
                     noscript="The viewer needs JavaScript; report.html, items.csv and responses.jsonl hold the same "
                              "content without it.")


__all__ = ["SCRIPTS", "STYLES", "csp", "embed_json", "html_page", "render_page"]
