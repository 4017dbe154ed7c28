"""The application backend (`http_app`, issue 43 section 4) against the fixture screening
service: the request template is sent as the config says (JSON or form body, the key
header, per-stimulus session headers), the answer is what the JMESPath selects, and
hostile inputs are refused at validation (one line, exit 2) or recorded as failures with
their kind: a template reaching Python internals or the environment, a template or
response past the size bounds, a redirect to another host, a selection that is not a
string, a bad JMESPath. Plans for an application carry and hash each request's stimulus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from biasaudit.backends.http_app import HTTPAppBackend
from biasaudit.plan import Request
from biasaudit.records.responses import Response
from biasaudit.spec import RuntimeConfig, model_config
from biasaudit.spec.model_configs import HTTPAppConfig
from tests.conftest import isolation
from tests.fixtures.screening_service import serving
from tests.helpers import operator_conf

APPLICANTS = [
    {"id": "a1", "role": "nurse", "gender": "woman", "race": "Black"},
    {"id": "a2", "role": "engineer", "gender": "man", "race": "Black"},
    {"id": "a3", "role": "engineer", "gender": "woman", "race": "Hispanic"},
    {"id": "a4", "role": "engineer", "gender": "man", "race": "White"},
]
EXPECTED = {"a1": "invite", "a2": "reject", "a3": "reject", "a4": "invite"}  # the service's rule, by hand


def _config(url: str, **over: Any) -> HTTPAppConfig:
    data: dict[str, Any] = {
        "backend": "http_app", "name": "screen", "answer": "result.decision", "max_retries": 2, "backoff_s": 0,
        "request": {"url": url, "body": {"applicant": {k: "{{ stimulus." + k + " }}" for k in APPLICANTS[0]},
                                         "note": "{{ prompt }}"}},
        "session_headers": {"X-Session-Id": "audit-{{ stimulus_id }}"},
    }
    data.update(over)
    cfg = model_config(data)
    assert isinstance(cfg, HTTPAppConfig)
    return cfg


def _requests(prompt: str = "Invite this applicant?") -> list[Request]:
    return [Request(key=a["id"], kind="generate", messages=[{"role": "user", "content": prompt}],
                    params={"max_tokens": 5}, stimulus={"id": a["id"], "fields": a, "levels": {}})
            for a in APPLICANTS]


def _run(cfg: HTTPAppConfig, reqs: list[Request], runtime: RuntimeConfig | None = None) -> dict[str, Response]:
    out: dict[str, Response] = {}
    HTTPAppBackend(cfg, runtime or RuntimeConfig()).execute(reqs, lambda r: out.__setitem__(r.key, r))
    return out


def test_the_template_is_sent_and_the_answer_selected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCREEN_KEY", "sk-app-unit-0123456789abcdef")
    with serving(key="sk-app-unit-0123456789abcdef") as (url, seen):
        cfg = _config(f"{url}/screen", api_key_env="SCREEN_KEY",
                      request={"url": f"{url}/screen", "headers": {"Authorization": "Bearer {{ api_key }}"},
                               "body": {"applicant": {k: "{{ stimulus." + k + " }}" for k in APPLICANTS[0]},
                                        "note": "{{ prompt }}"}})
        got = _run(cfg, _requests('He said "yes" \\ and left'))
    assert {k: (r.status, r.output["text"]) for k, r in got.items()} == {k: ("ok", v) for k, v in EXPECTED.items()}
    by_id = {s["body"]["applicant"]["id"]: s for s in seen.requests}
    assert sorted(by_id) == ["a1", "a2", "a3", "a4"]
    assert by_id["a2"]["body"] == {"applicant": APPLICANTS[1], "note": 'He said "yes" \\ and left'}  # quotes stay JSON
    assert by_id["a2"]["headers"]["X-Session-Id"] == "audit-a2"
    assert by_id["a2"]["headers"]["Authorization"] == "Bearer sk-app-unit-0123456789abcdef"


def test_a_form_body_and_no_key_header_unless_the_template_puts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCREEN_KEY", "sk-app-unit-0123456789abcdef")
    with serving() as (url, seen):
        cfg = _config(f"{url}/screen", api_key_env="SCREEN_KEY",
                      request={"url": f"{url}/screen", "form": {k: "{{ stimulus." + k + " }}" for k in APPLICANTS[0]}})
        got = _run(cfg, _requests())
    assert {k: r.output["text"] for k, r in got.items()} == EXPECTED
    assert all(s["headers"]["Content-Type"].startswith("application/x-www-form-urlencoded") for s in seen.requests)
    assert not any("Authorization" in s["headers"] for s in seen.requests)  # not openai_compat's Bearer default


def test_429_with_retry_after_is_retried() -> None:
    with serving() as (url, seen):
        seen.busy = 2
        got = _run(_config(f"{url}/busy"), _requests()[:1])
    assert got["a1"].status == "ok" and got["a1"].attempts == 3


@pytest.mark.parametrize(("path", "kind", "says"), [
    ("/redirect", "http_error", "redirect to elsewhere.example not followed (requests and the key go to the host"),
    ("/huge", "malformed", "response body larger than 4096 bytes"),
    ("/list", "malformed", "model.answer 'result.decision' selected a list ([\"invite\"]), not a string"),
    ("/text", "malformed", "invalid JSON"),
])
def test_hostile_answers_are_failures_of_their_kind(path: str, kind: str, says: str) -> None:
    rt = RuntimeConfig.model_validate({"limits": {"http_response_bytes": 4096}})
    with serving() as (url, seen):
        got = _run(_config(f"{url}{path}", max_retries=0), _requests()[:1], rt)
    r = got["a1"]
    assert (r.status, r.error_kind) == ("failed", kind) and says in (r.error or ""), r
    assert len(seen.requests) == 1  # the redirect is not followed; nothing is retried


def test_a_template_past_the_size_bound_at_run_time_is_a_recorded_failure() -> None:
    rt = RuntimeConfig()
    with serving() as (url, seen):
        cfg = _config(f"{url}/screen", request={"url": f"{url}/screen", "body": {"note": "{{ prompt * 20000 }}"}})
        got = _run(cfg, _requests("x" * 100)[:1], rt)  # 2,000,000 characters, over template_chars 1,000,000
    r = got["a1"]
    assert (r.status, r.error_kind) == ("failed", "template") and "2000000 items is too long" in (r.error or ""), r
    assert seen.requests == []


def test_a_request_without_its_stimulus_fails_with_the_reason() -> None:
    with serving() as (url, seen):
        req = Request(key="k", kind="generate", messages=[{"role": "user", "content": "hi"}])
        got = _run(_config(f"{url}/screen"), [req])
    assert got["k"].error_kind == "template" and "carries no stimulus" in (got["k"].error or "")
    assert seen.requests == []


def test_a_header_that_renders_a_line_break_is_not_sent() -> None:
    with serving() as (url, seen):
        cfg = _config(f"{url}/screen", session_headers={"X-Session-Id": "{{ stimulus.race }}"})
        req = _requests()[0].model_copy(update={"stimulus": {"id": "a1", "fields": {
            **APPLICANTS[0], "race": "Black\r\nX-Admin: 1"}, "levels": {}}})
        got = _run(cfg, [req])
    assert got["a1"].error_kind == "template" and "line break" in (got["a1"].error or "") and seen.requests == []


@pytest.mark.parametrize(("change", "says"), [
    ({"answer": "result.[decision"}, "answer"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ ''.__class__ }}"}}}, "unsafe"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ ''.__class__.__mro__[1].__subclasses__() }}"}}},
     "unsafe"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ os.environ }}"}}}, "reads 'os'"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ environ['HOME'] }}"}}}, "reads 'environ'"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ cycler.__init__.__globals__.os.environ }}"}}},
     "unsafe"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ prompt.__class__.__base__ }}"}}}, "unsafe"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{% include '/etc/passwd' %}"}}}, "there is no template loader"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ api_key }}"}}, "api_key_env": "K"},
     "the key goes in request.headers only"),
    ({"request": {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ 'a' * 10**8 }}"}}}, "too long"),
    ({"request": {"url": "http://{{ stimulus.host }}/s"}}, "scheme and host must be literal"),
    ({"request": {"url": "file:///etc/passwd"}}, "http:// or https://"),
    ({"session_headers": {"X-S": "{{ prompt }}"}}, "session_headers.X-S: the template reads 'prompt'"),
    ({"request": {"url": "http://127.0.0.1:1/s", "headers": {"Authorization": "Bearer {{ api_key }}"}}},
     "no `api_key_env`"),
])
def test_bad_templates_are_refused_when_the_config_is_validated(change: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as refused:
        _config("http://127.0.0.1:1/s", **change)
    assert says in str(refused.value)


def test_a_bad_jmespath_is_one_line_naming_the_key_and_exit_2(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    cfg = {"backend": "http_app", "name": "screen", "answer": "result.[decision",
           "request": {"url": "http://127.0.0.1:1/screen", "body": {"note": "{{ prompt }}"}}}
    code, out, err = cli("validate", "spec=hiring_impact", *operator_conf(workdir, model=cfg), *isolation(workdir))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "model.answer: not a JMESPath expression" in err and "Traceback" not in err
    cfg["answer"], cfg["request"] = "d", {"url": "http://127.0.0.1:1/s", "body": {"a": "{{ ''.__class__ }}"}}
    code, out, err = cli("validate", "spec=hiring_impact", *operator_conf(workdir, model=cfg), *isolation(workdir))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "request.body.a: the template sandbox refuses" in err


def test_a_plan_for_an_application_carries_and_hashes_the_stimulus(workdir: Path) -> None:
    from biasaudit.plan.stream import count_plans
    from biasaudit.runner.pipeline import plan_inputs, prepare
    from biasaudit.spec.compose import compose

    app = {"backend": "http_app", "name": "screen", "answer": "d",
           "request": {"url": "http://127.0.0.1:1/screen", "body": {"g": "{{ stimulus.gender }}"}}}
    c = compose(["spec=hiring_impact", *operator_conf(workdir, model=app), *isolation(workdir)])
    prep = prepare(c)
    reqs = list(prep.plan.requests.values())
    assert all(r.stimulus is not None for r in reqs) and len(reqs) == 96
    r = next(r for r in reqs if r.stimulus and r.stimulus["id"] == "p2-man-black")
    assert r.stimulus["fields"]["race"] == "Black" and r.stimulus["levels"] in ({"framing": "direct"},
                                                                                 {"framing": "screener"})
    # a counted plan (plan, validate, sweeps) keys requests exactly as the compiled one
    inp = plan_inputs(c)
    counts = count_plans(c.config, inp.stimuli, [inp.identity], str(c.spec_file))
    assert counts.models[0].keys == set(prep.plan.requests)
    # a model that reads no stimulus: requests as before, no `stimulus` in what is stored
    plain = prepare(compose(["spec=hiring_impact", "model=scripted", *isolation(workdir)]))
    some = next(iter(plain.plan.requests.values()))
    assert some.stimulus is None and "stimulus" not in some.model_dump()
