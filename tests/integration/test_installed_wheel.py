"""Issue 18, acceptance 1: the built wheel works outside the repository.

The wheel is built from a copy of the source, installed into a new virtual environment,
and run from a folder outside the checkout with no BIASAUDIT_* variables and the
repository nowhere on sys.path: the shipped spec runs, and so does a project made by
`biasaudit init`. To keep the suite fast the new environment borrows the installed
dependencies (torch, transformers, the two embedded model packages...) through a .pth
line naming this environment's site-packages; a plain path line does not run the .pth
files in that folder, so the checkout's editable install stays invisible. The wheel
itself is installed for real (`pip install --no-deps`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(bin folder of a new venv holding the wheel, a clean environment)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("framework", "conf", "specs", "docs/schema"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BIASAUDIT_", "PYTHON"))}
    env["HF_HUB_OFFLINE"] = "1"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(root / "dist"), str(src)], root, env)
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("biasaudit-*.whl")
    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, env)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, env)
    (Path(site.stdout.strip()) / "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = _run([*pip, "--python", str(py), "install", "--no-deps", str(wheel)], root, env)
    assert done.returncode == 0, done.stderr
    return venv / "bin", env


# `biasaudit <args>` run by the installed package's own entry point (`biasaudit.cli.app:main`,
# what the console script calls) for each (folder, args) in turn, in ONE process of the new
# environment: each exit code and stderr come back as JSON. Each fresh process paid seconds
# of imports, and the template checks below made thirteen of them; the console script
# itself is run as a real process by the `run` and `init` checks.
_BATCH = """
import contextlib, io, json, os, sys
from biasaudit.cli.app import main
out = []
for cwd, args in json.loads(sys.argv[1]):
    os.chdir(cwd)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as so:
        code = main(args)
    out.append([code, so.getvalue(), err.getvalue()])
print(json.dumps(out))
"""


def _batch(bin_dir: Path, calls: list[tuple[Path, list[str]]], cwd: Path,
           env: dict[str, str]) -> list[tuple[int, str, str]]:
    done = _run([str(bin_dir / "python"), "-c", _BATCH, json.dumps([[str(c), a] for c, a in calls])], cwd, env)
    assert done.returncode == 0, done.stderr
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]  # type: ignore[misc]


def _share_models(folder: Path) -> None:
    """The session's converted SmolLM2 (the default `.biasaudit/models` of the folder a
    run starts in), so the runs below load in seconds instead of dequantizing again."""
    from biasaudit.spec.compose import compose

    converted = (REPO / Path(compose([]).config.runtime.cache).parent / "models").resolve()
    if converted.is_dir():
        (folder / ".biasaudit").mkdir(parents=True, exist_ok=True)
        (folder / ".biasaudit" / "models").symlink_to(converted, target_is_directory=True)


def test_wheel_runs_a_shipped_spec_and_an_init_project_outside_the_checkout(
        installed: tuple[Path, dict[str, str]], tmp_path: Path, smollm2) -> None:  # type: ignore[no-untyped-def]
    bin_dir, env = installed
    outside = tmp_path / "outside"
    outside.mkdir()
    _share_models(outside)
    where = _run([str(bin_dir / "python"), "-c", "import biasaudit, biasaudit._util.paths as p, hydra_plugins.biasaudit_specs"
                  " as h, sys; print(biasaudit.__file__, h.__file__, p.conf_dir(), p.shipped_specs_dir());"
                  " print(any(x in sys.argv[1:] for x in sys.path))", str(REPO), str(REPO / "framework")],
                 outside, env)
    assert where.returncode == 0, where.stderr
    paths, on_path = where.stdout.split("\n")[:2]
    assert on_path == "False" and str(REPO) not in paths  # package, plugin, conf and specs all from the wheel
    assert all(p.startswith(str(bin_dir.parent)) for p in paths.split())

    # the shipped specs' `$schema=` line resolves inside the installed package too, and
    # the Python API works from the wheel
    api = _run([str(bin_dir / "python"), "-c", "import biasaudit, biasaudit._util.paths as p, json; "
                "f = p.shipped_specs_dir() / 'crows_pairs_tp.yaml'; line = f.read_text().splitlines()[0]; "
                "s = json.loads((f.parent / line.split('=', 1)[1]).read_text()); "
                "print(s['$id'], biasaudit.validate('crows_pairs_tp').requests)"], outside, env)
    assert api.returncode == 0, api.stderr
    assert api.stdout.split() == ["urn:biasaudit:schema:spec:1", "80"]

    run = _run([str(bin_dir / "biasaudit"), "run", "spec=crows_pairs_tp"], outside, env)
    [first] = [p.parent for p in (outside / "reports").rglob("summary.json")]
    s = json.loads((first / "summary.json").read_text())
    assert run.returncode == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[s["overall"]], run.stderr
    assert s["execution"]["requests"] == 80 and s["execution"]["failures"] == 0
    assert run.stdout.strip().splitlines()[-1].startswith(f"crows-pairs-tp: {s['overall']}; bias_score.score ")

    init = _run([str(bin_dir / "biasaudit"), "init", "x"], outside, env)
    assert init.returncode == 0, init.stderr
    project = outside / "x"
    (project / ".biasaudit").symlink_to(outside / ".biasaudit", target_is_directory=True)  # same cache
    again = _run([str(bin_dir / "biasaudit"), "run", "spec=./audit.yaml"], project, env)
    [second] = [p.parent for p in (project / "reports").rglob("summary.json")]
    s2 = json.loads((second / "summary.json").read_text())
    assert again.returncode == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[s2["overall"]], again.stderr
    # the scaffold's 12 synthetic pairs, each sentence scored once by the installed package
    assert s2["audit"]["name"] == "x" and s2["execution"]["requests"] == 24 and s2["execution"]["failures"] == 0
    # every template travels in the wheel and validates from its folder
    kinds = ("generate", "nli", "fisco", "biaxis", "bbq")
    calls: list[tuple[Path, list[str]]] = []
    for kind in kinds:
        calls += [(outside, ["init", kind, "--template", kind]), (outside / kind, ["validate", "./audit.yaml"])]
    results = _batch(bin_dir, calls, outside, env)
    assert len(results) == 2 * len(kinds)
    for (_, args), (code, _, err) in zip(calls, results, strict=True):
        assert code == 0, (args, err)


def test_wheel_ships_the_bbq_and_stereoset_specs_and_their_data(installed: tuple[Path, dict[str, str]],
                                                                tmp_path: Path) -> None:
    """Issue 20: the specs and samples of the two added methods travel in the wheel, and the
    installed package finds their stimulus formats and metrics (validate needs no model)."""
    bin_dir, env = installed
    where = _run([str(bin_dir / "python"), "-c", "import biasaudit._util.paths as p; print(p.shipped_specs_dir())"],
                 tmp_path, env)
    specs = Path(where.stdout.strip())
    for name in ("bbq.yaml", "bbq_generate.yaml", "stereoset.yaml", "stereoset_mlm.yaml",
                 "data/bbq_sample.jsonl", "data/stereoset_sample.json"):
        assert (specs / name).is_file(), name
        assert (specs / name).read_bytes() == (REPO / "specs" / name).read_bytes()
    specs_run = ("bbq", "bbq_generate", "stereoset")
    results = _batch(bin_dir, [(tmp_path, ["validate", f"spec={spec}"]) for spec in specs_run], tmp_path, env)
    assert len(results) == len(specs_run)
    for spec, (code, out, err) in zip(specs_run, results, strict=True):
        assert code == 0, (spec, err)
        assert "24 stimuli" in out, spec
