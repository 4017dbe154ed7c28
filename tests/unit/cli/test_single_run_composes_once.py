"""A single `biasaudit run` composes its configuration once (issue 28): the composition
made in preflight, which planned the run, also makes its run folder, as Hydra's run mode
did after composing it twice more. The folder holds what Hydra wrote: `.hydra/`
(config.yaml, hydra.yaml, overrides.yaml) and the run log `cli.log`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, verdict_code


def _count_compositions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every Hydra composition (the compose API's and `@hydra.main`'s alike) by run mode."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    calls: list[str] = []
    real = ConfigLoaderImpl.load_configuration

    def counting(self: ConfigLoaderImpl, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(kwargs.get("run_mode")))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counting)
    return calls


def test_a_single_run_composes_once_and_writes_hydras_run_folder(
        workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 6)
    calls = _count_compositions(monkeypatch)
    code, out, err = cli("run", f"spec={spec}", "model=scripted", "runtime.seed=3", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    assert calls == ["RunMode.RUN"]  # preflight's; @hydra.main composed twice more (get_mode, run)
    # the run folder is hydra.run.dir: <reports_dir>/<audit name>/<time>
    assert run.parent == workdir / "reports" / "tp-test"
    assert sorted(p.name for p in (run / ".hydra").iterdir()) == ["config.yaml", "hydra.yaml", "overrides.yaml"]
    hydra = yaml.safe_load((run / ".hydra" / "hydra.yaml").read_text())["hydra"]
    assert hydra["mode"] == "RUN" and hydra["overrides"]["hydra"] == ["hydra.mode=RUN"]
    assert Path(hydra["runtime"]["output_dir"]).resolve() == run.resolve()
    assert hydra["job"]["name"] == "cli" and hydra["runtime"]["choices"]["model"] == "scripted"
    assert hydra["overrides"]["task"][:3] == ["spec=tp-test", "model=scripted", "runtime.seed=3"]
    config = yaml.safe_load((run / ".hydra" / "config.yaml").read_text())
    assert "hydra" not in config and config["model"]["backend"] == "scripted" and config["runtime"]["seed"] == 3
    manifest = json.loads((run / "manifest.json").read_text())
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())
    assert overrides == manifest["overrides"] and overrides[0] == f"spec={spec.resolve()}"  # reproducible
    # the run log, in Hydra's job-logging format, and the end-of-run lines on stdout
    assert (run / "cli.log").is_file()
    lines = out.splitlines()
    assert lines[-2] == f"report: {run / 'report.html'}" and lines[-3].startswith("tp-test: ")


def test_a_sweep_still_composes_each_job_through_hydra(
        workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    calls = _count_compositions(monkeypatch)
    code, _, err = cli("run", "-m", f"spec={spec}", "model=scripted", "runtime.seed=1,2", *isolation(workdir))
    runs = run_dirs(workdir)
    assert code in (0, 1, 3), err
    assert len(runs) == 2 and all((r / ".hydra" / "hydra.yaml").is_file() and (r / "cli.log").is_file() for r in runs)
    assert calls.count("RunMode.MULTIRUN") >= 1 and len(calls) >= 3  # preflight, then Hydra's sweep and jobs
