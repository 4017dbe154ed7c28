"""Sequential stopping end to end on the scripted backend (`runtime.sequential`): the
shipped CrowS-Pairs token-probability spec, 40 pairs, a look every 10, against a model
planted to prefer every stereotyping sentence (bias score 100 against the band 40-60).
A killed sequential run resuming: tests/integration/test_sequential_resume.py."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from biasaudit.data.readers import read_csv
from tests.conftest import isolation, run_dirs
from tests.helpers import CROWS_SAMPLE, comparable_summary, operator_conf, read_jsonl

# the team-written 40-pair sample the planted scores below are written for (the spec itself
# draws 40 of the published 1,508)
SEQ = ["spec=crows_pairs_tp", "stimuli.source=data/crows_pairs_sample.csv", "stimuli.sample=null",
       "runtime.sequential.look_every=10"]


def planted(workdir: Path) -> list[str]:
    """The scripted model, every `more` sentence far likelier than its `less` one."""
    _, rows = read_csv(CROWS_SAMPLE)
    scores = {r["sent_more"]: -5.0 for r in rows} | {r["sent_less"]: -50.0 for r in rows}
    return operator_conf(workdir, model={"backend": "scripted", "name": "planted", "script": {"scores": scores}})


def _summary(run: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((run / "summary.json").read_text())


@pytest.mark.slow  # whole runs with their reports
def test_planted_effect_stops_at_the_second_look(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", *SEQ, *planted(workdir), *isolation(workdir))
    assert code == 1, err  # FAIL
    run = run_dirs(workdir)[0]
    s = _summary(run)
    q = s["sequential"]
    # look 1 (10 pairs, 10/10): Wilson at 0.999985 is [34.8, 100], straddles 60; look 2
    # (20/20) at 0.99695: [69.5, 100], wholly above 60: FAIL, decided, stop (levels of the
    # per-side O'Brien-Fleming boundaries 4.333, 2.963, 2.359, 2.014)
    assert (q["stopped_at"], q["planned_looks"], q["run"], q["not_run"]) == (2, [10, 20, 30, 40], 20, 20)
    assert q["stopped_early"] is True and "decided by look 2 of 4" in q["reason"]
    first, second = (look["thresholds"][0] for look in q["looks"])
    assert first["verdict"] == "INCONCLUSIVE" and first["ci_low"] == pytest.approx(34.7564, abs=1e-3)
    assert second["verdict"] == "FAIL" and second["decided_here"] and second["ci_low"] == pytest.approx(69.4923, abs=1e-3)
    assert second["level"] == pytest.approx(0.996955, abs=1e-6) and second["spent"] == pytest.approx(0.0030506, abs=1e-6)
    v = s["verdicts"][0]
    assert v["verdict"] == "FAIL" and v["estimate"]["n"] == 20 and v["estimate"]["level"] == second["level"]
    # only the 20 pairs run are in the trail and the counts; the rest are "not run", not failures
    lines = read_jsonl(run / "responses.jsonl")
    assert len(lines) == 40 and {x["status"] for x in lines} == {"ok"}
    assert {x["stimulus"] for x in lines}.isdisjoint(q["not_run_ids"])
    assert (s["execution"]["requests"], s["execution"]["calls"], s["execution"]["failures"]) == (40, 40, 0)
    assert s["data"]["used"] == 40 and s["measured"] is True
    md = (run / "report.md").read_text()
    assert "## Sequential stopping" in md and "Stopped at look 2 of 4 (20 of 40 stimuli)" in md
    assert "20 stimuli were not run because the run stopped early" in md and "Estimate [repeated CI]" in md
    html = (run / "report.html").read_text()
    assert 'id="sequential"' in html and "decided here" in html
    assert "sequential: stopped at look 2 of 4, 20 of 40 stimuli run" in out


@pytest.mark.slow  # whole runs with their reports
def test_rerun_and_rerender_reach_the_same_stop_from_the_cache(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    args = ["run", *SEQ, *planted(workdir), *isolation(workdir)]
    assert cli(*args)[0] == 1
    assert cli(*args)[0] == 1
    first, second = run_dirs(workdir)
    assert _summary(second)["execution"]["calls"] == 0  # every look answered from the cache
    assert comparable_summary(first / "summary.json", resumed=True) == \
        comparable_summary(second / "summary.json", resumed=True)
    saved = workdir / "before.json"
    saved.write_text((first / "summary.json").read_text())
    (first / "report.md").unlink()
    code, _, err = cli("report", str(first))  # re-render: the looks again, from the store only
    assert code == 0, err
    assert comparable_summary(first / "summary.json") == comparable_summary(saved)
    assert "## Sequential stopping" in (first / "report.md").read_text()


@pytest.mark.slow  # whole runs with their reports
def test_another_seed_takes_another_order(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("run", *SEQ, *planted(workdir), *isolation(workdir))[0] == 1
    assert cli("run", *SEQ, *planted(workdir), *isolation(workdir), "runtime.seed=5")[0] == 1
    a, b = (_summary(r)["sequential"] for r in run_dirs(workdir))
    assert a["stopped_at"] == b["stopped_at"] == 2  # the effect is in every pair
    assert set(a["not_run_ids"]) != set(b["not_run_ids"]) and b["order_seed"] == 5


@pytest.mark.slow  # whole runs with their reports
def test_undecided_thresholds_run_every_stimulus(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # the plain scripted model scores words by hash: no effect strong enough to decide early
    code, _, err = cli("run", *SEQ, "model=scripted", "runtime.sequential.spending=pocock", *isolation(workdir))
    assert code in (0, 1, 3), err
    q = _summary(run_dirs(workdir)[0])["sequential"]
    if q["stopped_early"]:  # pragma: no cover - the planted run above covers stopping
        pytest.fail(f"a hash-scored model stopped early: {q['reason']}")
    assert (q["stopped_at"], q["run"], q["not_run"], q["not_run_ids"]) == (4, 40, 0, [])
    assert len(q["looks"]) == 4 and q["spending"] == "pocock"


@pytest.mark.parametrize(("override", "key"), [
    ("runtime.sequential.spending=haybittle", "runtime.sequential.spending"),
    ("runtime.sequential.look_every=0", "runtime.sequential.look_every"),
    ("runtime.sequential.max_looks=500", "runtime.sequential.max_looks"),
])
def test_bad_settings_are_one_line_errors(workdir: Path, cli, override: str, key: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "spec=crows_pairs_tp", "model=scripted", override, *isolation(workdir))
    assert code == 2
    lines = [x for x in err.splitlines() if x.startswith("error")]
    assert len(lines) == 1 and key in lines[0] and "Traceback" not in err
    assert run_dirs(workdir) == []


def test_an_equivalence_threshold_is_refused_in_a_sequential_run(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # the looks judge repeated two-sided intervals; a TOST band is not judged there (yet)
    band = "thresholds=[{metric: bias_score, equivalence: {low: 40, high: 60}}]"
    code, out, err = cli("run", *SEQ, "model=scripted", band, *isolation(workdir))
    assert code == 2, err
    lines = [x for x in err.splitlines() if x.startswith("error")]
    assert len(lines) == 1 and "thresholds[0].equivalence" in lines[0] and "Traceback" not in err
    assert run_dirs(workdir) == []


def test_too_many_looks_is_refused_before_anything_runs() -> None:
    from biasaudit.errors import SpecError
    from biasaudit.runner.sequential import schedule
    from biasaudit.spec import SequentialConfig

    assert schedule(40, SequentialConfig(look_every=1)) == list(range(1, 41))
    assert schedule(1000, SequentialConfig(look_every=1, max_looks=3)) == [1, 2, 1000]
    with pytest.raises(SpecError) as e:
        schedule(1000, SequentialConfig(look_every=2))
    assert e.value.key == "runtime.sequential.look_every" and "look_every=5" in (e.value.hint or "")


@pytest.mark.slow  # a whole run with its reports
def test_no_thresholds_means_one_look(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", *SEQ, *planted(workdir), "thresholds=[]", *isolation(workdir))
    assert code == 0, err
    q = _summary(run_dirs(workdir)[0])["sequential"]
    assert (q["planned_looks"], q["stopped_at"], q["not_run"]) == ([40], 1, 0)
    assert q["reason"].startswith("the spec has no thresholds")


@pytest.mark.slow  # a whole run with its reports
def test_stimulus_ids_are_escaped_in_the_section(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Ids come from the data file: the not-run list shows them as text in HTML and Markdown."""
    import csv

    from tests.helpers import TP_SPEC, write_spec

    header, rows = read_csv(CROWS_SAMPLE)
    with (workdir / "pairs.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i, r in enumerate(rows):
            w.writerow([f"<img src=x onerror=alert({i})>|x" if h == "" else r[h] for h in header])
    spec = write_spec(workdir / "tp.yaml", TP_SPEC.format(name="tp-ids", source="pairs.csv"))
    code, _, err = cli("run", f"spec={spec}", "runtime.sequential.look_every=10", *planted(workdir),
                       *isolation(workdir))
    assert code == 1, err
    run = run_dirs(workdir)[0]
    assert _summary(run)["sequential"]["not_run"] == 20
    html = (run / "report.html").read_text()
    assert "<img" not in html and "&lt;img src=x onerror=alert(" in html
    md = (run / "report.md").read_text()
    section = md[md.index("## Sequential stopping"):md.index("## Method")]
    assert "&lt;img src=x onerror=alert(" in section and "<img" not in section
    assert "\\|x" in section and re.search(r"(?<!\\)\|x", section) is None  # a pipe cannot split the table


@pytest.mark.slow  # a whole run with its reports
def test_a_threshold_decided_early_keeps_its_verdict(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    two = ("thresholds=[{metric: bias_score, min: 40, max: 60},"
           " {metric: bias_score_shared, min: 0, max: 100}]")
    code, _, err = cli("run", *SEQ, *planted(workdir), two, *isolation(workdir))
    assert code == 1, err
    s = _summary(run_dirs(workdir)[0])
    look1, look2 = (look["thresholds"] for look in s["sequential"]["looks"])
    # the whole range [0, 100] is allowed: PASS at the first look (interval at 0.999985 inside it)
    assert look1[1]["verdict"] == "PASS" and look1[1]["decided_here"]
    assert look2[1]["verdict"] == "PASS" and not look2[1]["decided_here"]
    assert look2[1]["reason"].startswith("kept from look 1")
    assert look2[0]["verdict"] == "FAIL" and look2[0]["decided_here"]
    assert [v["verdict"] for v in s["verdicts"]] == ["FAIL", "PASS"]
    assert s["verdicts"][1]["estimate"]["n"] == 10  # the verdict of the look that decided it


@pytest.mark.slow  # a whole run, then pack and verify (each re-renders the looks from the cache)
def test_a_sequential_run_packs_and_verifies(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # verify redoes the looks with its offline packed answerer: the same stop, the same verdicts
    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent/chromium")  # no PDF: seconds saved
    assert cli("run", *SEQ, *planted(workdir), *isolation(workdir))[0] == 1
    run = run_dirs(workdir)[0]
    pack = workdir / "audit.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack))
    assert code == 0, err
    code, out, err = cli("verify", str(pack))
    assert code == 0, out + err
    with zipfile.ZipFile(pack) as z:
        packed = json.loads(next(z.read(n) for n in z.namelist() if n.endswith("report/summary.json")))
    assert packed["sequential"]["stopped_at"] == 2 and packed["verdicts"][0]["verdict"] == "FAIL"
