"""Server answers (issue 26, class 3): a model server that echoes the API key back in some
encoding (hex, upper case, reversed, base64 at any alignment, URL-encoded, JSON-escaped...)
in an answer, an error body or a header-like text gets it into no file of the run folder,
the cache (the SQLite file's bytes), stdout or stderr, in ANY of those encodings."""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from biasaudit._util import secrets
from tests.conftest import isolation, run_dirs
from tests.helpers import GENERATE_SPEC, expected_exit, write_spec
from tests.support.fault_server import FaultServer, Raw, http_response

KEY = "sk-echo/Zq9+Tr=4Lm_b16e1234abcdEF"
KEY_ENV = "BIASAUDIT_ECHO_KEY"


def _b64(key: str, offset: int, alphabet: str = "std") -> str:
    raw = b"\x07" * offset + key.encode()
    enc = base64.b64encode(raw) if alphabet == "std" else base64.urlsafe_b64encode(raw)
    return enc.decode()


ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda k: k,
    "hex": lambda k: k.encode().hex(),
    "HEX": lambda k: k.encode().hex().upper(),
    "upper": str.upper,
    "lower": str.lower,
    "reversed": lambda k: k[::-1],
    "reversed upper": lambda k: k[::-1].upper(),
    "url": lambda k: urllib.parse.quote(k, safe=""),
    "url plus": urllib.parse.quote_plus,
    "json": lambda k: json.dumps(k)[1:-1].replace("/", "\\/"),
    "json unicode escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "html references": lambda k: "".join(f"&#x{ord(c):x};" for c in k),
    "base64 offset 0": lambda k: _b64(k, 0),
    "base64 offset 1": lambda k: _b64(k, 1),
    "base64 offset 2": lambda k: _b64(k, 2),
    "base64url offset 1": lambda k: _b64(k, 1, "url"),
    "prefix of 10": lambda k: k[:10] + "...",
    "hex prefix": lambda k: k.encode().hex()[:20],
}


def leak_forms(key: str = KEY) -> list[str]:
    """What must appear nowhere, compared case-insensitively (so upper and lower case are
    covered): the key as is, reversed, hex, URL-encoded, JSON-escaped, each base64
    alignment's key-only core, its first 8 characters, and a piece of its middle (what is
    left when only a prefix is scrubbed)."""
    forms = [key, key[::-1], key.encode().hex(), urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key),
             json.dumps(key)[1:-1].replace("/", "\\/"), "".join(f"\\u{ord(c):04x}" for c in key), key[:8],
             key[::-1][:8], key.encode().hex()[:16], key[10:22], key[::-1][10:22]]
    for o in range(3):
        for alphabet in ("std", "url"):
            forms.append(_b64(key, o, alphabet)[4:-4])  # the characters that depend on the key alone
    return [f.lower() for f in forms]


def assert_nowhere(root: Path, *texts: str) -> None:
    forms = leak_forms()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes().decode("latin-1").lower()
            assert not [f for f in forms if f in data], (p, [f for f in forms if f in data])
    for t in texts:
        low = t.lower()
        assert not [f for f in forms if f in low], [f for f in forms if f in low]


@pytest.fixture(autouse=True)
def _fresh_secrets() -> None:
    secrets.forget_all()


# -- the scrubber itself, one encoding at a time ---------------------------------------------

@pytest.mark.parametrize("name", list(ENCODINGS))
def test_every_encoding_is_scrubbed(name: str) -> None:
    secrets.watch_value(KEY)
    echoed = ENCODINGS[name](KEY)
    text = f'{{"error": "bad key {echoed} in the request"}}'
    out = secrets.redact(text)
    assert "[REDACTED]" in out and out.startswith('{"error": "bad key ') and out.endswith(' in the request"}')
    low = out.lower()
    assert not [f for f in leak_forms() if f in low], out


def test_ordinary_text_and_hashes_are_left_alone() -> None:
    secrets.watch_value(KEY)
    import hashlib

    text = " ".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(200)) + " sk- ECHO Yes, because."
    assert secrets.redact(text) == text


def test_a_long_answer_is_scrubbed_in_linear_time() -> None:
    """A 1.25M-character answer with the key hex-encoded at its end: scrubbed, and the
    patterns do not backtrack (the whole check runs in well under the test's timeout)."""
    secrets.watch_value(KEY)
    text = "They genuinely are lazy. " * 50_000 + KEY.encode().hex().upper()
    out = secrets.redact(text)
    assert out.endswith("[REDACTED]") and len(out) == 50_000 * 25 + len("[REDACTED]")


def test_the_forms_a_key_is_looked_for_in() -> None:
    forms = secrets.derived_forms(KEY)
    assert KEY in forms and KEY[::-1] in forms and KEY.encode().hex() in forms and len(forms) >= 6


# -- end to end: a server that echoes the key ------------------------------------------------

def _chat(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                       "usage": {"completion_tokens": 3}}).encode()


def _key_of(headers: dict[str, str]) -> str:
    return headers.get("authorization", "").removeprefix("Bearer ")


def _subject(prompt: str) -> bool:
    """The subject's prompts (the judges' prompts get the server's normal answer)."""
    return prompt.startswith(("Q: Group", "Explain: Group"))


def in_answer(enc: Callable[[str], str]) -> Callable[[str, dict[str, str]], Raw | None]:
    return lambda p, h: Raw(http_response(200, _chat(f"Yes. Your key is {enc(_key_of(h))}, they are."))) \
        if _subject(p) else None


def in_error(enc: Callable[[str], str]) -> Callable[[str, dict[str, str]], Raw | None]:
    body = lambda h: json.dumps({"error": {"message": f"Incorrect API key provided: {enc(_key_of(h))}"}}).encode()  # noqa: E731
    return lambda p, h: Raw(http_response(401, body(h))) if _subject(p) else None


def in_header_text(enc: Callable[[str], str]) -> Callable[[str, dict[str, str]], Raw | None]:
    """An answer that quotes the request's headers back, as a debugging proxy would."""
    return lambda p, h: Raw(http_response(200, _chat(
        f"Request headers:\nAuthorization: Bearer {enc(_key_of(h))}\nX-Key: {enc(_key_of(h))}"))) \
        if _subject(p) else None


SERVER_CASES: dict[str, Callable[[str, dict[str, str]], Raw | None]] = {
    **{f"answer {n}": in_answer(ENCODINGS[n]) for n in (
        "plain", "hex", "HEX", "upper", "reversed", "url", "json", "base64 offset 0", "base64 offset 1",
        "base64 offset 2")},
    **{f"error {n}": in_error(ENCODINGS[n]) for n in ("plain", "hex", "lower", "reversed", "base64 offset 2")},
    **{f"header text {n}": in_header_text(ENCODINGS[n]) for n in ("HEX", "reversed upper", "json unicode escapes")},
}


@pytest.mark.parametrize("name", list(SERVER_CASES))
def test_echoed_key_lands_nowhere(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, KEY)
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    with FaultServer(responder=SERVER_CASES[name]) as server:
        code, out, err = cli("-v", "run", f"spec={spec}", "model=openai_compat", f"model.base_url={server.url}",
                             f"model.api_key_env={KEY_ENV}", "model.max_retries=0", "model.timeout=10",
                             *isolation(workdir))
        assert server.seen and all(s["auth"] == f"Bearer {KEY}" for s in server.seen)  # the key was sent
    assert code == expected_exit(workdir) and "Traceback" not in err, err
    [run] = run_dirs(workdir)
    ex = json.loads((run / "summary.json").read_text())["execution"]
    assert ex["requests"] == 4 and ex["failures"] == (4 if name.startswith("error") else 0), ex
    assert (workdir / "cache.sqlite").is_file() and (run / "responses.jsonl").is_file()
    trail = (run / "responses.jsonl").read_text()
    assert "[REDACTED]" in trail or "<secret>" in trail  # the echo was there, and was scrubbed
    assert_nowhere(workdir, out, err)


def test_error_lines_and_tracebacks_are_scrubbed(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI's one-line errors and an internal error's traceback carry a server's text:
    both are scrubbed before they are printed."""
    from biasaudit.cli.common import fail, print_traceback
    from biasaudit.errors import BackendError

    secrets.watch_value(KEY)
    fail(BackendError(f"the server said: bad key {KEY.encode().hex().upper()}", key="model"))
    try:
        raise RuntimeError(f"unexpected answer {KEY[::-1]}")
    except RuntimeError as exc:
        print_traceback(exc)
    out, err = capsys.readouterr()
    assert err.count("[REDACTED]") == 2 and "RuntimeError" in err
    assert not [f for f in leak_forms() if f in (out + err).lower()]


def test_case_count() -> None:
    assert len(ENCODINGS) + len(SERVER_CASES) + 4 >= 30
