"""`biasaudit init --template KIND` (issue 29, point 8): every template writes a project
that validates (fast), passes its own self-test out of the box (slow), carries synthetic
sample data in the published format its method reads, and matches its schema; a
non-empty folder is refused unless --force, and a failure leaves nothing behind."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from biasaudit.cli import scaffold
from biasaudit.cli.scaffold import DEFAULT, TEMPLATES

# (stimuli, requests, coding layers) hand-counted from each template's data and design:
# pairs x 2 sentences; statements x 2 framings; triples x 2 premises; questions x 6
# names; statements x (2 tasks x 2 roles x 2 sentiments); examples x 3 answers
COUNTS = {
    "token_probability": (12, 24, 0),
    "generate": (6, 12, 2),
    "nli": (12, 24, 0),
    "fisco": (4, 24, 2),
    "biaxis": (6, 48, 3),
    "bbq": (16, 48, 0),
}
METHOD = {"token_probability": "token_probability", "generate": "label_rates", "nli": "nli_bias",
          "fisco": "fisco", "biaxis": "biaxis", "bbq": "bbq"}


def test_every_method_kind_has_a_template_and_the_default_is_token_probability() -> None:
    assert set(TEMPLATES) == set(COUNTS) and DEFAULT == "token_probability"


@pytest.mark.parametrize("kind", sorted(COUNTS))
def test_template_validates_from_its_folder(kind: str, tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / f"my {kind}"
    code, out, err = cli("init", str(project), "--template", kind)
    assert code == 0, err
    assert out.strip().endswith("biasaudit run spec=./audit.yaml")
    spec = yaml.safe_load((project / "audit.yaml").read_text())
    assert spec["audit"]["name"] == f"my-{kind}" and spec["audit"]["method"] == METHOD[kind]
    assert spec["report"]["title"] == f"my-{kind} {TEMPLATES[kind].title}"
    assert "{{NAME}}" not in (project / "README.md").read_text()
    assert "synthetic" in (project / "README.md").read_text()
    # the spec passes the JSON Schema written beside it (what an editor checks)
    schema = json.loads((project / "spec.schema.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(spec)) == []
    monkeypatch.chdir(project)
    stimuli, requests, layers = COUNTS[kind]
    code, out, err = cli("validate", "./audit.yaml")
    assert code == 0, err
    assert f"{stimuli} stimuli, {requests} requests, {layers} coding layer(s)" in out


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(COUNTS))
def test_template_passes_its_selftest(kind: str, tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", str(tmp_path / "p"), "-t", kind)[0] == 0
    monkeypatch.chdir(tmp_path / "p")
    code, out, err = cli("selftest", "spec=./audit.yaml")
    assert code == 0, out + err
    assert "self-test PASSED: planted bias detected" in out
    # the oracles ran on the template's own rows, no model
    assert not list((tmp_path / "p").rglob("summary.json"))


def test_sample_data_is_in_the_published_layout_and_marked_synthetic(tmp_path: Path) -> None:
    for kind in TEMPLATES:
        scaffold.init_project(tmp_path / kind, kind)
    with open(tmp_path / "token_probability" / "data" / "pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations",
                             "anon_writer", "anon_annotators"]
    assert {r["anon_writer"] for r in rows} == {"synthetic"}
    assert {r["stereo_antistereo"] for r in rows} == {"stereo", "antistereo"}
    bbq = [json.loads(line) for line in (tmp_path / "bbq" / "data" / "examples.jsonl").read_text().splitlines()]
    assert {r["additional_metadata"]["version"] for r in bbq} == {"synthetic"}
    # BBQ: an ambiguous context's right answer is always UNKNOWN (ans2 here)
    assert {r["label"] for r in bbq if r["context_condition"] == "ambig"} == {2}
    assert {(r["context_condition"], r["question_polarity"]) for r in bbq} == {
        (c, p) for c in ("ambig", "disambig") for p in ("neg", "nonneg")}
    raw = json.loads((tmp_path / "fisco" / "data" / "questions.json").read_text())
    assert all("[NAME]" in q["base_question"] and q["other_attributes"] == [] for q in raw.values())


def test_non_empty_folder_refused_unless_force(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "p"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    code, out, err = cli("init", str(project), "--template", "bbq")
    assert code == 2 and out == "" and err.count("\n") == 1 and "not empty" in err and "--force" in err
    assert sorted(p.name for p in project.iterdir()) == ["notes.txt"]
    code, _, err = cli("init", str(project), "--template", "bbq", "--force")
    assert code == 0, err
    assert (project / "notes.txt").read_text() == "mine"  # files of other names are kept
    assert (project / "data" / "examples.jsonl").is_file()
    # an empty folder needs no --force
    (tmp_path / "empty").mkdir()
    assert cli("init", str(tmp_path / "empty"))[0] == 0
    assert (tmp_path / "empty" / "data" / "pairs.csv").is_file()


def test_unknown_template_and_missing_folder_are_one_line_errors(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("init", str(tmp_path / "p"), "--template", "bbqq")
    assert code == 2 and err.count("\n") == 1
    assert "--template: unknown template 'bbqq'" in err and "did you mean 'bbq'" in err
    assert not (tmp_path / "p").exists()
    code, _, err = cli("init")
    assert code == 2 and err.count("\n") == 1 and "--list-templates" in err
    code, out, _ = cli("init", "--list-templates")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == list(TEMPLATES)
    assert out.splitlines()[0].endswith("(default)")


def test_a_failure_midway_leaves_nothing_half_written(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = []

    def broken_rename(src: object, dst: object) -> None:  # every file goes through the one writer's rename
        calls.append(dst)
        raise OSError(28, "No space left on device")

    from biasaudit._util import fileio

    monkeypatch.setattr(fileio.os, "replace", broken_rename)
    code, _, err = cli("init", str(tmp_path / "p"), "--template", "fisco")
    assert calls and code == 2 and err.count("\n") == 1 and "the disk is full" in err
    assert list(tmp_path.iterdir()) == []  # neither the folder nor the scratch folder
    # into an existing empty folder: it stays empty
    (tmp_path / "q").mkdir()
    assert cli("init", str(tmp_path / "q"))[0] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["q"] and list((tmp_path / "q").iterdir()) == []
