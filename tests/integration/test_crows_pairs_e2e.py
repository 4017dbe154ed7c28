"""The shipped CrowS-Pairs spec end to end on SmolLM2 (foundation issue acceptance)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import expected_exit, read_jsonl, write_crows_subset
from tests.report_checks import check_in_browser, check_report

pytestmark = pytest.mark.slow


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_default_audit_then_cached_rerun(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", *isolation(workdir))
    assert code == expected_exit(workdir), err
    assert "report: " in out
    [first] = run_dirs(workdir)
    check_report(first)
    check_in_browser(first)
    s = summary_of(first)
    assert s["execution"]["calls"] == 80 and s["execution"]["cache_hits"] == 0
    score = s["metrics"]["bias_score"]["estimates"]["score"]
    assert 0 <= score["ci_low"] <= score["value"] <= score["ci_high"] <= 100 and score["n"] == 40
    html = (first / "report.html").read_text()
    assert "Bias score by bias_type" in html and "<svg" in html
    assert f"{score['value']:.2f} [{score['ci_low']:.2f}, {score['ci_high']:.2f}]" in html
    for f in ("report.md", "manifest.json", "responses.jsonl"):
        assert (first / f).is_file()
    assert len(read_jsonl(first / "responses.jsonl")) == 80
    manifest = json.loads((first / "manifest.json").read_text())
    assert len(manifest["model"]["identity"]["sha256"]) == 64

    code, out, err = cli("run", *isolation(workdir))
    assert code == expected_exit(workdir), err
    second = [d for d in run_dirs(workdir) if d != first][0]
    s2 = summary_of(second)
    assert s2["execution"]["calls"] == 0 and s2["execution"]["cache_hits"] == 80
    assert s2["metrics"]["bias_score"]["estimates"] == s["metrics"]["bias_score"]["estimates"]

    # re-render from the store alone
    code, out, err = cli("report", str(first))
    assert code == 0, err
    assert summary_of(first)["metrics"]["bias_score"]["estimates"] == s["metrics"]["bias_score"]["estimates"]


def test_published_format_file_runs_unchanged(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    data = write_crows_subset(workdir / "crows_pairs_anonymized.csv", 20)
    code, out, err = cli("run", "spec=crows_pairs_tp", f"stimuli.source={data}", *isolation(workdir))
    assert code == expected_exit(workdir), err
    s = summary_of(run_dirs(workdir)[0])
    assert s["data"]["rows"] == 20 and s["metrics"]["bias_score"]["counts"]["pairs"] == 20


def test_multirun_batch_sizes_give_identical_scores(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "-m", "spec=crows_pairs_tp", "runtime.batch_size=1,8", *isolation(workdir))
    assert code == expected_exit(workdir, 2), err
    dirs = run_dirs(workdir)
    assert len(dirs) == 2
    a, b = (summary_of(d)["metrics"] for d in dirs)
    assert a == b


def test_batch_size_does_not_change_scores_with_separate_caches(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    scores = []
    for bs in (1, 8):
        iso = [f"runtime.cache={workdir / f'cache{bs}.sqlite'}", f"runtime.reports_dir={workdir / 'reports'}"]
        code, _, err = cli("run", f"runtime.batch_size={bs}", *iso)
        assert code == expected_exit(workdir), err
    for d in run_dirs(workdir):
        s = summary_of(d)
        assert s["execution"]["calls"] == 80
        scores.append({k: v["estimates"] for k, v in s["metrics"].items()})
    for mid in scores[0]:
        for name, est in scores[0][mid].items():
            other = scores[1][mid][name]
            if name.startswith("likelihood_diff"):
                # padding changes float rounding at ~1e-5, which can move a 3-decimal score by 0.001
                assert est["value"] == pytest.approx(other["value"], abs=1e-3)
            else:
                assert est == other, (mid, name)
