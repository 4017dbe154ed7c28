"""Overrides (issue 26, class 6): `biasaudit plan -m` (and `run -m`'s checks before it
launches) cost a Hydra composition per job, about a quarter of a second each, so a
sweep of `runtime.seed=range(0,1000)` took minutes to plan. Jobs that differ only in
plain values now share one composition (`compose_many`), with each job's values set as
Hydra sets them; sweeps over config groups still compose each job. Counted by Hydra
compositions, never by seconds; and the configs are the ones per-job composing gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.errors import BiasAuditError
from biasaudit.runner.sweeps import sweep_combinations
from biasaudit.spec import compose as compose_mod
from biasaudit.spec.compose import compose, compose_many, prepare_overrides
from tests.helpers import tp_spec
from tests.unit.hostile._cases import error_lines


@pytest.fixture
def compositions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    count = [0]
    real = compose_mod.compose_dict

    def counting(overrides):  # type: ignore[no-untyped-def]
        count[0] += 1
        return real(overrides)

    monkeypatch.setattr(compose_mod, "compose_dict", counting)
    return count


def test_plan_m_over_50_seeds_composes_once(workdir: Path, cli, compositions: list[int]) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, out, err = cli("plan", "-m", f"spec={spec}", "runtime.seed=range(0,50)", f"runtime.cache={workdir / 'c'}")
    assert code == 0 and "Traceback" not in err, err
    assert compositions[0] == 1
    assert all(f"runtime.seed={i}" in out for i in range(50))


def test_a_sweep_over_a_config_group_composes_each_job(workdir: Path, cli, compositions: list[int]) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, out, err = cli("plan", "-m", f"spec={spec}", "model=scripted,smollm2", "runtime.seed=1,2")
    assert code == 0, err
    assert compositions[0] == 4


SWEEPS = {
    "seed and a new key": ["runtime.seed=1,2", "+report.title=a,b"],
    "two limits": ["runtime.limits.max_cells=5,6", "report.max_rows=3,4"],
    "a fixed value beside": ["report.max_rows=3", "runtime.seed=range(0,3)"],
    "overlapping keys": ["+report={title: x}", "report.max_rows=3,4"],  # composed per job
    "interpolation to a swept key": ["+report.title=t${runtime.seed}", "runtime.seed=7,8"],
    "a group and a value": ["model=scripted,smollm2", "runtime.seed=1,2"],
    "lists as values": ["report.formats=[html],[md,json]"],
}


@pytest.mark.parametrize("name", list(SWEEPS))
def test_the_configs_are_what_per_job_composing_gives(tmp_path: Path, name: str) -> None:
    spec = tp_spec(tmp_path, 3)
    combos = sweep_combinations(prepare_overrides([f"spec={spec}", *SWEEPS[name]]))
    assert len(combos) >= 2
    fast = compose_many(combos)
    slow = [compose(c) for c in combos]
    for a, b in zip(fast, slow, strict=True):
        assert (a.data, a.choices, a.overrides, a.spec_file) == (b.data, b.choices, b.overrides, b.spec_file)
        assert a.config.model_dump() == b.config.model_dump()


BAD = {
    "a value of the wrong type": (["runtime.seed=0,x"], ["runtime.seed", "integer"]),
    "a key that is not there": (["nope.key=1,2"], ["cannot override 'nope.key'"]),
    "a limit out of range": (["runtime.limits.max_cells=1,0"], ["runtime.limits.max_cells"]),
    "a resolver in a swept value": (["+report.title=a,${oc.env:HOME}"], ["'oc.env' is not allowed"]),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_job_in_a_shared_sweep_is_one_line(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    sweep, must = BAD[name]
    spec = tp_spec(workdir, 4)
    code, out, err = cli("plan", "-m", f"spec={spec}", *sweep)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for m in must:
        assert m in lines[0], (m, lines[0])


def test_compose_many_refuses_what_compose_refuses(tmp_path: Path) -> None:
    spec = tp_spec(tmp_path, 3)
    combos = sweep_combinations(prepare_overrides([f"spec={spec}", "runtime.seed=1,oops"]))
    with pytest.raises(BiasAuditError) as fast:
        compose_many(combos)
    with pytest.raises(BiasAuditError) as slow:
        [compose(c) for c in combos]
    assert fast.value.one_line() == slow.value.one_line()
