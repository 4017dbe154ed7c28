"""The command line a new user meets (issue 18): --version, `list`, usage lines and
descriptions, `init`, stage messages, per-request progress accounting, the reproducible
re-run line for a spec given by path, and the CSV exports beside summary.json."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml

import biasaudit
from biasaudit._util.paths import list_specs
from biasaudit.cli.app import build_parser, main
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, verdict_code


def test_version_and_every_command_described(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"biasaudit {biasaudit.__version__}"
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():  # type: ignore[union-attr]
        assert sp.description, f"`biasaudit {name}` has no description"
        takes_overrides = name in ("run", "validate", "plan", "calibrate")
        assert sp.format_usage().rstrip().endswith("[overrides...]") == takes_overrides, name


def test_list_names_every_shipped_spec_and_model(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("list", "specs")
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert code == 0 and sorted(rows) == list_specs()
    assert rows["crows_pairs_tp"] == "token_probability: CrowS-Pairs token-probability bias audit"
    assert rows["default_suite"].startswith("suite: ") and rows["default_suite"].endswith("(5 members)")
    code, out, _ = cli("list", "models")
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert code == 0 and rows["smollm2"].startswith("SmolLM2-135M-Instruct, shipped as a GGUF file")
    assert all(rows.values())
    code, out, _ = cli("list", "metrics")
    assert code == 0 and {line.split()[0] for line in out.splitlines()} >= {"bias_score", "nli_bias", "fisco"}
    with pytest.raises(SystemExit) as refused:  # argparse refuses an unknown catalog
        cli("list", "bogus")
    assert refused.value.code == 2

def test_init_scaffolds_a_project_that_validates_from_its_folder(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("init", str(workdir / "my audit"))
    assert code == 0 and out.strip().endswith("biasaudit run spec=./audit.yaml")
    project = workdir / "my audit"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == [
        "README.md", "audit.yaml", "data/pairs.csv", "spec.schema.json"]
    spec = yaml.safe_load((project / "audit.yaml").read_text())
    assert spec["audit"]["name"] == "my-audit" and spec["stimuli"]["format"] == "crows_pairs"
    header = (project / "data" / "pairs.csv").read_text().splitlines()[0]
    assert header == ",sent_more,sent_less,stereo_antistereo,bias_type,annotations,anon_writer,anon_annotators"
    monkeypatch.chdir(project)
    code, out, err = cli("validate", "spec=./audit.yaml")
    assert code == 0 and "12 stimuli, 24 requests" in out, err
    # a folder that holds files is refused, in one line
    code, _, err = cli("init", str(project))
    assert code == 2 and err.count("\n") == 1 and "not empty" in err


def test_path_spec_rerun_line_reproduces_the_run(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (workdir / "audits").mkdir()
    spec = tp_spec(workdir / "audits", 6)
    monkeypatch.chdir(workdir / "audits")
    code, out, err = cli("run", f"spec=./{spec.name}", "model=scripted", "runtime.seed=3", *isolation(workdir))
    [first] = run_dirs(workdir)
    assert code == verdict_code(first), err
    s1 = json.loads((first / "summary.json").read_text())
    rerun = s1["reproducibility"]["rerun"]
    assert f"spec={spec.resolve()}" in rerun  # the file that ran, not a bare stem
    assert f"<code>{rerun}</code>" in (first / "report.html").read_text()
    manifest = json.loads((first / "manifest.json").read_text())
    hydra_overrides = yaml.safe_load((first / ".hydra" / "overrides.yaml").read_text())
    assert manifest["overrides"] == hydra_overrides == shlex.split(rerun)[2:]
    # stage messages, in order, on stderr
    stages = [ln[2:].split(" ")[0] for ln in err.splitlines() if ln.startswith("· ")]
    assert stages[:3] == ["planning", "plan:", "model"] and stages[-2:] == ["measuring:", "reporting:"]

    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    argv = shlex.split(rerun)
    assert argv[:2] == ["biasaudit", "run"]
    code, _, err = cli(*argv[1:])
    [second] = [d for d in run_dirs(workdir) if d != first]
    assert code == verdict_code(second), err
    s2 = json.loads((second / "summary.json").read_text())
    assert s2["execution"]["calls"] == 0  # every answer from the cache
    assert s2["metrics"] == s1["metrics"] and s2["verdicts"] == s1["verdicts"]
    assert s2["spec_sha256"] == s1["spec_sha256"] and s2["data"] == s1["data"]


def test_csv_exports_hold_the_summary_numbers(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 8)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", "+metrics.0.by=[bias_type]", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    s = json.loads((run / "summary.json").read_text())
    est = pd.read_csv(run / "estimates.csv", keep_default_na=False)
    assert list(est.columns) == ["metric", "estimate", "headline", "cell", "group", "value", "ci_low", "ci_high",
                                 "n", "level", "method", "note"]
    # each estimate's own row comes first (a nested `groups` breakdown, if any, after it)
    pooled = est[(est.cell == "") & ~est.duplicated(["metric", "estimate", "cell"])]
    want = s["metrics"]["bias_score"]["estimates"]
    # per-group rows (the bias type, and the pair's direction: stereotype or anti-stereotype)
    # name their field and level; the pooled score and the contrasts name none
    for field in ("bias_type", "direction"):
        per_group = pooled[pooled.estimate.str.startswith(f"{field}.")]
        assert len(per_group) and (per_group.group == f"{field}=" + per_group.estimate.str[len(field) + 1:]).all()
    assert (pooled[~pooled.estimate.str.startswith(("bias_type.", "direction.", "contrast."))].group == "").all()
    assert sorted(pooled.estimate) == sorted(want)
    for row in pooled.itertuples():
        e = want[row.estimate]
        assert (row.value, row.n, row.method) == (e["value"], e["n"], e["method"])
        assert (row.ci_low, row.ci_high) == (e["ci_low"], e["ci_high"])  # exact: repr round-trips floats
    assert pooled[pooled.headline].estimate.tolist() == ["score"]
    items = pd.read_csv(run / "items.csv")
    want_items = s["metrics"]["bias_score"]["items"]
    assert len(items) == len(want_items) == 8
    assert items["diff"].tolist() == [i["diff"] for i in want_items]
    assert {"metric", "stimulus", "more", "less", "bias_type"} <= set(items.columns)


def test_progress_counts_rows_finished_inside_a_batch_once(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from biasaudit._util.progress import show
    from biasaudit.backends.base import BatchWatch, RowsFinished, items_finished
    from biasaudit.engine.executor import _LineBar

    show()
    bar = _LineBar(4, "calls")
    token = items_finished.set(bar.partial)
    try:
        rows = RowsFinished({0}, BatchWatch(4, 2))
    finally:
        items_finished.reset(token)
    assert not rows(torch.tensor([[5, 7], [5, 0], [5, 9], [5, 9]]), None).any()  # row 1 ends; nothing is stopped
    rows(torch.tensor([[7, 0], [0, 0], [9, 0], [9, 3]]), None)  # rows 0 and 2 end; row 1 is not counted again
    assert bar.done == 3
    for _ in range(4):  # then the batch emits all four
        bar.update(1)
    assert bar.done == 4 and bar.credited == 0
    assert [ln for ln in capsys.readouterr().err.splitlines() if "calls:" in ln] == [
        "· calls: 1/4 done", "· calls: 3/4 done", "· calls: 4/4 done"]
