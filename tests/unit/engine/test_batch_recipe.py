"""The "Batch APIs" recipe of docs/models-and-servers.md runs as written against a local
fake of OpenAI's Batch API: only the provider's address is swapped for the fake's (and the
key variable dropped), the cache and reports kept in the test's folder, and the polls made
quick. The run answers through one batch, and its cover says so with the batch price."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import REPO, verdict_code
from tests.support.batch_server import BatchServer


@pytest.mark.slow  # a whole run of hiring_impact (96 requests) through the batch path
def test_the_documented_batch_recipe_runs_as_written(workdir: Path, cli: Any) -> None:
    text = (REPO / "docs" / "models-and-servers.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- recipe: batch -->\n```\n(.*?)\n```", text, re.S)
    assert m, "docs/models-and-servers.md has no batch recipe"
    command = shlex.split(m.group(1))
    assert command[:2] == ["biasaudit", "run"] and "runtime.batch.enabled=true" in command
    with BatchServer() as server:
        args = [a.replace("https://api.openai.com/v1", server.url) for a in command[2:]]
        args = [a for a in args if not a.startswith("model.api_key_env=")] + ["model.api_key_env=null"]
        code, _, err = cli("run", *args, "runtime.batch.poll_s=0.05", *isolation(workdir))
    assert server.submits["openai"] == 1
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    [bid] = server.batches
    n = len(server.batches[bid]["requests"])
    assert summary["execution"]["batch_answers"] == n and summary["execution"]["batch_ids"] == [bid]
    [t] = summary["cover"]["tokens"]
    # n answers x (100 in, 20 out) at 0.15 / 0.60 per million, half off for the batch
    assert t["cost"] == pytest.approx(n * (100 * 0.15 + 20 * 0.60) / 1e6 * 0.5)
    assert f"{n} of {n} answers through the provider's batch API (batch {bid})" in t["text"]
