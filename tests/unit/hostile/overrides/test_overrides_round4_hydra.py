"""Issue 39 red team (round 4): the command line as a channel for code, files and secrets.

Overrides under `hydra.*` (callbacks, logging handlers, the job's environment, run and
output folders, launcher and sweeper targets, the job's name and working folder), config
groups of Hydra's own, resolvers in every quoting a shell allows, and keys built from a
resolver. Every command that takes overrides (`run`, `validate`, `plan`) is tried.

The safe outcome: one line `error: ... (hint: ...)`, exit 2, no run folder, no file made
by the override, nothing of it in a manifest; or, for the settings an operator needs
(`hydra.verbose`, a search path for the operator's own configs), a normal run. Cases
marked `gate` ran on main before issue 39 item 1 (the allow-list of `hydra.*` overrides and
no `_target_` from the command line)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.helpers import operator_conf, tp_spec
from tests.unit.hostile._cases import KEY_ENV, SECRET, assert_no_leak, error_lines

GATE = "issue 39 item 1 (hydra.* overrides allow-listed, no _target_ from the command line), fixed on branch wt-gate"


@dataclass
class Hostile:
    args: Callable[[Path], list[str]]
    """workdir -> overrides (after the spec)."""
    made: list[str] = field(default_factory=list)
    """Paths (relative to workdir, or absolute) the override would create: must stay absent."""
    command: str = "run"
    gate: bool = True
    """Failed before issue 39 item 1's override gate (no mark now: it must pass)."""
    env: str | None = None
    """An environment variable the override would set: must stay unset."""


def _a(*args: str) -> Callable[[Path], list[str]]:
    return lambda w: [a.replace("W/", f"{w}/") for a in args]


CASES: dict[str, Hostile] = {
    "callback shutil.copyfile steals a file (run)": Hostile(_a(
        "+hydra.callbacks.x._target_=shutil.copyfile", "+hydra.callbacks.x.src=/etc/hostname",
        "+hydra.callbacks.x.dst=W/stolen"), ["stolen"]),
    "callback os.makedirs (validate)": Hostile(_a(
        "+hydra.callbacks.x._target_=os.makedirs", "+hydra.callbacks.x.name=W/made-v"), ["made-v"], "validate"),
    "callback os.makedirs (plan)": Hostile(_a(
        "+hydra.callbacks.x._target_=os.makedirs", "+hydra.callbacks.x.name=W/made-p"), ["made-p"], "plan"),
    "callback through ++ (force-add)": Hostile(_a(
        "++hydra.callbacks.y._target_=os.makedirs", "++hydra.callbacks.y.name=W/made-ff"), ["made-ff"]),
    "callback pathlib.Path.touch": Hostile(_a(
        "+hydra.callbacks.z._target_=pathlib.Path.touch", "+hydra.callbacks.z.self=W/touched"), ["touched"]),
    "callback builtins.exec": Hostile(_a(
        "+hydra.callbacks.e._target_=builtins.exec", "+hydra.callbacks.e._args_=['open(\"W/execd\", \"w\")']"),
        ["execd"]),
    "job logging handler _target_": Hostile(_a("+hydra.job_logging.handlers.x._target_=os.makedirs",
                                               "+hydra.job_logging.handlers.x.name=W/made-log"), ["made-log"]),
    "job logging handler class": Hostile(_a("+hydra.job_logging.handlers.x.class=logging.FileHandler",
                                            "+hydra.job_logging.handlers.x.filename=W/log-elsewhere",
                                            "hydra.job_logging.root.handlers=[x]"), ["log-elsewhere"]),
    "hydra logging handler _target_": Hostile(_a("+hydra.hydra_logging.handlers.x._target_=os.makedirs",
                                                 "+hydra.hydra_logging.handlers.x.name=W/made-hl"), ["made-hl"]),
    "job env_set a variable": Hostile(_a("+hydra.job.env_set.RT4_INJECTED=1"), env="RT4_INJECTED"),
    "job env_set LD_PRELOAD": Hostile(_a("+hydra.job.env_set.LD_PRELOAD=W/evil.so"), env="LD_PRELOAD"),
    "job env_copy": Hostile(_a(f"hydra.job.env_copy=[{KEY_ENV}]")),
    "output_subdir climbing out": Hostile(_a("hydra.output_subdir=../../../rt4-escape"), ["rt4-escape"]),
    "output_subdir absolute": Hostile(_a("hydra.output_subdir=W/abs-escape"), ["abs-escape"]),
    "run.dir elsewhere": Hostile(_a("hydra.run.dir=W/elsewhere-run"), ["elsewhere-run"]),
    "sweep.dir elsewhere": Hostile(_a("hydra.sweep.dir=W/elsewhere-sweep"), ["elsewhere-sweep"]),
    "job.chdir": Hostile(_a("hydra.job.chdir=true")),
    "hydra.mode MULTIRUN without -m": Hostile(_a("hydra.mode=MULTIRUN")),
    "launcher _target_ os.system": Hostile(_a("hydra.launcher._target_=os.system")),
    "sweeper _target_ under -m": Hostile(_a("hydra.sweeper._target_=os.system"), command="run -m"),
    "hydra/job_logging group none": Hostile(_a("hydra/job_logging=none")),
    "hydra/hydra_logging group disabled": Hostile(_a("hydra/hydra_logging=disabled")),
    "job name climbing out": Hostile(_a("hydra.job.name=../../rt4-jobname")),
    "searchpath to /etc": Hostile(_a("hydra.searchpath=[file:///etc]"), gate=False),
    "searchpath to a python package": Hostile(_a("hydra.searchpath=[pkg://os]"), command="validate", gate=False),
    "hydra launcher group unknown": Hostile(_a("hydra/launcher=nope"), gate=False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hydra_override_is_refused_in_one_line_and_has_no_effect(workdir: Path, cli, case: str,  # type: ignore[no-untyped-def]
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    h = CASES[case]
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(workdir)  # hydra.job.chdir moves the process: restored after the test
    if h.env:
        monkeypatch.delenv(h.env, raising=False)
    spec = tp_spec(workdir, 3)
    cmd = h.command.split()
    extra = [*isolation(workdir), "model=scripted"] if cmd[0] == "run" else []
    try:
        code, out, err = cli(*cmd, f"spec={spec}", *extra, *h.args(workdir))
        env_after = os.environ.get(h.env) if h.env else None
    finally:
        if h.env:
            os.environ.pop(h.env, None)
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], (code, err)
    for m in h.made:
        p = Path(m) if m.startswith("/") else workdir / m
        assert not p.exists(), f"the override made {p}"
    assert not (workdir.parent / "rt4-escape").exists() and not (workdir.parent.parent / "rt4-escape").exists()
    assert env_after is None, f"the override set {h.env}"
    assert not any((workdir / "reports").rglob("manifest.json")), "a run folder was written"
    assert_no_leak(workdir, out, err)


# -- what an operator needs keeps working ------------------------------------------------------

def test_hydra_verbose_is_allowed(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", "--fail-on", "never", f"spec={tp_spec(workdir, 3)}", "model=scripted",
                       *isolation(workdir), "hydra.verbose=true")
    assert code == 0, err


def test_a_search_path_to_the_operators_own_configs_is_allowed(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ops = operator_conf(workdir, model={"backend": "scripted", "name": "mine"})
    code, _, err = cli("run", "--fail-on", "never", f"spec={tp_spec(workdir, 3)}", *ops, *isolation(workdir))
    assert code == 0, err


# -- resolvers in every quoting, keys built from resolvers ----------------------------------------

RESOLVERS = {
    "oc.decode": "+audit.description=${oc.decode:'{a: 1}'}",
    "oc.create": "+audit.description=${oc.create:'{a: 1}'}",
    "oc.select around oc.env": f"+audit.description=${{oc.select:x,${{oc.env:{KEY_ENV}}}}}",
    "oc.env single-quoted": f"audit.name='${{oc.env:{KEY_ENV}}}'",
    "oc.env double-quoted": f'audit.name="${{oc.env:{KEY_ENV}}}"',
    "oc.env inside a list item": f"report.formats=[json,'${{oc.env:{KEY_ENV}}}']",
    "oc.env as a key": f"+report.${{oc.env:{KEY_ENV}}}=1",
    "oc.decode of oc.env": f"+audit.description=${{oc.decode:${{oc.env:{KEY_ENV}}}}}",
    "now": "+audit.description=${now:%Y}",
    "hydra": "audit.name=${hydra:job.name}",
    "an unregistered resolver": "audit.name=${eval:1+1}",
    "oc.env into runtime.cache": f"runtime.cache=${{oc.env:{KEY_ENV}}}",
    "oc.env into a sweep value": f"runtime.seed=1,${{oc.env:{KEY_ENV}}}",
    "oc.env with a default": f"audit.name=${{oc.env:{KEY_ENV},fallback}}",
    "oc.dict.values": "+audit.description=${oc.dict.values:runtime}",
    "escaped dollar keeps the text": f"+audit.description=\\${{oc.env:{KEY_ENV}}}",
}


@pytest.mark.parametrize("case", list(RESOLVERS))
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_resolver_on_the_command_line_never_reads_the_secret(workdir: Path, cli, case: str, command: str,  # type: ignore[no-untyped-def]
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    code, out, err = cli(command, f"spec={tp_spec(workdir, 3)}", RESOLVERS[case])
    assert "Traceback" not in err, err
    if case == "escaped dollar keeps the text":
        assert code in (0, 2), err  # a literal text: accepted, or refused for its characters
    else:
        lines = error_lines(err)
        assert code == 2 and len(lines) == 1 and "hint:" in lines[0], err
    assert_no_leak(workdir, out, err)
