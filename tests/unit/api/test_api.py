"""The Python API (issue 18, acceptance 3): `biasaudit.run(...)` returns DataFrames whose
numbers are summary.json's, typed verdicts and summary; errors raise `BiasAuditError`;
`import biasaudit` stays light; `help(biasaudit)` shows the API."""

from __future__ import annotations

import json
import logging
import math
import pydoc
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import biasaudit
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec

SUITE = """
suite:
  name: api-suite
  subjects: [scripted]
  members:
    - {{spec: {spec}, label: tp}}
"""


def _same(a: object, b: object) -> bool:
    """Equal, with NaN/None (an empty csv-style cell) counted equal to a missing value."""
    def missing(x: object) -> bool:
        return x is None or (isinstance(x, float) and math.isnan(x))
    return (missing(a) and missing(b)) or a == b


def expected_estimates(summary: dict) -> list[tuple]:
    """Every estimate of summary.json as (metric, estimate, cell, group, value, ci_low,
    ci_high, n), walked here independently of the API's own table code."""
    out = []

    def group_of(e: dict) -> str:
        # the group summary.json records with the estimate (`<field>=<level>`, a contrast's `<a>-<b>`)
        g = e.get("group")
        return f"{g['factor']}={'-'.join(g['levels'])}" if g else ""

    def add(mid: str, name: str, cell: str, e: dict, by: list[str]) -> None:
        out.append((mid, name, cell, group_of(e), e["value"], e["ci_low"], e["ci_high"], e["n"]))
        for g, ge in (e.get("groups") or {}).items():
            out.append((mid, name, cell, g, ge["value"], ge["ci_low"], ge["ci_high"], ge["n"]))

    for mid, m in summary["metrics"].items():
        by = list(m.get("params", {}).get("by") or [])
        for name, e in m["estimates"].items():
            add(mid, name, "", e, by)
        for name, cells in (m.get("cells") or {}).items():
            for cell, e in cells.items():
                add(mid, name, cell, e, by)
    return out


def test_run_returns_dataframes_equal_to_summary_json(workdir: Path) -> None:
    spec = tp_spec(workdir, 8)
    root_handlers = list(logging.getLogger().handlers)
    argv = list(sys.argv)
    result = biasaudit.run(spec, ["model=scripted", "+metrics.0.by=[bias_type]", *isolation(workdir)])
    assert isinstance(result, biasaudit.RunResult)
    [run_dir] = run_dirs(workdir)
    assert result.run_dir == run_dir
    on_disk = json.loads((run_dir / "summary.json").read_text())

    # estimates: every pooled, per-cell and per-group estimate, with the same numbers
    est = result.estimates
    assert isinstance(est, pd.DataFrame)
    got = [tuple(r) for r in est[["metric", "estimate", "cell", "group", "value", "ci_low", "ci_high", "n"]]
           .itertuples(index=False)]
    want = expected_estimates(on_disk)
    assert len(got) == len(want) and any(r[1].startswith("bias_type.") for r in want)  # the breakdown is in
    for g, w in zip(got, want, strict=True):
        assert all(_same(a, b) for a, b in zip(g, w, strict=True)), (g, w)
    headline = est[est.headline & (est.cell == "") & (est.group == "")]
    assert headline.estimate.tolist() == ["score"]
    assert headline.value.iloc[0] == on_disk["metrics"]["bias_score"]["estimates"]["score"]["value"]
    # and the same table as estimates.csv beside summary.json
    csv = pd.read_csv(run_dir / "estimates.csv", keep_default_na=False)
    assert csv.value.tolist() == est.value.tolist()

    # items: one row per scored pair, its per-item value as in summary.json
    items = result.items
    want_items = on_disk["metrics"]["bias_score"]["items"]
    assert len(items) == len(want_items) == 8
    assert items["diff"].tolist() == [i["diff"] for i in want_items]
    assert items["stimulus"].tolist() == [i["stimulus"] for i in want_items]

    # typed summary and verdicts
    assert isinstance(result.summary, biasaudit.RunSummary)
    assert result.summary.model_dump(mode="json")["metrics"] == on_disk["metrics"]
    assert [(v.metric, v.verdict, v.estimate.value) for v in result.verdicts] == [
        (v["metric"], v["verdict"], v["estimate"]["value"]) for v in on_disk["verdicts"]]
    assert result.overall == on_disk["overall"]
    assert result.exit_code() == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[on_disk["overall"]]
    assert result.exit_code("never") == 0
    assert result.report_path == run_dir / "report.html" and result.report_path.is_file()
    loaded = biasaudit.RunResult.load(run_dir)
    assert loaded.summary == result.summary and loaded.estimates.equals(result.estimates)

    # a notebook's process is left as it was: no handler added, argv untouched
    assert logging.getLogger().handlers == root_handlers and sys.argv == argv


def test_api_run_writes_a_rerun_line_the_cli_reproduces(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 6)
    first = biasaudit.run(str(spec), ["model=scripted", *isolation(workdir)])
    assert isinstance(first, biasaudit.RunResult)
    rerun = first.summary.reproducibility.rerun
    assert f"spec={spec.resolve()}" in rerun
    monkeypatch.chdir(workdir)
    code, _, err = cli(*shlex.split(rerun)[1:])
    [second] = [d for d in run_dirs(workdir) if d != first.run_dir]
    s2 = json.loads((second / "summary.json").read_text())
    assert s2["execution"]["calls"] == 0 and code in (0, 1, 3), err  # every answer from the cache
    assert s2["metrics"] == first.summary.model_dump(mode="json")["metrics"]


def test_validate_plan_and_compare(workdir: Path) -> None:
    spec = tp_spec(workdir, 8)
    ov = ["model=scripted", *isolation(workdir)]
    v = biasaudit.validate(spec, ov)
    assert (v.cells, v.stimuli, v.requests, v.metrics, v.thresholds) == (1, 8, 16, ["bias_score"], 1)
    p = biasaudit.plan(spec, ov)
    assert (p.items, p.requests, p.cached, p.calls_needed) == (16, 16, 0, 16)
    r1 = biasaudit.run(spec, ov)
    p2 = biasaudit.plan(spec, ov)
    assert (p2.cached, p2.calls_needed) == (16, 0)  # the run's answers are in the cache now
    r2 = biasaudit.run(spec, ov)
    assert isinstance(r1, biasaudit.RunResult) and isinstance(r2, biasaudit.RunResult)
    assert r2.summary.execution.calls == 0
    c = biasaudit.compare([r1, r2], out=workdir / "cmp")
    assert c.report_path.is_file() and len(c.data.runs) == 2
    # one row per run: the same answers (from the cache), the same headline estimate
    rows = c.data.side_by_side.rows
    assert [row.run for row in rows] == [r1.run_dir.name, r2.run_dir.name]
    score = r1.summary.metrics["bias_score"].estimates["score"]
    assert [[row.value, row.ci_low, row.ci_high, row.n] for row in rows] == [
        [score.value, score.ci_low, score.ci_high, score.n]] * 2


def test_suite_through_the_api(workdir: Path) -> None:
    spec = tp_spec(workdir, 6)
    suite = workdir / "suite.yaml"
    suite.write_text(SUITE.format(spec=spec))
    res = biasaudit.run(suite, isolation(workdir))
    assert isinstance(res, biasaudit.SuiteResult)
    assert len(res.runs) == 1 and res.runs[0].overall == res.summary.rows[0].overall
    assert res.report_path is not None and res.report_path.is_file()
    assert biasaudit.validate(suite, isolation(workdir)).runs == 1


def test_errors_raise_biasauditerror_and_write_nothing(workdir: Path) -> None:
    spec = tp_spec(workdir, 4)
    with pytest.raises(biasaudit.BiasAuditError) as e:
        biasaudit.run(spec, ["model=scripted", "stimuli.sourse=x.csv", *isolation(workdir)])
    assert "stimuli.sourse" in str(e.value)
    with pytest.raises(biasaudit.BiasAuditError, match="unknown spec"):
        biasaudit.run("no_such_spec", isolation(workdir))
    with pytest.raises(biasaudit.BiasAuditError) as e:
        biasaudit.validate(workdir / "missing.yaml")
    assert e.value.file is not None and "missing.yaml" in e.value.file
    with pytest.raises(biasaudit.BiasAuditError):  # the override grammar
        biasaudit.plan(spec, ["model=scripted", "runtime.seed=[1"])
    with pytest.raises(biasaudit.BiasAuditError, match="given twice"):
        biasaudit.run(spec, [f"spec={spec}"])
    with pytest.raises(biasaudit.BiasAuditError, match="sweep"):
        biasaudit.plan(spec, ["model=scripted", "runtime.seed=1,2"])
    with pytest.raises(TypeError):
        biasaudit.run(spec, "model=scripted")  # type: ignore[arg-type]
    with pytest.raises(biasaudit.BiasAuditError):
        biasaudit.RunResult.load(workdir)
    assert not any((workdir / "reports").iterdir())


def test_import_is_light_and_help_shows_the_api() -> None:
    code = ("import sys, biasaudit; heavy = [m for m in ('pandas', 'torch', 'hydra', 'transformers', "
            "'biasaudit.api', 'biasaudit.runner.pipeline') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    text = pydoc.render_doc(biasaudit, renderer=pydoc.plaintext)
    for name in ("run(spec", "validate(spec", "plan(spec", "compare(paths", "class RunResult", "BiasAuditError",
                 "result.estimates"):
        assert name in text, name
    assert {"run", "plan", "validate", "compare", "RunResult"} <= set(dir(biasaudit))
    with pytest.raises(AttributeError):
        biasaudit.no_such_thing  # noqa: B018


def test_a_spec_given_as_a_path_does_not_shadow_a_shipped_name_later(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # one process (a notebook, a test session): a copy of a shipped spec given by path,
    # then the shipped spec by name, must be the shipped file, through the API and the CLI
    import shutil

    from tests.helpers import REPO

    (workdir / "data" / "crows_pairs").mkdir(parents=True)
    shutil.copy(REPO / "specs" / "data" / "crows_pairs" / "crows_pairs_anonymized.csv", workdir / "data" / "crows_pairs")
    shutil.copy(REPO / "specs" / "crows_pairs_tp.yaml", workdir / "crows_pairs_tp.yaml")
    assert biasaudit.validate(str(workdir / "crows_pairs_tp.yaml")).spec_file == workdir / "crows_pairs_tp.yaml"
    assert biasaudit.validate("crows_pairs_tp").spec_file == REPO / "specs" / "crows_pairs_tp.yaml"
    assert cli("validate", f"spec={workdir / 'crows_pairs_tp.yaml'}")[0] == 0
    code, out, _ = cli("validate", "spec=crows_pairs_tp")
    assert code == 0 and str(REPO / "specs" / "crows_pairs_tp.yaml") in out


def test_load_runs_reads_many_run_folders_into_one_table_each(workdir: Path) -> None:
    # issue 41, section 5: a loader over many run folders, every row led by its run, audit,
    # model and spec; checked against each summary.json read on its own
    spec_a = tp_spec(workdir, 6, name="tp-a")
    spec_b = tp_spec(workdir, 8, name="tp-b")
    biasaudit.run(spec_a, ["model=scripted", *isolation(workdir)])
    biasaudit.run(spec_b, ["model=scripted", "+metrics.0.by=[bias_type]", *isolation(workdir)])
    dirs = run_dirs(workdir)
    assert len(dirs) == 2
    junk = workdir / "reports" / "not-a-run"
    junk.mkdir(parents=True)
    (junk / "summary.json").write_text("{ not json", encoding="utf-8")
    (workdir / "reports" / "loop").symlink_to(workdir / "reports")  # a link back up is not followed

    runs = biasaudit.load_runs(workdir / "reports")
    assert len(runs) == 2 and [p for p, _ in runs.skipped] == [junk]
    assert "not JSON" in runs.skipped[0][1]
    est = runs.estimates
    assert list(est.columns[:8]) == ["run_id", "run_dir", "audit", "audit_method", "model", "backend", "spec", "overall"]
    for d in dirs:
        on_disk = json.loads((d / "summary.json").read_text())
        mine = est[est.run_dir == str(d)]
        want = expected_estimates(on_disk)
        got = [tuple(r) for r in mine[["metric", "estimate", "cell", "group", "value", "ci_low", "ci_high", "n"]]
               .itertuples(index=False)]
        assert len(got) == len(want) > 0
        assert all(_same(a, b) for g, w in zip(got, want, strict=True) for a, b in zip(g, w, strict=True))
        assert set(mine.audit) == {on_disk["audit"]["name"]} and set(mine.run_id) == {on_disk["run_id"]}
        assert set(mine.model) == {on_disk["model"]["name"]} and set(mine.overall) == {on_disk["overall"]}
        items = runs.items[runs.items.run_dir == str(d)]
        assert items["diff"].tolist() == [i["diff"] for i in on_disk["metrics"]["bias_score"]["items"]]
        verdicts = runs.verdicts[runs.verdicts.run_dir == str(d)]
        assert verdicts.verdict.tolist() == [v["verdict"] for v in on_disk["verdicts"]]
    assert sorted(set(est.audit)) == ["tp-a", "tp-b"]
    # a run given twice (as a folder and as a result) is read once
    again = biasaudit.load_runs([dirs[0], biasaudit.RunResult.load(dirs[0]), workdir / "reports"])
    assert len(again) == 2
    empty = biasaudit.load_runs(junk)
    assert len(empty) == 0 and list(empty.estimates.columns[:2]) == ["run_id", "run_dir"]
    with pytest.raises(biasaudit.BiasAuditError, match="not a folder"):
        biasaudit.load_runs(workdir / "missing")


def test_calling_the_api_leaves_the_callers_warning_filters_alone(workdir: Path) -> None:
    # issue 41, section 5: statsmodels, scipy and pandas add filters when first imported;
    # a notebook's warnings.filters are the same after a run and its tables as before
    spec = tp_spec(workdir, 6)
    script = (
        "import sys, warnings\n"
        "before = list(warnings.filters)\n"
        "import biasaudit\n"
        f"r = biasaudit.run({str(spec)!r}, ['model=scripted', *sys.argv[1:]])\n"
        "r.estimates; r.items; r.verdicts_df; biasaudit.load_runs(r.run_dir).estimates\n"
        "after = list(warnings.filters)\n"
        "print(len(before), len(after), [f for f in after if f not in before])\n"
        "sys.exit(0 if after == before else 1)\n")
    proc = subprocess.run([sys.executable, "-c", script, *isolation(workdir)], capture_output=True, text=True,
                          timeout=600, cwd=workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
