"""A coder added by a third-party package (issue 40, section 2): the fixture package
tests/fixtures/plugin_example is found only through its `biasaudit.plugins` entry point
(its dist-info on the path, as pip installs it) and registers `keyword`, a coder with its
own options and its own evidence record. A spec using it validates, runs, reports, packs
and verifies in fresh processes, its evidence is written to codes.jsonl as the coder's
record, and a misspelt option of it is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, spec_and_operator
from tests.unit.registry.plugin_cli import PLUGIN, plugin_cli

SPEC = """
audit: {name: plugin-coder, method: label_rates}
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
      "Tell me about: Group X": "That is a Stereotype, not a fact."
      "Tell me about: Group Y": "No group is rude as such."
      "Briefly: Group X": "False."
      "Briefly: Group Y": "A stereotype."
coding:
  mention:
    coder: keyword
    keywords: [stereotype, prejudice]
    label: names_it
    otherwise: silent
metrics:
  - {name: label_rate, id: named, layer: mention, labels: [names_it]}
thresholds:
  - {metric: named, min: 0.1}
"""



@pytest.mark.slow  # validate, run, report, pack and verify, each in a fresh process
def test_a_plugin_coder_with_its_own_evidence_runs_reports_and_packs(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "plugin.yaml", SPEC)
    done = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    assert done.returncode == 0, done.stderr
    done = plugin_cli(workdir, "run", f"spec={spec}", *ops, *isolation(workdir))
    assert done.returncode == 0, done.stderr
    [run] = run_dirs(workdir)
    s = json.loads((run / "summary.json").read_text())
    layer = next(x for x in s["coding"]["layers"] if x["name"] == "mention")
    assert layer["coder"] == "keyword" and layer["status"] == {"coded": 4}
    # 2 of the 4 answers name the stereotype ("Stereotype" matched case-insensitively)
    assert s["metrics"]["named"]["estimates"]["rate"]["value"] == pytest.approx(0.5)
    codes = read_jsonl(run / "codes.jsonl")
    mine = {c["unit"].split("|")[0] + "|" + c["unit"].split("|")[1]: c for c in codes if c["layer"] == "mention"}
    # the coder's own evidence record, as it set it (a null it set is kept)
    assert [c["detail"] for c in mine.values() if c["label"] == "names_it"] in (
        [{"keyword": "stereotype", "at": 10, "chars": 33}, {"keyword": "stereotype", "at": 2, "chars": 13}],
        [{"keyword": "stereotype", "at": 2, "chars": 13}, {"keyword": "stereotype", "at": 10, "chars": 33}])
    assert sorted(json.dumps(c["detail"]) for c in mine.values() if c["label"] == "silent") == [
        '{"keyword": null, "chars": 25}', '{"keyword": null, "chars": 6}']
    done = plugin_cli(workdir, "report", str(run))
    assert done.returncode == 0, done.stderr
    pack = workdir / "audit.zip"
    done = plugin_cli(workdir, "pack", str(run), "-o", str(pack))
    assert done.returncode == 0, done.stderr
    done = plugin_cli(workdir, "verify", str(pack))  # re-codes the packed answers with the plug-in's coder
    assert done.returncode == 0, done.stdout + done.stderr
    # the core knows nothing of it: without the plug-in on the path the coder is unknown
    bare = plugin_cli(workdir, "validate", f"spec={spec}", *ops, with_plugin=False)
    assert bare.returncode == 2 and "unknown coder 'keyword'" in bare.stderr, bare.stderr


@pytest.mark.slow  # `biasaudit validate` in a fresh process
def test_a_misspelt_option_of_the_plugin_coder_is_refused(workdir: Path) -> None:
    spec, ops = spec_and_operator(workdir / "plugin.yaml", SPEC.replace("    otherwise: silent", "    otherwize: silent"))
    done = plugin_cli(workdir, "validate", f"spec={spec}", *ops)
    assert done.returncode == 2 and "otherwize" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_plugin_coders_evidence_is_its_own_record(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit.records.codes import Code
    from biasaudit.registry import CODERS, load_plugin

    monkeypatch.syspath_prepend(str(PLUGIN))
    load_plugin("biasaudit_example_plugin.coder")
    evidence = CODERS.get("keyword").evidence
    line = {"unit": "u", "status": "coded", "label": "silent", "source": "keyword",
            "detail": {"keyword": None, "chars": 6}}
    code = Code.model_validate(line)
    assert type(code.detail) is evidence and code.trail()["detail"] == {"keyword": None, "chars": 6}
    with pytest.raises(ValueError, match="chars_"):  # the record refuses a key it does not declare
        Code.model_validate({**line, "detail": {"chars_": 6}})
