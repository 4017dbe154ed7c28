"""Hydra's override functions in the wrong place (issue 26, low): `judge=glob(*)` and the
other sweep functions (`glob`, `interval`, `choice`, `range`, `shuffle`, `sort`) with or
without `-m` are one line with a hint, exit code 2, nothing written. Before, `plan -m
judge=glob(*)` died with Hydra's "ConfigLoader is not set" (exit 70), `run -m` printed
that text with no hint, an empty `range(3,1)` swept nothing and `range(1,3,0)` raised."""

from __future__ import annotations

from pathlib import Path

import pytest

import biasaudit
from tests.conftest import isolation
from tests.helpers import tp_spec
from tests.unit.hostile._cases import error_lines

# (command, override, what the error line must hold)
CASES: list[tuple[str, str, list[str]]] = [
    ("plan -m", "judge=glob(*)", ["'judge=glob(*)'", "glob() cannot choose", "judge=a,b", "smollm2_panel"]),
    ("run -m", "judge=glob(*)", ["glob() cannot choose", "judge=a,b"]),
    ("plan -m", "model=glob(scr*)", ["glob() cannot choose", "model=a,b", "scripted"]),
    ("run -m", "model=glob(*,exclude=smollm2)", ["glob() cannot choose"]),
    ("plan -m", "spec=glob(*)", ["glob() cannot choose", "biasaudit list specs"]),
    ("plan -m", "runtime.seed=glob(*)", ["glob() cannot choose", "runtime.seed=1,2,3"]),
    ("plan -m", "runtime.seed=interval(0,1)", ["interval() is a range of real numbers", "range(start, stop, step)"]),
    ("plan -m", "runtime.seed=range(3,1)", ["the sweep has no values"]),
    ("plan -m", "runtime.seed=range(1,3,0)", ["range() arg 3 must not be zero"]),
    ("plan -m", "runtime.seed=choice()", ["choice()"]),
    ("plan -m", "runtime.seed=sort(glob(*))", ["sort(glob(*))"]),
    ("run", "judge=glob(*)", ["is a sweep", "glob() cannot choose", "judge=a,b"]),
    ("plan", "embedder=glob(*)", ["is a sweep", "embedder=a,b"]),
    ("validate", "runtime.seed=interval(0,1)", ["is a sweep", "interval() cannot be listed"]),
    ("validate", "runtime.seed=range(1,3)", ["is a sweep", "biasaudit run -m"]),
    ("run", "runtime.seed=choice(1,2)", ["is a sweep", "biasaudit run -m"]),
    ("validate", "runtime.seed=shuffle(1,2)", ["is a sweep", "biasaudit run -m"]),
    ("plan", "runtime.seed=sort(2,1)", ["is a sweep", "biasaudit plan -m"]),
]


@pytest.mark.parametrize("command,override,must", CASES, ids=[f"{c} {o}" for c, o, _ in CASES])
def test_sweep_functions_are_one_line_with_a_hint(workdir: Path, cli, command: str, override: str,
                                                   must: list[str]) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    extra = isolation(workdir) if command.startswith(("run", "plan")) else []
    code, out, err = cli(*command.split(), f"spec={spec}", "model=scripted", override, *extra)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and "hint:" in lines[0], lines[0]
    for m in must:
        assert m in lines[0], (m, lines[0])
    assert not any((workdir / "reports").iterdir()) and not (workdir / "cache.sqlite").exists()


def test_a_listed_sweep_still_runs(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    code, out, err = cli("plan", "-m", f"spec={spec}", "model=scripted", "runtime.seed=shuffle(1,2)",
                         *isolation(workdir))
    assert code == 0 and "2 jobs" in out, err


@pytest.mark.parametrize("override", ["judge=glob(*)", "runtime.seed=range(3,1)", "runtime.seed=interval(0,1)"])
def test_the_python_api_raises_one_line(workdir: Path, override: str) -> None:
    spec = tp_spec(workdir, 3)
    with pytest.raises(biasaudit.BiasAuditError) as ei:
        biasaudit.plan(spec, ["model=scripted", override, *isolation(workdir)])
    assert "\n" not in str(ei.value) and "hint:" in str(ei.value)
