from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A scratch folder with its own cache and reports folder."""
    (tmp_path / "reports").mkdir()
    return tmp_path


def isolation(workdir: Path) -> list[str]:
    """Overrides that keep a run's cache and reports inside the test's folder."""
    return [
        f"runtime.cache={workdir / 'cache.sqlite'}",
        f"runtime.reports_dir={workdir / 'reports'}",
        "runtime.progress=false",
    ]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `biasaudit` in-process; returns (exit code, stdout, stderr)."""
    from biasaudit.cli import main

    def _run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def run_dirs(workdir: Path) -> list[Path]:
    return sorted(p.parent for p in (workdir / "reports").rglob("summary.json"))
