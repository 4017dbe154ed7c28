"""Issue 42, section 3: `run` refuses, before any model call, a run whose estimated disk
or peak memory exceeds what the machine has free, naming the number and the setting
that reduces it; `runtime.preflight.resources=warn` runs it anyway. The free space and
the memory are monkeypatched (the disk is never filled)."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs

Usage = namedtuple("Usage", "total used free")


def _small_disk(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    real = shutil.disk_usage

    def fake(path: Any) -> Usage:
        u = real(path)
        return Usage(u.total, u.total - free, free)

    monkeypatch.setattr(shutil, "disk_usage", fake)


def test_run_refuses_a_run_larger_than_the_free_disk(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_disk(monkeypatch, 10_000)  # 10 KB free: a run folder alone is hundreds of KB
    code, out, err = cli("run", "spec=refusal_stance", "model=scripted", *isolation(workdir))
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: estimated "), err
    assert f"on disk for {workdir / 'reports'} (free 10.0 KB): reduce " in lines[0], err
    assert "stimuli.sample.n" in lines[0] and "runtime.preflight.resources=warn" in lines[0], err
    # before any model call: no cache written, no run folder made
    assert not (workdir / "cache.sqlite").exists()
    assert run_dirs(workdir) == []


def test_run_refuses_a_run_larger_than_the_available_memory(workdir: Path, cli: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("biasaudit.runner.preflight.available_memory", lambda: 100 * 10**6,  # 100 MB
                        raising=False)  # (absent on the code before the check: the run then goes on)
    code, _, err = cli("run", "spec=refusal_stance", "model=scripted", *isolation(workdir))
    assert code == 2, err
    line = err.strip()
    assert "\n" not in line
    assert line.startswith("error: estimated peak memory ") and "(available 100.0 MB): reduce stimuli.sample.n" in line
    assert not (workdir / "cache.sqlite").exists() and run_dirs(workdir) == []


def test_warn_runs_anyway_and_says_so(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_disk(monkeypatch, 10_000)
    code, out, err = cli("run", "--fail-on", "never", "spec=refusal_stance", "model=scripted",
                         "runtime.preflight.resources=warn", *isolation(workdir))
    assert code == 0, err
    assert "warning: estimated " in err and "runtime.preflight.resources=warn: running anyway" in err
    assert len(run_dirs(workdir)) == 1


def test_a_run_that_fits_is_not_refused(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_disk(monkeypatch, 10**9)  # 1 GB free: the run needs well under 1 MB
    monkeypatch.setattr("biasaudit.runner.preflight.available_memory", lambda: 8 * 10**9, raising=False)
    code, _, err = cli("run", "--fail-on", "never", "spec=refusal_stance", "model=scripted", *isolation(workdir))
    assert code == 0, err
    assert "warning: estimated" not in err


def test_a_bad_mode_is_one_error_line(workdir: Path, cli: Any) -> None:
    code, _, err = cli("run", "spec=refusal_stance", "model=scripted", "runtime.preflight.resources=maybe",
                       *isolation(workdir))
    assert code == 2 and "runtime.preflight.resources" in err and "Traceback" not in err


def test_available_memory_reads_proc_meminfo_without_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit.runner.preflight import available_memory

    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        pytest.skip("no /proc/meminfo on this system")
    monkeypatch.setitem(__import__("sys").modules, "psutil", None)  # import psutil -> ImportError
    kb = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemAvailable:"))
    got = available_memory()
    # MemAvailable moves between the two reads; within 5% of the kernel's own figure
    assert abs(got - kb * 1024) <= 0.05 * kb * 1024
