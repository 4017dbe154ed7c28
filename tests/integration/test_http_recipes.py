"""The documented recipes for real inference servers, run as written: the commands are read
from docs/models-and-servers.md (the fenced block after each `<!-- recipe: NAME -->` marker), a server command
(ending in `&`) is started as a subprocess and waited for, and the `biasaudit` command is
run with only this test's cache and report folders added, and, on the real engines, a
smaller stimulus sample (`+stimuli.sample.n`: 10 CrowS-Pairs pairs instead of the spec's
40, one statement of refusal_stance instead of four: what is checked is that the recipe's
commands work together, not the statistic, and each request through a CPU server costs
seconds). Two substitutions, said here: the vLLM recipe's placeholder directory
`/models/my-model` becomes the float32 copy of the embedded SmolLM2, and the hosted API's
base URL becomes a local fake server (no network)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from biasaudit.backends.served import served_weights
from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs
from tests.helpers import REPO
from tests.support.fault_server import FaultServer

pytestmark = pytest.mark.slow


def recipe(name: str) -> list[str]:
    text = (REPO / "docs" / "models-and-servers.md").read_text()
    m = re.search(rf"<!-- recipe: {name} -->\n```\n(.*?)\n```", text, re.S)
    assert m, f"docs/models-and-servers.md has no recipe {name!r}"
    return [line for line in m.group(1).splitlines() if line.strip()]


@pytest.fixture
def server_from() -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(line: str, subs: dict[str, str]) -> str:
        assert line.endswith("&")
        for a, b in subs.items():
            line = line.replace(a, b)
        argv = shlex.split(line[:-1])
        port = argv[argv.index("--port") + 1]
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
        procs.append(subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env, start_new_session=True))
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert procs[-1].poll() is None, f"the recipe's server exited: {line}"
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise AssertionError(f"the recipe's server did not come up: {line}")

    yield start
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


CROWS_SAMPLE, STATEMENTS_SAMPLE = "+stimuli.sample.n=10", "+stimuli.sample.n=1"


def _run(cli, workdir: Path, line: str, subs: dict[str, str] | None = None,  # type: ignore[no-untyped-def]
         sample: tuple[str, ...] = ()) -> dict:  # type: ignore[type-arg]
    for a, b in (subs or {}).items():
        line = line.replace(a, b)
    argv = shlex.split(line)
    assert argv[:2] == ["biasaudit", "run"]
    code, out, err = cli(*argv[1:], *sample, *isolation(workdir))
    assert code in (0, 1, 3), out + err
    (run,) = run_dirs(workdir)
    return json.loads((run / "summary.json").read_text())  # type: ignore[no-any-return]


def test_llamacpp_recipe(workdir: Path, cli, server_from) -> None:  # type: ignore[no-untyped-def]
    serve, run = recipe("llamacpp")
    server_from(serve, {})
    summary = _run(cli, workdir, run, sample=(CROWS_SAMPLE,))
    assert summary["execution"]["failures"] == 0 and summary["measured"] is not False
    assert "sent before each text (llama-cpp-python server)" in " ".join(summary["cover"]["scoring"])
    shared = summary["metrics"]["bias_score_shared"]["estimates"]["score"]
    assert shared["value"] is not None  # the server's token ids reached ar_shared


def test_vllm_recipe(workdir: Path, cli, server_from) -> None:  # type: ignore[no-untyped-def]
    cfg = compose(["model=smollm2", "model.serve=vllm"]).config
    weights = str(served_weights(cfg.model, cfg.runtime))
    serve, run = recipe("vllm")
    # The documented command starts vLLM with --enforce-eager (the doc says why): its
    # torch.compile of the model was most of this test's time in CI (the compiled path is
    # still exercised, and held to the in-process numbers, by test_http_parity's managed engine).
    assert "--enforce-eager" in serve
    server_from(serve, {"/models/my-model": weights})
    summary = _run(cli, workdir, run, {"/models/my-model": weights}, sample=(CROWS_SAMPLE,))
    assert summary["execution"]["failures"] == 0
    assert "(vllm server)" in " ".join(summary["cover"]["scoring"])
    assert summary["metrics"]["bias_score_shared"]["estimates"]["score"]["value"] is not None


def test_hosted_api_recipe(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    export, run = recipe("hosted")
    assert export.startswith("export OPENAI_API_KEY=")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-recipe-key-0123456789")
    with FaultServer() as server:
        summary = _run(cli, workdir, run, {"https://api.openai.com/v1": server.url})
    assert summary["execution"]["failures"] == 0
    assert all(s["auth"] == "Bearer sk-test-recipe-key-0123456789" for s in server.seen if s["body"])


def test_managed_recipe(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    (run,) = recipe("managed")
    summary = _run(cli, workdir, run, sample=(STATEMENTS_SAMPLE,))
    assert summary["execution"]["failures"] == 0
    assert summary["cover"]["served_by"].startswith("llama-cpp-python")
