"""Suites on the scripted backend: one run per member x subject, a combined report,
validation before any run, and the triangulation arithmetic against scipy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import kendalltau

from biasaudit.runner.suite import magnitude, triangulate
from biasaudit.verdicts.gating import verdict_exit, worst
from tests.conftest import isolation
from tests.helpers import tp_spec, write_spec
from tests.report_checks import unexplained_numbers


def _sub(workdir: Path, name: str) -> Path:
    (workdir / name).mkdir()
    return workdir / name


def _suite(workdir: Path, members: str) -> Path:
    return write_spec(workdir / "suite.yaml", f"suite:\n  name: mini\n  title: Mini suite\n  members:\n{members}")


def test_suite_runs_every_member_for_every_subject(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    a = tp_spec(_sub(workdir, "a"), n=6, name="tp-a")
    b = tp_spec(_sub(workdir, "b"), n=4, name="tp-b")
    suite = _suite(workdir, f"    - {{spec: a/{a.name}, label: first}}\n    - {{spec: b/{b.name}, label: second}}\n")
    code, out, err = cli("run", "-m", f"spec={suite}", "model=scripted", "model.name=s1,s2", *isolation(workdir))
    [out_dir] = list((workdir / "reports" / "mini").iterdir())
    s = json.loads((out_dir / "summary.json").read_text())
    assert code == worst(verdict_exit(r["overall"]) for r in s["rows"]), err  # the worst member run wins
    assert s["subjects"] == ["s1", "s2"] and [m["id"] for m in s["members"]] == ["first", "second"]
    assert len(s["rows"]) == 4 and s["totals"]["runs"] == 4
    for r in s["rows"]:
        assert (out_dir / r["report"]).is_file()
        member = json.loads((out_dir / r["report"]).with_name("summary.json").read_text())
        assert member["model"]["name"] == r["subject"]
        assert r["estimate"] == member["metrics"]["bias_score"]["estimates"]["score"]
        assert r["magnitude"] == pytest.approx(abs(r["estimate"]["value"] - 50.0))
    assert set(s["verdict_matrix"]["first"]) == {"s1", "s2"}
    assert s["triangulation"]["n_subjects"] == 2 and "at least 3 subjects" in s["triangulation"]["note"]
    html = (out_dir / "report.html").read_text()
    assert 'id="triangulation"' in html and unexplained_numbers(html, s) == []
    assert "mini: overall" in out and "report: " in out


def test_suite_validates_every_member_before_running(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    a = tp_spec(workdir, n=4, name="tp-a")
    bad = write_spec(workdir / "bad.yaml", a.read_text().replace("metrics:", "metricz:"))
    suite = _suite(workdir, f"    - {{spec: {a.name}}}\n    - {{spec: {bad.name}}}\n")
    code, _, err = cli("run", f"spec={suite}", "model=scripted", *isolation(workdir))
    assert code == 2 and "suite member 'bad'" in err and "bad.yaml" in err and "metrics: " in err and "required key is missing" in err
    assert not (workdir / "reports" / "mini").exists() and not (workdir / "cache.sqlite").exists()


def test_suite_file_errors_are_located(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    suite = _suite(workdir, "    - {spec: no_such_spec}\n")
    code, _, err = cli("validate", f"spec={suite}")
    assert code == 2 and "suite.members[0].spec" in err and "no_such_spec" in err
    suite.write_text(suite.read_text() + "  colour: blue\n")
    code, _, err = cli("validate", f"spec={suite}")
    assert code == 2 and "colour" in err


def test_triangulation_matches_scipy() -> None:
    subjects = ["a", "b", "c", "d"]
    mags = {"tp": {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0},
            "nli": {"a": 1.0, "b": 3.0, "c": 2.0, "d": 4.0},
            "flat": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}}
    t = triangulate(["tp", "nli", "flat"], subjects, mags)
    ref = kendalltau([1, 2, 3, 4], [1, 3, 2, 4], variant="b")
    assert t.matrix[0][1] == pytest.approx(ref.statistic) == pytest.approx(2 / 3)
    assert t.matrix[0][0] == pytest.approx(1.0) and t.matrix[0][2] is None  # constant: undefined
    pair = next(p for p in t.pairs if {p.a, p.b} == {"tp", "nli"})
    assert pair.p_value == pytest.approx(ref.pvalue) and pair.n == 4
    assert t.rankings["nli"] == ["d", "b", "c", "a"]
    assert t.ranking_text["nli"] == "d > b > c > a" and t.ranking_text["flat"] == "a = b = c = d"


def test_triangulation_counts_separated_intervals() -> None:
    mags = {"m": {"a": 3.0, "b": 2.0, "c": 1.0}}
    # a and c separated; b overlaps both: 1 of 3 pairs.
    cis = {"m": {"a": (2.5, 3.5), "b": (1.4, 2.6), "c": (0.5, 1.5)}}
    t = triangulate(["m"], ["a", "b", "c"], mags, cis)
    assert (t.separated["m"].separated, t.separated["m"].pairs) == (1, 3)
    assert "within noise" in t.note
    assert magnitude(62.5, 50.0) == 12.5 and magnitude(0.3, None) == 0.3 and magnitude(None, 50.0) is None


def test_plan_and_validate_a_suite(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    a = tp_spec(_sub(workdir, "a"), n=6, name="tp-a")
    b = tp_spec(_sub(workdir, "b"), n=4, name="tp-b")
    suite = _suite(workdir, f"    - {{spec: a/{a.name}}}\n    - {{spec: b/{b.name}}}\n")
    code, out, err = cli("plan", f"spec={suite}", "model=scripted")
    assert code == 0, err
    assert "sweep: 2 jobs, 20 plan items" in out  # (6 + 4) pairs x 2 sentences
    code, out, err = cli("validate", f"spec={suite}", "model=scripted")
    assert code == 0 and "2 run(s) validated" in out
