"""The Anthropic and Gemini recipes of docs/models-and-servers.md run as written (the
fenced block after `<!-- recipe: NAME -->`), against local fakes of each provider (no
network): the `export` line's variable is set to a test key, and the `biasaudit` line is
run with this test's cache and report folders added. One substitution each, said here:
the Gemini recipe's base URL becomes the fake's; the Anthropic recipe relies on the
default base URL, so the fake's is added (`model.base_url=...`)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import REPO
from tests.support.anthropic_server import MessagesServer
from tests.support.gemini_server import GeminiServer

KEY = "recipe-test-planted-key-27182818"


def recipe(name: str) -> tuple[str, list[str]]:
    text = (REPO / "docs" / "models-and-servers.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- recipe: {name} -->\n```\n(.*?)\n```", text, re.S)
    assert m, f"docs/models-and-servers.md has no recipe {name!r}"
    export, run = [line for line in m.group(1).splitlines() if line.strip()]
    var = re.fullmatch(r"export (\w+)=\.\.\.", export)
    assert var, export
    argv = shlex.split(run)
    assert argv[:2] == ["biasaudit", "run"]
    return var.group(1), argv[2:]


def _summary(workdir: Path) -> dict[str, Any]:
    [run] = run_dirs(workdir)
    for f in run.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f  # the key nowhere in the run folder
    return dict(json.loads((run / "summary.json").read_text(encoding="utf-8")))


def test_anthropic_recipe(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    var, args = recipe("anthropic")
    assert var == "ANTHROPIC_API_KEY"
    monkeypatch.setenv(var, KEY)
    with MessagesServer() as server:
        code, _, err = cli("run", *args, f"model.base_url={server.url}", *isolation(workdir))
    assert code in (0, 1, 3), err
    s = _summary(workdir)
    assert s["execution"]["failures"] == 0 and s["execution"]["usage_reported"] == 96
    # the fake bills 100 input and 20 output tokens per answer: 9,600 x 3/M + 1,920 x 15/M = 0.0576
    [t] = s["cover"]["tokens"]
    assert t["cost"] == pytest.approx(0.0576)
    assert all(x["headers"]["authorization"] == f"Bearer {KEY}" for x in server.seen)
    assert {x["body"]["model"] for x in server.seen} == {"claude-sonnet-4-5"}


def test_gemini_recipe(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    var, args = recipe("gemini")
    assert var == "GEMINI_API_KEY"
    monkeypatch.setenv(var, KEY)
    hosted = "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert f"model.base_url={hosted}" in args
    with GeminiServer() as server:
        code, _, err = cli("run", *[a.replace(hosted, server.url) for a in args], *isolation(workdir))
    assert code in (0, 1, 3), err
    s = _summary(workdir)
    # thinking off: every 40-token answer comes back (the fake would spend 60 thinking)
    assert s["execution"]["failures"] == 0 and s["execution"]["usage_reported"] == 96
    assert all(x["body"]["reasoning_effort"] == "none" for x in server.seen if x["body"])
    assert all(x["auth"] == f"Bearer {KEY}" for x in server.seen if x["body"])


def test_gemini_recipe_refuses_a_scoring_spec_at_validate(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    var, args = recipe("gemini")
    monkeypatch.setenv(var, KEY)
    args = ["spec=crows_pairs_tp" if a.startswith("spec=") else a for a in args]
    code, _, err = cli("validate", *args)
    assert code == 2 and "not fit for sequence_logprob probes" in err and "Traceback" not in err
