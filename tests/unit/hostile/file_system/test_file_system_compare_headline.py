"""`biasaudit compare` on a run folder whose summary.json holds NaN or an infinity (issue
26, low): biasaudit writes null for an undefined number and never NaN, so such a file was
edited or damaged; it is one line naming the file and the key path, exit code 2, and no
compare folder is written. Before, a NaN headline died in the ranking (ValueError, exit
70) and a NaN interval bound in writing compare.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec
from tests.unit.hostile._cases import error_lines

Edit = Callable[[dict[str, Any]], str]
"""Damages a summary (parsed) in place; returns the key path the error must name."""


def _headline(s: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    mid, m = next(iter(s["metrics"].items()))
    return f"metrics.{mid}.estimates.{m['headline']}", m["estimates"][m["headline"]]


def _set(field: str, value: object) -> Edit:
    def edit(s: dict[str, Any]) -> str:
        path, est = _headline(s)
        est[field] = value
        return f"{path}.{field}"
    return edit


def _group(s: dict[str, Any]) -> str:
    path, est = _headline(s)
    est["groups"] = {"race": {**est, "groups": {}, "value": float("inf")}}
    return f"{path}.groups.race.value"


EDITS: dict[str, Edit] = {
    "NaN headline": _set("value", float("nan")),
    "the string NaN": _set("value", "NaN"),
    "the string Infinity": _set("value", "Infinity"),
    "Infinity headline": _set("value", float("inf")),
    "-Infinity headline": _set("value", float("-inf")),
    "NaN lower bound": _set("ci_low", float("nan")),
    "Infinity upper bound": _set("ci_high", float("inf")),
    "infinite group estimate": _group,
}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished scripted runs (seeds 1 and 2), copied into each test."""
    from biasaudit.cli.app import main

    w = tmp_path_factory.mktemp("runs")
    (w / "reports").mkdir()
    spec = tp_spec(w, 4)
    for seed in (1, 2):
        main(["run", f"spec={spec}", "model=scripted", f"runtime.seed={seed}", *isolation(w)])
    assert len(run_dirs(w)) == 2
    return w / "reports"


@pytest.mark.parametrize("name", list(EDITS))
def test_a_summary_with_a_non_finite_number_is_one_line(two_runs: Path, tmp_path: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(two_runs, runs)
    target = sorted(runs.rglob("summary.json"))[0]
    s = json.loads(target.read_text())
    key = EDITS[name](s)
    target.write_text(json.dumps(s))  # json.dumps writes NaN and Infinity as the bare words
    code, out, err = cli("compare", str(runs), "--out", str(tmp_path / "cmp"))
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {target}: ") and f"{key} is not a finite number" in lines[0], lines[0]
    assert "hint:" in lines[0]
    assert not (tmp_path / "cmp").exists()


def test_undamaged_runs_compare(two_runs: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("compare", str(two_runs), "--out", str(tmp_path / "cmp"))
    assert code == 0 and "compared 2 runs" in out, err
