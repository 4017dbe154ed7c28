"""Issue 39 item 3: a model answer holding every character Unicode calls a line break
(and NUL) goes through every tool that writes or reads the
audit trail: the run's responses.jsonl and codes.jsonl, `annotate export` (csv and
jsonl sheets) and the sheet read back as a `human` layer, `pack`, `verify`, a re-run
with `model=replay` from the trail, and the viewer page. `str.splitlines()` breaks at
all of them; a JSON-lines file breaks at "\\n" only (framework/biasaudit/_util/trail.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import page_data, read_jsonl, spec_and_operator

# every str.splitlines() separator ("\n" itself is escaped by JSON anyway) and NUL (an
# unpaired surrogate cannot pass a spec; tests/unit/_util/test_trail.py covers it)
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
HOSTILE = "".join(f"w{i}{c}" for i, c in enumerate(BREAKS)) + "\x00nul\r\nend"

SPEC = """
audit: {name: breaks, method: label_rates}
stimuli:
  inline:
    - {id: a1, group: A, statement: "alpha one"}
    - {id: a2, group: A, statement: "alpha two"}
    - {id: b1, group: B, statement: "beta one"}
    - {id: b2, group: B, statement: "beta two"}
  id_field: id
probe: {kind: generate, max_tokens: 20, prompt: "What about {{ statement }}?"}
model:
  backend: scripted
  name: subject
  script:
    replies: {alpha: HOSTILE_A, beta: HOSTILE_B}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules:
      - {keywords: ["w0"], label: refuse}
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse], by: [group]}
"""
ANSWER_A = "w0 " + HOSTILE
ANSWER_B = "sure " + HOSTILE[3:]

HUMAN = """
  human_refusal:
    coder: human
    sheet: SHEET
reliability:
  - pair: [human_refusal, refusal]
metrics:"""


def _run(cli, workdir: Path, spec: Path, ops: list[str], *extra: str) -> Path:  # type: ignore[no-untyped-def]
    before = set(run_dirs(workdir))
    code, _, err = cli("run", "--fail-on", "never", f"spec={spec}", *ops, *extra, *isolation(workdir))
    assert code == 0, err
    [run] = [d for d in run_dirs(workdir) if d not in before]
    return run


@pytest.fixture
def hostile(workdir: Path, cli) -> tuple[Path, Path, list[str]]:  # type: ignore[no-untyped-def]
    body = SPEC.replace("HOSTILE_A", json.dumps(ANSWER_A)).replace("HOSTILE_B", json.dumps(ANSWER_B))
    spec, ops = spec_and_operator(workdir / "breaks.yaml", body)
    return _run(cli, workdir, spec, ops), spec, ops


def test_the_answers_survive_the_run_folder(hostile: tuple[Path, Path, list[str]]) -> None:
    run, _, _ = hostile
    trail = read_jsonl(run / "responses.jsonl")
    assert sorted(r["output"]["text"] for r in trail) == sorted([ANSWER_A, ANSWER_B] * 2)
    # one record per line, and no line break any line splitter knows inside a line
    for name in ("responses.jsonl", "codes.jsonl"):
        text = (run / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) == text.count("\n") == len(read_jsonl(run / name)) + 1  # + the header
    codes = read_jsonl(run / "codes.jsonl")
    assert sorted(c["label"] for c in codes) == ["answer", "answer", "refuse", "refuse"]


def test_annotate_export_and_import(hostile: tuple[Path, Path, list[str]], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run, spec, ops = hostile
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4",
                       "-o", str(workdir / "coded.jsonl"), "--with-codes")
    assert code == 0, err
    coded = read_jsonl(workdir / "coded.jsonl")
    assert sorted(r["answer"] for r in coded) == sorted([ANSWER_A, ANSWER_B] * 2)
    sheet = workdir / "review.csv"
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4", "-o", str(sheet))
    assert code == 0, err
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    for r in rows:  # people label what they read: the rules' labels
        r["label"] = "refuse" if r["answer"].startswith("w0") else "answer"
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    spec.write_text(spec.read_text(encoding="utf-8").replace("\nmetrics:", HUMAN.replace("SHEET", sheet.name), 1),
                    encoding="utf-8")
    second = _run(cli, workdir, spec, ops)
    gold = json.loads((second / "summary.json").read_text(encoding="utf-8"))["coding"]["gold"]
    assert gold[0]["annotated"] == 4 and gold[0]["raters"][0]["accuracy"]["value"] == pytest.approx(1.0)


def test_pack_and_verify(hostile: tuple[Path, Path, list[str]], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run, _, _ = hostile
    pack = workdir / "audit.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack))
    assert code == 0, err + out
    code, out, err = cli("verify", str(pack))
    assert code == 0 and "byte-identical" in out, err + out


def test_replay_of_the_trail(hostile: tuple[Path, Path, list[str]], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run, spec, ops = hostile
    ops = [o for o in ops if not o.startswith("model=")]
    again = _run(cli, workdir, spec, ops, "model=replay", f"model.responses={run / 'responses.jsonl'}")
    assert [r["output"] for r in read_jsonl(again / "responses.jsonl")] == \
        [r["output"] for r in read_jsonl(run / "responses.jsonl")]
    assert (again / "codes.jsonl").read_bytes() == (run / "codes.jsonl").read_bytes()


def test_the_viewer_page(hostile: tuple[Path, Path, list[str]], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run, _, _ = hostile
    page = workdir / "page.html"
    code, _, err = cli("view", str(run), "--out", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert not any(c in html for c in "\x00\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e")  # escaped, never raw
    data = page_data(html)
    answers = json.dumps(data)
    assert data["notices"] == [] or not any("could not be read" in n for n in data["notices"])
    assert "w9\\u2029" in answers and "w7\\u0085" in answers  # the whole answer reached the page
