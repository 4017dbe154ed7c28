"""Secrets (issue 11): an API key planted in the environment variable named by an
`openai_compat` model config is sent to the server, and appears nowhere else: not in
the store (raw bytes, WAL included), the run folder (reports, manifest, summary, trail,
Hydra's files and log), stdout/stderr, log records or exception texts.

A server that echoes the key (tests/unit/hostile/server_answers/test_server_answers.py) and
a key given on the command line (tests/unit/hostile/overrides/test_overrides.py) are in the
hostile catalogue."""

from __future__ import annotations

import json
import logging
import secrets
from pathlib import Path

import pytest

from biasaudit.errors import BiasAuditError
from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs
from tests.helpers import GENERATE_SPEC as SPEC
from tests.helpers import write_spec
from tests.unit.hostile._cases import SECRETS_KEY_ENV as KEY_ENV
from tests.unit.hostile._cases import files_containing, model_args, run_cli, server_fixture  # noqa: F401  (registers `server`)


@pytest.fixture
def planted() -> str:
    return f"sk-test-PLANTED-{secrets.token_hex(16)}"


def test_planted_key_is_sent_and_written_nowhere(workdir: Path, server, planted: str) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    spec = write_spec(workdir / "s.yaml", SPEC)
    done = run_cli(workdir, [f"spec={spec}", *model_args(url), *isolation(workdir)], planted)
    assert done.returncode == 0, done.stderr
    assert handler.seen_auth and set(handler.seen_auth) == {f"Bearer {planted}"}  # the key was really used
    [run] = run_dirs(workdir)
    assert (run / "cli.log").stat().st_size > 0 and (workdir / "cache.sqlite").is_file()
    assert json.loads((run / "manifest.json").read_text())["config"]["model"]["api_key_env"] == KEY_ENV
    assert files_containing(workdir, planted) == []
    assert planted not in done.stdout + done.stderr
    assert files_containing(workdir, planted[len("sk-test-"):]) == []  # not even in part


def test_in_process_logs_and_errors_never_carry_the_key(workdir: Path, server, planted: str, monkeypatch,
                                                         caplog, capsys) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    handler.mode = "deny"
    monkeypatch.setenv(KEY_ENV, planted)
    spec = write_spec(workdir / "s.yaml", SPEC)
    from biasaudit.backends import build_backend
    from biasaudit.engine import execute_requests
    from biasaudit.store import Store

    caplog.set_level(logging.DEBUG)
    prep = prepare(compose([f"spec={spec}", *model_args(url), *isolation(workdir)]))
    cfg = prep.composed.config
    backend = build_backend(cfg.model, cfg.runtime)
    assert planted not in repr(backend) and planted not in repr(vars(backend))
    logging.getLogger("biasaudit.test").warning("a header slipped into a message: Bearer %s", planted)
    store = Store(workdir / "cache.sqlite")
    results, stats = execute_requests(dict(list(prep.plan.requests.items())[:2]), store, lambda: backend,
                                      progress=False)
    store.close()
    assert stats.new_failures == 2 and all(("[REDACTED]" in (r.error or "") or "<secret>" in (r.error or ""))
                                           and planted not in (r.error or "") for r in results.values())
    texts = [r.getMessage() for r in caplog.records] + [r.exc_text or "" for r in caplog.records]
    for handler_ in logging.getLogger().handlers:  # what the handlers actually emit
        texts += [handler_.format(r) for r in caplog.records]
    assert any("[REDACTED]" in t for t in texts)
    assert not [t for t in texts if planted in t]
    out, err = capsys.readouterr()
    assert planted not in out + err

    # errors raised to the user: a key given where only a variable name belongs, and a
    # variable that is not set, never show a key's value
    monkeypatch.delenv(KEY_ENV)
    others = [a for a in model_args(url) if not a.startswith("model.api_key_env=")]
    for overrides in ([f"+model.api_key={planted}"], [f"model.api_key_env={planted}"]):
        with pytest.raises(BiasAuditError) as ei:
            prep = prepare(compose([f"spec={spec}", *others, *overrides, *isolation(workdir)]))
            build_backend(prep.composed.config.model, prep.composed.config.runtime)
        assert planted not in str(ei.value) and planted not in repr(ei.value), ei.value
        assert any(w in str(ei.value) for w in ("unknown key 'api_key'", "must name an environment variable",
                                                 f"{KEY_ENV} is not set")), ei.value


# -- a key too short or too plain to scrub is warned about, not scrubbed (issue 39, item 8) --

@pytest.fixture
def clean_registry():  # type: ignore[no-untyped-def]
    from biasaudit._util import secrets as reg

    reg.forget_all()
    yield reg
    reg.forget_all()


def _backend(name: str):  # type: ignore[no-untyped-def]
    from biasaudit.backends.openai_compat import OpenAICompatBackend
    from biasaudit.spec import OpenAICompatConfig, RuntimeConfig

    cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url="http://127.0.0.1:9/v1", model="m",
                             api_key_env=name)
    return OpenAICompatBackend(cfg, RuntimeConfig())


DIAGNOSTIC = "HTTP 400: none of the answer words is EMPTY, dummy or a sk-no-key-required token (None)"


@pytest.mark.parametrize("value", ["none", "EMPTY", "dummy", "sk-no-key-required", "not-needed", "xxxxxxxxxx"])
def test_a_short_or_placeholder_key_leaves_messages_whole_and_warns_once(value: str, clean_registry, monkeypatch,
                                                                        caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", value)
    caplog.set_level(logging.WARNING)
    first = _backend("OPENAI_API_KEY")
    _backend("OPENAI_API_KEY")  # a second client of the same variable: no second warning
    assert first._redact(DIAGNOSTIC) == DIAGNOSTIC
    assert clean_registry.redact(DIAGNOSTIC) == DIAGNOSTIC
    from biasaudit._util.fileio import scrub

    assert scrub(DIAGNOSTIC) == DIAGNOSTIC
    warned = [r.getMessage() for r in caplog.records if "OPENAI_API_KEY" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "not scrubbed" in warned[0] and value not in warned[0] and "\n" not in warned[0]


def test_a_real_key_is_still_scrubbed_in_every_form(clean_registry, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    import base64

    key = "sk-proj-Zq81xYt0W2hN5pLmK3vB"
    monkeypatch.setenv("RT_AUTH_VALUE", key)
    caplog.set_level(logging.WARNING)
    backend = _backend("RT_AUTH_VALUE")
    forms = [key, key[::-1], key.upper(), key.encode().hex(), base64.b64encode(key.encode()).decode(),
             key[:12], key.replace("-", "%2D")]
    for form in forms:
        assert form not in backend._redact(f"echo: {form} end"), form
        assert "[REDACTED]" in backend._redact(f"echo: {form} end"), form
    assert not [r for r in caplog.records if "RT_AUTH_VALUE" in r.getMessage()]
