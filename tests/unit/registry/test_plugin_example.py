"""A backend and a plot kind added by a package outside `framework/` (issue 40, section 2,
acceptance 1): tests/fixtures/plugin_example is found through its dist-info's
`biasaudit.plugins` entry point when its folder is on PYTHONPATH (no pip install, no core
edit). Its backend `echo` is configured with its own config model (validated with its own
fields and errors), its plot kind `echo_lengths` is drawn in the report, the run packs and
verifies, and `biasaudit schema` shows both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, spec_and_operator
from tests.unit.registry.plugin_cli import REPO, plugin_cli

SPEC = """
audit: {name: echo-run, method: echo_example}
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
model: {backend: echo, name: echo-subject, prefix: "you said: "}
metrics:
  - {name: answer_chars}
thresholds:
  - {metric: answer_chars, max: 1000}
"""



@pytest.mark.slow  # `biasaudit run`, `pack` and `verify` in fresh processes
def test_plugin_backend_and_plot_kind_run_report_and_pack(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "echo.yaml", SPEC)
    done = plugin_cli(workdir, "run", f"spec={spec}", *ops, *isolation(workdir))
    assert done.returncode == 0, done.stderr
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    # the echo backend answered: "you said: " (10 chars) + the prompt, e.g. "Tell me about: Group X is lazy." (31)
    cells = s["metrics"]["answer_chars"]["cells"]["mean"]
    assert cells["tone=calm"]["value"] == 10 + 31 and cells["tone=short"]["value"] == 10 + 25
    responses = read_jsonl(d / "responses.jsonl")
    assert any(str(r["output"]["text"]).startswith("you said: Tell me about:") for r in responses)
    # the plug-in's plot kind is drawn in the report (its alt text on the inline SVG)
    html = (d / "report.html").read_text()
    assert '<svg role="img" aria-label="Mean answer length in characters for each cell (example plug-in' in html
    [plot] = s["metrics"]["answer_chars"]["plots"]
    assert plot["kind"] == "echo_lengths"
    pack = workdir / "echo.zip"
    packed = plugin_cli(workdir, "pack", str(d), "-o", str(pack))
    assert packed.returncode == 0, packed.stderr
    verified = plugin_cli(workdir, "verify", str(pack))
    assert verified.returncode == 0 and "verified:" in verified.stdout, verified.stdout + verified.stderr


@pytest.mark.slow  # `biasaudit validate` and `schema` in fresh processes
def test_plugin_config_errors_and_schema(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "echo.yaml", SPEC.replace("prefix:", "prefx:"))
    bad = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    # the echo config's own model refuses the misspelt option: one line, its key path, exit 2
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert "model.prefx: unknown key 'prefx' (hint: did you mean 'prefix'?" in bad.stderr
    spec, ops = spec_and_operator(workdir / "echo2.yaml", SPEC.replace('prefix: "you said: "', "upper: maybe"))
    wrong = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    assert wrong.returncode == 2 and "model.upper:" in wrong.stderr and ".echo" not in wrong.stderr, wrong.stderr
    # without the plug-in the backend is unknown (the core knows nothing of it)
    bare = plugin_cli(workdir, "validate", f"spec={spec}", *ops, with_plugin=False)
    assert bare.returncode == 2 and "unknown backend 'echo'" in bare.stderr, bare.stderr
    config = json.loads(plugin_cli(workdir, "schema", "config").stdout)
    echo = config["$defs"]["EchoConfig"]
    assert echo["properties"]["backend"]["const"] == "echo" and "prefix" in echo["properties"]
    assert config["properties"]["model"]["discriminator"]["mapping"]["echo"] == "#/$defs/EchoConfig"
    plots = json.loads(plugin_cli(workdir, "schema", "plots").stdout)
    assert plots["discriminator"]["mapping"]["echo_lengths"] == "#/$defs/Plot_echo_lengths"
    assert set(plots["$defs"]["Plot_echo_lengths"]["properties"]) >= {"kind", "labels", "values", "title"}
    core = [p for p in (REPO / "framework").rglob("*") if p.is_file() and p.suffix in (".py", ".yaml", ".j2")]
    assert not any("echo_lengths" in p.read_text(encoding="utf-8") or "EchoConfig" in p.read_text(encoding="utf-8")
                   for p in core)


ALL_THREE = """
audit: {name: plugin-all-three, method: echo_example}
stimuli:
  inline:
    - {id: s1, statement: "Group X is a stereotype."}
    - {id: s2, statement: "Group Y is rude."}
  id_field: id
factors:
  tone:
    calm: {template: "Tell me about: {{ statement }}"}
    short: {template: "Briefly: {{ statement }}"}
probe: {kind: generate, max_tokens: 20}
model: {backend: echo, name: echo-subject, prefix: "you said: "}
coding:
  mention:
    coder: keyword
    keywords: [stereotype, prejudice]
    label: names_it
    otherwise: silent
metrics:
  - {name: answer_chars}
  - {name: label_rate, id: named, layer: mention, labels: [names_it]}
thresholds:
  - {metric: answer_chars, max: 1000}
"""


@pytest.mark.slow  # validate, run, pack, verify and schema, each in a fresh process
def test_one_spec_uses_the_plugins_backend_coder_and_plot_kind_together(workdir: Path) -> None:
    # issue 40, acceptance 1: one spec, all three extension points, all from the plug-in
    spec, ops = spec_and_operator(workdir / "all3.yaml", ALL_THREE)
    assert plugin_cli(workdir, "validate", f"spec={spec}", *ops).returncode == 0
    done = plugin_cli(workdir, "run", f"spec={spec}", *ops, *isolation(workdir))
    assert done.returncode == 0, done.stderr
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    # echo answered "you said: " + the prompt: the keyword coder finds "stereotype" in the two
    # answers to s1 (its statement names it) and in neither answer to s2: 2 of 4 (by hand)
    assert s["metrics"]["named"]["estimates"]["rate"]["value"] == pytest.approx(0.5)
    layer = next(x for x in s["coding"]["layers"] if x["name"] == "mention")
    assert layer["coder"] == "keyword" and layer["status"] == {"coded": 4}
    codes = [c for c in read_jsonl(d / "codes.jsonl") if c["layer"] == "mention"]
    # the answers the echo backend gives, written out: its prefix, then the rendered prompt
    answers = {("calm", "s1"): "you said: Tell me about: Group X is a stereotype.",
               ("calm", "s2"): "you said: Tell me about: Group Y is rude.",
               ("short", "s1"): "you said: Briefly: Group X is a stereotype.",
               ("short", "s2"): "you said: Briefly: Group Y is rude."}
    found = sorted(a.lower().find("stereotype") for a in answers.values())
    assert sorted(c["detail"].get("at", -1) for c in codes) == found == [-1, -1, 32, 38]
    cells = s["metrics"]["answer_chars"]["cells"]["mean"]
    for tone in ("calm", "short"):
        mean = (len(answers[(tone, "s1")]) + len(answers[(tone, "s2")])) / 2
        assert cells[f"tone={tone}"]["value"] == pytest.approx(mean)
    [plot] = s["metrics"]["answer_chars"]["plots"]
    assert plot["kind"] == "echo_lengths"
    assert '<svg role="img" aria-label="Mean answer length in characters' in (d / "report.html").read_text()
    pack = workdir / "all3.zip"
    assert plugin_cli(workdir, "pack", str(d), "-o", str(pack)).returncode == 0
    verified = plugin_cli(workdir, "verify", str(pack))
    assert verified.returncode == 0 and "verified:" in verified.stdout, verified.stdout + verified.stderr
    schema = json.loads(plugin_cli(workdir, "schema", "spec").stdout)
    text = json.dumps(schema)
    assert "keyword" in text  # the plug-in coder's options are in the spec schema
    assert "EchoConfig" in plugin_cli(workdir, "schema", "config").stdout
    assert "echo_lengths" in plugin_cli(workdir, "schema", "plots").stdout
    assert "KeywordEvidence" in plugin_cli(workdir, "schema", "codes").stdout  # and its evidence record
