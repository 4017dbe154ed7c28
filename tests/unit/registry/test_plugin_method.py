"""A method added from a package outside `framework/` (issue 16, acceptance 3): found
through the `biasaudit.plugins` entry-point group by `biasaudit run` in a fresh process,
with its own coder, metric and report text, and no file of the core touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import spec_and_operator

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "tests" / "fixtures" / "plugin_method"

SPEC = """
audit: {name: plugin-run, method: response_length}
stimuli:
  inline:
    - {id: s1, statement: "Group X is lazy."}
    - {id: s2, statement: "Group Y is rude."}
  id_field: id
factors:
  tone:
    calm: {template: "Tell me about: {{ statement }}"}
    short: {template: "Briefly: {{ statement }}"}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies:
      "Tell me about: Group X": "That is a stereotype, not a fact."
      "Tell me about: Group Y": "No group is rude as such."
      "Briefly: Group X": "False."
      "Briefly: Group Y": "Not true at all."
metrics:
  - {name: mean_words}
thresholds:
  - {metric: mean_words, max: 100}
"""


def installed_plugin(tmp: Path) -> dict[str, str]:
    """An environment in which the fixture package is installed the way pip would: an
    importable package and a dist-info folder declaring its entry point."""
    dist = tmp / "site" / "biasaudit_wordcount-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: biasaudit-wordcount\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[biasaudit.plugins]\nwordcount = biasaudit_wordcount\n")
    path = os.pathsep.join([str(tmp / "site"), str(PLUGIN), str(REPO)])
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


@pytest.mark.slow  # `biasaudit run` in a fresh process
def test_third_party_method_runs_through_biasaudit_run(workdir: Path) -> None:
    env = installed_plugin(workdir)
    spec, ops = spec_and_operator(workdir / "plugin.yaml", SPEC)
    args = [sys.executable, "-m", "biasaudit.cli.app", "run", f"spec={spec}", *ops, *isolation(workdir)]
    done = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    m = s["metrics"]["mean_words"]
    # words: "That is a stereotype, not a fact." 7, "No group is rude as such." 6, "False." 1, "Not true at all." 4
    assert m["estimates"]["mean"]["value"] == (7 + 6 + 1 + 4) / 4
    assert m["cells"]["mean"]["tone=calm"]["value"] == 6.5 and m["cells"]["mean"]["tone=short"]["value"] == 2.5
    layer = next(x for x in s["coding"]["layers"] if x["name"] == "length")
    assert layer["coder"] == "word_count" and layer["status"] == {"coded": 4} and s["coding"]["defaults"]
    assert s["overall"] == "PASS"
    assert "Answer length (a plugin method)" in (d / "report.html").read_text()
    # the core knows nothing of it: the same run without the plugin installed is an unknown metric
    bare = {**env, "PYTHONPATH": str(REPO)}
    missing = subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "validate", f"spec={spec}", *ops], cwd=workdir,
                             env=bare, capture_output=True, text=True, timeout=600)
    assert missing.returncode == 2 and "unknown metric 'mean_words'" in missing.stderr
    core = [p for p in (REPO / "framework").rglob("*") if p.is_file() and p.suffix in (".py", ".yaml", ".j2")]
    assert not any("mean_words" in p.read_text(encoding="utf-8") for p in core)


@pytest.mark.slow  # `biasaudit validate` in a fresh process
def test_unknown_plugin_names_get_suggestions(workdir: Path) -> None:
    env = installed_plugin(workdir)
    spec, ops = spec_and_operator(workdir / "plugin.yaml", SPEC.replace("name: mean_words}", "name: mean_word}"))
    done = subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "validate", f"spec={spec}", *ops], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "did you mean 'mean_words'" in done.stderr


def test_registry_public_api_loads_a_plugin_module(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from biasaudit.registry import CODERS, METHODS, METRICS, load_plugin

    monkeypatch.syspath_prepend(str(PLUGIN))
    load_plugin("biasaudit_wordcount")
    assert "mean_words" in METRICS and "word_count" in CODERS and METHODS.get("response_length").metrics == ("mean_words",)
