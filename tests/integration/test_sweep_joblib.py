"""Issue 10 acceptance 4: a `-m` sweep with the joblib launcher over two model variants
and two metric settings runs its jobs in parallel worker processes on SmolLM2, shares one
cache without errors, and `compare` reads the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.spec.compose import compose
from biasaudit.store import Store
from tests.conftest import isolation, run_dirs
from tests.helpers import expected_exit, read_jsonl, tp_spec

pytestmark = pytest.mark.slow


def test_joblib_sweep_shares_the_cache_and_compare_reads_it(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    # the session fixture has converted the GGUF model there: workers load it in seconds
    models = Path(compose([]).config.runtime.cache).resolve().parent / "models"
    code, out, err = cli(
        "run", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"spec={spec}",
        "metrics.0.mode=ar_full,ar_shared", "model=smollm2,smollm2_fair",
        *isolation(workdir), f"runtime.models_dir={models}",
    )
    assert code == expected_exit(workdir, 4), err
    dirs = run_dirs(workdir)
    assert len(dirs) == 4 and len({d.parent for d in dirs}) == 1  # one sweep folder
    summaries = [json.loads((d / "summary.json").read_text()) for d in dirs]
    for s in summaries:
        ex = s["execution"]
        assert ex["calls"] + ex["cache_hits"] == 6 and ex["failures"] == 0
    assert sorted(s["model"]["name"] for s in summaries) == [
        "smollm2-135m-fair", "smollm2-135m-fair", "smollm2-135m-instruct-q4_1", "smollm2-135m-instruct-q4_1"]

    store = Store(workdir / "cache.sqlite")
    assert store.count() == 12  # 6 sentences x 2 model identities, whatever ran in parallel
    rows = store.db.execute("SELECT status, COUNT(*) FROM responses GROUP BY status").fetchall()
    store.close()
    assert rows == [("ok", 12)]

    # what the workers stored is what the model gives in this process
    plain = next(d for d, s in zip(dirs, summaries, strict=True) if s["model"]["name"].endswith("q4_1"))
    trail = read_jsonl(plain / "responses.jsonl")
    texts = [t["request"]["text"] for t in trail]
    here = smollm2.sequence_logprobs(texts)
    for t, h in zip(trail, here, strict=True):
        assert t["output"]["logprobs"][1:] == pytest.approx(h["logprobs"][1:], abs=1e-5)

    code, out, err = cli("compare", str(dirs[0].parent))
    assert code == 0, err
    result = json.loads((dirs[0].parent / "compare" / "compare.json").read_text())
    assert len(result["runs"]) == 4
    assert {(r["model"], r["metric"]) for r in result["side_by_side"]["rows"]} == {
        ("smollm2-135m-instruct-q4_1", "bias_score"), ("smollm2-135m-fair", "bias_score")}
    # issue 17 acceptance 5: the swept settings per run, paired tests, ranking by distance from 50
    settings = sorted(r["setting"] for r in result["runs"])
    assert settings == sorted(f"metrics.0.mode={m} model={x}" for m in ("ar_full", "ar_shared")
                              for x in ("smollm2", "smollm2_fair")), settings
    [g] = result["rankings"]
    assert g["reference"] == 50.0
    assert [r["distance"] for r in g["rows"]] == pytest.approx(sorted(abs(r["value"] - 50.0) for r in g["rows"]))
    [p] = result["paired"]
    # runs of one mode pair on the 3 stimuli; across modes the metric definitions differ: refused
    same = [r for r in p["rows"] if r["setting_a"].split()[0] == r["setting_b"].split()[0]]
    assert len(p["rows"]) == 6 and len(same) == 2
    assert all(r["test"].startswith("mcnemar") and r["units"] == 3 for r in same)
    assert all(r["test"] == "refused" and "different metric definitions (mode=" in r["pairing"]
               for r in p["rows"] if r not in same)
    assert "paired test" in out and "metrics.0.mode=ar_full model=smollm2" in out and "distance" in out
