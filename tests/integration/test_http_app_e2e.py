"""`hiring_impact` against a deployed application, end to end (issue 43, section 4,
acceptance 4 and 5): the shipped example runs the spec against the fixture screening
service through the `http_app` backend and produces the LL144-style impact-ratio table
from its decisions; the service's decisions recorded as a CSV and replayed with
`model=recorded` give the same table, estimate for estimate. The docs' two recipes
("Auditing a deployed application", "Recorded decisions") are run as written. The
service's key never reaches the run folder or the cache.

Expected figures by hand from the service's rule (tests/fixtures/screening_service):
invited man 19/24, woman 14/24; Asian 12/12, Black 2/12, Hispanic 7/12, White 12/12;
woman+Hispanic 1/6 (the nurse). Katz interval of a ratio as in test_impact_ratio_e2e."""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import norm

from tests.conftest import isolation
from tests.fixtures.screening_service import KEY_ENV, export_decisions, serving
from tests.helpers import REPO, read_jsonl
from tests.integration.test_http_recipes import recipe

pytestmark = pytest.mark.slow

KEY = "sk-screening-e2e-7f3a9c2d41b8e605"
PROFILES = REPO / "specs" / "data" / "hiring_profiles.csv"
SHIPPED_CSV = REPO / "tests" / "fixtures" / "screening_service" / "decisions.csv"
CONF = REPO / "tests" / "fixtures" / "screening_service" / "conf"


def _summary(cli, workdir: Path, *args: str) -> tuple[dict[str, Any], Path]:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", *args, *isolation(workdir))
    assert code in (0, 1, 3), out + err
    [run] = list((workdir / "reports").rglob("summary.json"))
    return json.loads(run.read_text(encoding="utf-8")), run.parent


def _check_table(s: dict[str, Any]) -> None:
    assert s["execution"]["failures"] == 0
    est = s["metrics"]["impact"]["estimates"]
    assert est["rate.gender.man"]["value"] == pytest.approx(19 / 24)
    assert est["rate.gender.woman"]["value"] == pytest.approx(14 / 24)
    w = est["ratio.gender.woman"]
    se = math.sqrt(1 / 14 - 1 / 24 + 1 / 19 - 1 / 24)  # Katz, two identical answers per candidate
    z = norm.ppf(0.975)
    assert w["value"] == pytest.approx(14 / 19)
    assert (w["ci_low"], w["ci_high"]) == (pytest.approx(14 / 19 * math.exp(-z * se)),
                                           pytest.approx(14 / 19 * math.exp(z * se)))
    assert est["ratio.race.Black"]["value"] == pytest.approx(2 / 12)
    assert est["ratio.race.Hispanic"]["value"] == pytest.approx(7 / 12)
    assert est["ratio.race.White"]["value"] == pytest.approx(1.0)
    assert est["lowest.race"]["value"] == pytest.approx(2 / 12)
    assert est["ratio.gender+race.woman+Hispanic"]["value"] == pytest.approx(1 / 6)
    tables = {t["title"]: t for t in s["metrics"]["impact"]["tables"]}
    assert list(tables) == ["Impact ratios by gender", "Impact ratios by race", "Impact ratios by gender x race"]
    assert {r[0]: r for r in tables["Impact ratios by race"]["rows"]}["Black"][8] == "below 0.8"


def _table(s: dict[str, Any]) -> dict[str, Any]:
    return {m: (s["metrics"][m]["estimates"], s["metrics"][m]["tables"]) for m in ("impact", "invite_rate")}


def _no_key_in(*places: Path) -> None:
    for place in places:
        for f in ([place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]):
            assert KEY.encode() not in f.read_bytes(), f


def test_live_application_and_its_recorded_decisions_give_the_same_table(
        workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, KEY)
    live_dir, rec_dir = workdir / "live", workdir / "recorded"
    for d in (live_dir, rec_dir):
        (d / "reports").mkdir(parents=True)
    with serving(key=KEY) as (url, seen):
        live, run = _summary(cli, live_dir, "spec=hiring_impact", f"hydra.searchpath=[biasaudit-specs://specs,file://{CONF}]",
                             "model=screening_service", f"model.request.url={url}/screen")
        recorded_csv = workdir / "decisions.csv"
        recorded_csv.write_text(export_decisions(url, PROFILES, KEY), encoding="utf-8")
    _check_table(live)
    # each of the 48 applicants was its own session, asked once per framing, with the key
    sessions = [r["headers"]["X-Session-Id"] for r in seen.requests if r["path"] == "/screen"
                and "note" in r["body"]]
    assert len(sessions) == 96 and len(set(sessions)) == 48 and "audit-p2-man-black" in sessions
    assert all(r["headers"]["Authorization"] == f"Bearer {KEY}" for r in seen.requests)
    _no_key_in(run, live_dir / "cache.sqlite")
    trail = read_jsonl(run / "responses.jsonl")
    assert {t["request"]["stimulus"]["fields"]["race"] for t in trail} == {"Asian", "Black", "Hispanic", "White"}
    # the record of the same decisions, audited offline: the same table
    replayed, _ = _summary(cli, rec_dir, "spec=hiring_impact", "model=recorded", f"model.path={recorded_csv}")
    assert _table(replayed) == _table(live)
    assert [v["verdict"] for v in replayed["verdicts"]] == [v["verdict"] for v in live["verdicts"]]
    # the shipped decisions.csv is this service's record
    assert recorded_csv.read_text(encoding="utf-8") == SHIPPED_CSV.read_text(encoding="utf-8")


def _free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_the_docs_recipes_run_as_written(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    export, serve, run_live = recipe("application")
    (run_recorded,) = recipe("recorded")
    assert export == f"export {KEY_ENV}=..."
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.chdir(REPO)  # the recipes' relative paths are the repository's
    assert serve.startswith(".venv/bin/python ") and serve.endswith("&")
    argv = [sys.executable, *shlex.split(serve[:-1])[1:]]
    port = int(argv[argv.index("--port") + 1])
    assert _free(port), f"port {port} is taken"
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while _free(port):
            assert proc.poll() is None and time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)
        results = []
        for i, line in enumerate((run_live, run_recorded)):
            d = workdir / str(i)
            (d / "reports").mkdir(parents=True)
            args = shlex.split(line)
            assert args[:2] == ["biasaudit", "run"]
            results.append(_summary(cli, d, *args[2:]))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    (live, run), (replayed, _) = results
    _check_table(live)
    assert _table(replayed) == _table(live)
    _no_key_in(run, workdir / "0" / "cache.sqlite")
