"""BBQ records with a field of the wrong type (issue 26, low): a `label`, `target_loc`,
`answer_info` entry or text field that is null, a list, a string, a bool, a fraction or
out of range is one line naming the file, the record's line and the field, exit code 2,
with nothing written. Before, `int(None)` or `int([2])` ended in a traceback, and `"2"`,
`true` or `2.0` were silently taken as 2 or 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.unit.hostile._cases import error_lines

SAMPLE = Path(__file__).resolve().parents[4] / "specs" / "data" / "bbq_sample.jsonl"


def _record() -> dict[str, object]:
    return json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])


def _info(entry: object) -> dict[str, object]:
    info = dict(_record()["answer_info"])  # type: ignore[call-overload]
    info["ans0"] = entry
    return {"answer_info": info}


def _meta(groups: object) -> dict[str, object]:
    return {"additional_metadata": {"stereotyped_groups": groups}}


# (fields changed in the second record, the field the error must name, what it must show)
CASES: dict[str, tuple[dict[str, object], str, str]] = {
    "label null": ({"label": None}, "label", "got null"),
    "label list": ({"label": [2]}, "label", "got [2]"),
    "label string": ({"label": "2"}, "label", 'got "2"'),
    "label bool": ({"label": True}, "label", "got true"),
    "label fraction": ({"label": 2.0}, "label", "got 2.0"),
    "label out of range": ({"label": 7}, "label", "got 7"),
    "label negative": ({"label": -1}, "label", "got -1"),
    "label object": ({"label": {"a": 1}}, "label", 'got {"a": 1}'),
    "target_loc list": ({"target_loc": [0]}, "target_loc", "got [0]"),
    "target_loc bool": ({"target_loc": False}, "target_loc", "got false"),
    "target_loc out of range": ({"target_loc": 3}, "target_loc", "got 3"),
    "answer_info entry null": (_info(None), "answer_info.ans0", "got null"),
    "answer_info entry too short": (_info(["grandmother"]), "answer_info.ans0", 'got ["grandmother"]'),
    "answer_info group a list": (_info(["grandmother", ["old"]]), "answer_info.ans0", "two strings"),
    "answer_info a list": ({"answer_info": [1, 2, 3]}, "answer_info", "got [1, 2, 3]"),
    "context null": ({"context": None}, "context", "got null"),
    "question a list": ({"question": ["Who?"]}, "question", 'got ["Who?"]'),
    "ans1 an object": ({"ans1": {"text": "x"}}, "ans1", 'got {"text": "x"}'),
    "polarity a bool": ({"question_polarity": True}, "question_polarity", "got true"),
    "stereotyped groups of numbers": (_meta([1, 2]), "stereotyped_groups", "got [1, 2]"),
    "example_id null": ({"example_id": None}, "example_id", "got null"),
    "category a list": ({"category": ["Age"]}, "category", 'got ["Age"]'),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_bbq_record_of_the_wrong_type_is_one_line(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    change, field, shown = CASES[name]
    good = _record()
    bad = {**good, "example_id": 1, **change}
    data = workdir / "bbq.jsonl"
    # a blank line before the bad record: the error names its line in the file, not its index
    data.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n", encoding="utf-8")
    code, out, err = cli("run", "spec=bbq", "model=scripted", f"stimuli.source={data}", *isolation(workdir))
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert line.startswith(f"error: {data}: stimuli: line 3: ") and field in line and shown in line, line
    assert "hint:" in line
    assert not any((workdir / "reports").iterdir()) and not (workdir / "cache.sqlite").exists()


def test_the_published_layout_still_loads(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Integers where BBQ has them (`example_id`, `label`), strings elsewhere, a
    `target_loc` of null or "" (absent) or an integer, all load."""
    rows = [json.loads(x) for x in SAMPLE.read_text(encoding="utf-8").splitlines()[:3]]
    rows[0]["target_loc"] = None
    rows[1]["target_loc"] = ""
    data = workdir / "ok.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = cli("validate", "spec=bbq", "model=scripted", f"stimuli.source={data}")
    assert code == 0 and "3 stimuli" in out, err
