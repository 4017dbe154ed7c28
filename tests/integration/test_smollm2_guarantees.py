"""Issue 11 guarantees on the real embedded model: greedy SmolLM2 runs are byte-identical
across processes (apart from the volatile keys), and a SIGKILLed scoring run resumes to
exactly the summary of an uninterrupted one without scoring anything twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs
from tests.helpers import GENERATE_SPEC, comparable_summary, expected_exit, tp_spec, write_spec

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def share_converted_model(workdir: Path) -> None:
    """Subprocess runs find the weights the session already dequantized (they look in
    `<cache folder>/models`), so they load in seconds instead of converting the GGUF again."""
    converted = (Path(compose([]).config.runtime.cache).parent / "models").resolve()
    assert converted.is_dir(), "the smollm2 fixture converts the model first"
    (workdir / "models").symlink_to(converted, target_is_directory=True)


def biasaudit(workdir: Path, args: list[str], *, hash_seed: int, kill_at: tuple[str, int] | None = None
              ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": str(hash_seed), "HF_HUB_OFFLINE": "1"}
    head = ["-m", "tests.killpoints", kill_at[0], str(kill_at[1])] if kill_at else ["-m", "biasaudit.cli.app"]
    return subprocess.run([sys.executable, *head, *args], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=900)


def test_greedy_smollm2_runs_are_byte_identical(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC.replace("max_tokens: 20", "max_tokens: 8"))
    code, _, err = cli("run", f"spec={spec}", *isolation(workdir))  # SmolLM2 subject and judge panel
    assert code == expected_exit(workdir), err
    [first] = run_dirs(workdir)
    other = workdir / "other"
    (other / "reports").mkdir(parents=True)
    share_converted_model(other)
    done = biasaudit(workdir, ["run", f"spec={spec}", *isolation(other)], hash_seed=7)
    assert done.returncode == expected_exit(other), done.stderr
    [second] = run_dirs(other)
    s = json.loads((second / "summary.json").read_text())
    assert s["execution"]["calls"] == 4 and s["execution"]["cache_hits"] == 0 and s["execution"]["coding_calls"] > 0
    assert comparable_summary(first / "summary.json") == comparable_summary(second / "summary.json")


def test_sigkilled_scoring_run_resumes_to_the_uninterrupted_result(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)  # 8 sequence_logprob requests
    # one request a batch (scoring batches by a token budget unless it is null), so the
    # kill lands between two scored requests: each finished batch is committed whole
    one_at_a_time = ["runtime.batch_size=1", "runtime.batch_tokens=null"]
    ref = workdir / "ref"
    (ref / "reports").mkdir(parents=True)
    code, _, err = cli("run", f"spec={spec}", *one_at_a_time, *isolation(ref))
    assert code == expected_exit(ref), err
    [reference] = run_dirs(ref)

    share_converted_model(workdir)
    args = ["run", f"spec={spec}", *one_at_a_time, *isolation(workdir)]
    killed = biasaudit(workdir, args, hash_seed=3, kill_at=("put", 3))  # right after the 3rd response is committed
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = biasaudit(workdir, args, hash_seed=4)
    assert again.returncode == expected_exit(workdir), again.stderr
    [resumed] = run_dirs(workdir)
    ex = json.loads((resumed / "summary.json").read_text())["execution"]
    assert (ex["cache_hits"], ex["calls"]) == (3, 5)  # nothing scored twice, nothing lost
    assert comparable_summary(resumed / "summary.json", resumed=True) == \
        comparable_summary(reference / "summary.json", resumed=True)
