"""`biasaudit annotate export` on bad arguments: one error line naming what is wrong and
the fix, exit code 2, nothing written (the run itself is exercised end to end in
tests/integration/test_human_review_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(("args", "says"), [
    (["--n", "0"], "--n must be 1 or more"),
    (["-o", "{tmp}/sheet.xlsx"], "unknown sheet format '.xlsx'"),
    (["-o", "{tmp}/folder.csv"], "the sheet path is a directory"),
    (["-o", "{tmp}/null.csv"], "is a symbolic link"),  # a link to /dev/null: never followed
    ([], "no manifest.json here"),
])
def test_bad_arguments_are_one_error_line(cli, tmp_path: Path, args: list[str], says: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "null.csv").symlink_to("/dev/null")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out" / "sheet.csv")]
    code, out, err = cli("annotate", "export", str(tmp_path / "no-run"), "--layer", "stance", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err and "hint:" in err
    assert not (tmp_path / "out").exists()


def test_an_existing_sheet_is_not_replaced(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("unit_id,label\nu1,E\n", encoding="utf-8")
    code, _, err = cli("annotate", "export", str(tmp_path), "--layer", "stance", "-o", str(sheet))
    assert code == 2 and "the sheet exists already" in err and "--force" in err
    assert sheet.read_text(encoding="utf-8") == "unit_id,label\nu1,E\n"


def test_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    from biasaudit.cli.app import main

    with pytest.raises(SystemExit):
        main(["annotate", "export", "--help"])
    out = capsys.readouterr().out
    assert "--stratify FIELD" in out and "--with-codes" in out and "coder: human" in out and "PPI" in out


# -- a filled sheet whose answers were rewritten is refused on import (issue 39, item 7) --

REVIEW_SPEC = """
audit: {name: review, method: label_rates}
stimuli:
  inline:
    - {id: a1, group: A, statement: "alpha one"}
    - {id: a2, group: A, statement: "alpha two"}
    - {id: b1, group: B, statement: "beta one"}
    - {id: b2, group: B, statement: "beta two"}
  id_field: id
factors:
  framing:
    ask: {template: "What about {{ statement }}?"}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies: {alpha: "I cannot answer that.", beta: "Sure, here it is."}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules:
      - {pattern: "^I cannot", label: refuse}
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse], by: [group]}
"""

HUMAN_LAYER = """
  human_refusal: {coder: human, sheet: review.csv}
reliability:
  - pair: [human_refusal, refusal]
metrics:"""


def test_a_sheet_with_a_rewritten_answer_is_refused_on_import(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    import csv
    import hashlib
    import json

    from tests.conftest import isolation, run_dirs
    from tests.helpers import spec_and_operator

    spec, ops = spec_and_operator(workdir / "review.yaml", REVIEW_SPEC)
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    [run] = run_dirs(workdir)
    sheet = workdir / "review.csv"
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "-o", str(sheet))
    assert code == 0, err
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    record_file = workdir / "review.csv.sample.json"
    for r in rows:
        r["label"] = "refuse" if r["answer"].startswith("I cannot") else "answer"

    def exact(text: str) -> str:  # the record's hashes as docs/coding-layers.md defines them
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def shown(text: str) -> str:
        return exact(text.replace("\r\n", "\n").replace("\r", "\n").strip())

    def write(rows: list[dict[str, str]]) -> None:
        with sheet.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)

    spec.write_text(spec.read_text(encoding="utf-8").replace("\nmetrics:", HUMAN_LAYER, 1), encoding="utf-8")
    write(rows)
    code, _, err = cli("validate", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err  # the sheet as exported, labelled: accepted

    # a refusal rewritten into an answer, labelled as one: refused, the row and the fix named
    i = next(n for n, r in enumerate(rows) if r["answer"].startswith("I cannot"))
    forged = [dict(r) for r in rows]
    forged[i].update(answer="Sure, here it is.", label="answer")
    write(forged)
    code, out, err = cli("validate", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 2 and err.count("\n") == 1 and str(sheet) in err, err
    assert f"row {i + 1}: the answer of unit {rows[i]['unit_id']!r} is not the one exported for it" in err
    assert "restore the answer cell" in err

    # the record vouches for each row's answer and prompt as shown
    record = json.loads(record_file.read_text(encoding="utf-8"))
    by_id = {u["id"]: u for u in record["units"]}
    for r in rows:
        u = by_id[r["unit_id"]]
        assert (u["answer_sha256"], u["shown_sha256"], u["prompt_sha256"]) == (exact(r["answer"]), shown(r["answer"]),
                                                                               shown(r["prompt"]))
    # the record forged along with the sheet: the run's own answers refuse it, nothing is run
    by_id[rows[i]["unit_id"]].update(shown_sha256=shown("Sure, here it is."), answer_sha256=exact("Sure, here it is."))
    record_file.write_text(json.dumps(record), encoding="utf-8")
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    [line] = [x for x in err.splitlines() if x.startswith("error: ")]  # the others are progress lines
    assert code == 2 and str(sheet) in line, err
    assert "has another answer here" in line and "record was edited" in line
    assert len(run_dirs(workdir)) == 1
