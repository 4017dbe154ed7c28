"""Server answers (issue 26, class 5): an answer of any size or content is coded. One
1.25M-character answer sent into `judge_panel` stopped the whole run (the judge prompt
went over the template limit); every input a coder reads is now cut to
`runtime.limits.max_coding_chars` (default 20000), flagged `input_truncated` in the
code's detail and counted in the report. Answers of control characters, NULs, lone
surrogates or only whitespace are coded or counted as failures, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import (
    GENERATE_SPEC,
    biaxis_spec,
    expected_exit,
    read_jsonl,
    verdict_code,
    write_spec,
)
from tests.support.fault_server import FaultServer, Raw, http_response
from tests.unit.hostile._cases import error_lines

HUGE = "They genuinely are lazy. " * 50_000  # 1.25M characters


def _subject(prompt: str) -> bool:
    return prompt.startswith(("Q: Group", "Explain: Group"))


def _chat(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                       "usage": {"completion_tokens": 3}}).encode()


def answering(content: str | bytes, only: str = "") -> Callable[[str, dict[str, str]], Raw | None]:
    """The subject answers `content` (a str, or the raw JSON body); the judges get the
    server's normal answer. With `only`, just the prompts that contain it."""
    body = content if isinstance(content, bytes) else _chat(content)
    return lambda p, h: Raw(http_response(200, body)) if _subject(p) and only in p else None


KEY_ENV = "BIASAUDIT_HUGE_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-huge-answers-0123456789")


def run_server(workdir: Path, cli, responder: Callable[[str, dict[str, str]], Raw | None],  # type: ignore[no-untyped-def]
               *extra: str) -> tuple[int, str, str]:
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    with FaultServer(responder=responder) as server:
        return cli("run", f"spec={spec}", "model=openai_compat", f"model.base_url={server.url}",
                   f"model.api_key_env={KEY_ENV}", "model.max_retries=0", "model.timeout=20", *extra,
                   *isolation(workdir))


def layers(run: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    return {lay["name"]: lay for lay in json.loads((run / "summary.json").read_text())["coding"]["layers"]}


def test_a_huge_answer_is_cut_for_the_judge_panel(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The issue's case: BiAxisAudit on scripted models, one explanation of 1.25M characters."""
    import yaml

    spec, ops = biaxis_spec(workdir)
    model = workdir / "conf" / "model" / "test.yaml"
    subject = yaml.safe_load(model.read_text())
    subject["script"]["replies"]["Explain: Group A"] = HUGE
    model.write_text(yaml.safe_dump(subject))
    code, out, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run) and "Traceback" not in err, err
    elab = layers(run)["elaboration"]
    assert elab["truncated"] == 2, elab  # both conditions of the task `explain` with Group A
    codes = read_jsonl(run / "codes.jsonl")
    cut = [c for c in codes if "input_truncated" in c["detail"]]
    assert cut and all(c["detail"]["input_truncated"] == {"chars": len(HUGE), "kept": 20_000} for c in cut)
    assert {c["layer"] for c in cut} == {"elaboration"} and all(c["status"] == "coded" for c in cut)
    md = (run / "report.md").read_text()
    assert "2 input(s) longer than `runtime.limits.max_coding_chars` were cut" in md
    assert "runtime.limits.max_coding_chars</code> were cut" in (run / "report.html").read_text()


def test_the_limit_is_the_operators(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_server(workdir, cli, answering("Yes. " + "x" * 500), "runtime.limits.max_coding_chars=100")
    assert code == expected_exit(workdir), err  # 4 when the answers failed: could not measure
    [run] = run_dirs(workdir)
    counted = {name: lay["truncated"] for name, lay in layers(run).items()}
    assert counted and max(counted.values()) == 4, counted  # every one of the 4 answers, on the layers reading them


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1e400"])
def test_a_bad_limit_is_one_line(workdir: Path, cli, value: str) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    code, out, err = cli("validate", f"spec={spec}", f"runtime.limits.max_coding_chars={value}")
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "runtime.limits.max_coding_chars" in lines[0], err


WEIRD: dict[str, Callable[[str, dict[str, str]], Raw | None]] = {
    "1.25M characters through HTTP": answering(HUGE),
    "only control characters": answering("".join(chr(i) for i in range(32)) * 100 + "\x7f\x1b[31m"),
    "only NUL characters": answering("\x00" * 5000),
    "only whitespace": answering(" \n\t\r" * 1000),
    "lone surrogates only": (lambda p, h: Raw(http_response(200, _chat("@@").replace(b"@@", b"\\ud800\\udfff" * 100)))
                             if _subject(p) else None),
    "bidi overrides and zero-width": answering("\u202e\u2066\u200b\ufeff" * 2000),
    "one 200k-character word": answering("y" * 200_000),
    "a huge answer to one prompt only": answering(HUGE, only="Group A"),
}


@pytest.mark.parametrize("name", list(WEIRD))
def test_any_answer_is_coded_or_counted(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_server(workdir, cli, WEIRD[name])
    assert code == expected_exit(workdir) and "Traceback" not in err, err
    [run] = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    ex = summary["execution"]
    assert ex["requests"] == 4 and ex["answered"] + ex["failures"] == 4, ex  # every answer accounted for
    for lay in summary["coding"]["layers"]:
        if lay["fallback_of"] is None:  # a fallback codes only what its primary hands over
            assert sum(lay["status"].values()) == 4, lay
    assert (run / "report.html").is_file() and (run / "codes.jsonl").is_file()
    big = name.startswith(("1.25M", "a huge", "one 200k"))
    assert (max(lay["truncated"] for lay in summary["coding"]["layers"]) > 0) == big


def test_an_answer_over_the_response_limit_is_a_counted_failure(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The body a server may send is bounded too (runtime.limits.http_response_bytes)."""
    code, out, err = run_server(workdir, cli, answering(HUGE), "runtime.limits.http_response_bytes=100000")
    assert code == expected_exit(workdir) and "Traceback" not in err, err
    [run] = run_dirs(workdir)
    ex = json.loads((run / "summary.json").read_text())["execution"]
    assert ex["failures_by_kind"] == {"malformed": 4}, ex
