"""Review in the viewer page (issue 41, section 1): the sheet rows the page embeds are the
ones `biasaudit annotate export` writes for the same units (unit id, request key, the
record's three hashes, the answer and prompt text, the label set and legend), computed
from the run's files, with hostile text; a long answer cut in the card travels whole to
the sheet. The browser side is test_viewer_review_browser.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.coding.human_sheet import unsafe_cell
from tests.helpers import LONG, hostile_run, page_data

pytestmark = pytest.mark.slow  # one scripted run


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from biasaudit.cli.app import main

    workdir = tmp_path_factory.mktemp("hostile-review")
    (workdir / "reports").mkdir()
    return hostile_run(workdir, lambda *a: (main(list(a)), "", ""))


@pytest.mark.parametrize("layer", ["refusal", "stance"])
def test_the_page_holds_the_rows_annotate_export_writes(hostile: Path, cli, tmp_path: Path, layer: str) -> None:  # type: ignore[no-untyped-def]
    import csv

    out = tmp_path / "export.csv"
    code, _, err = cli("annotate", "export", str(hostile), "--layer", layer, "--n", "100", "-o", str(out))
    assert code == 0, err
    record = json.loads((tmp_path / "export.csv.sample.json").read_text(encoding="utf-8"))
    with out.open(newline="", encoding="utf-8") as f:
        sheet = {r["unit_id"]: r for r in csv.DictReader(f)}
    assert cli("view", str(hostile), "--out", str(tmp_path / "v.html"))[0] == 0
    data = page_data((tmp_path / "v.html").read_text(encoding="utf-8"))
    [rv] = data["review"]
    assert rv["run_id"] == record["run_id"] and rv["spec_sha256"] == record["spec_sha256"]
    assert rv["format"] == record["format"]
    assert rv["format_version"] == record["format_version"] == 2  # the viewer's record states its layout too
    [lay] = [x for x in rv["layers"] if x["name"] == layer]
    assert lay["labels"] == record["labels"]
    page = {x["unit"]: x for x in rv["rows"]}
    assert len(record["units"]) >= 6
    for u in record["units"]:  # every unit the export could draw is offered in the page, identically
        x = page[u["id"]]
        row = data["rows"][x["row"]]
        assert (x["key"], x["answer_sha256"], x["shown_sha256"], x["prompt_sha256"]) == (
            u["key"], u["answer_sha256"], u["shown_sha256"], u["prompt_sha256"])
        answer = x["answer"] if x["answer"] is not None else row["answer"]
        prompt = x["prompt"] if x["prompt"] is not None else row["prompt"]
        assert answer == unsafe_cell(sheet[u["id"]]["answer"]) and prompt == unsafe_cell(sheet[u["id"]]["prompt"])
        assert lay["legend"] == sheet[u["id"]]["allowed_labels"]
    # the long answer is cut in its card but whole on the sheet
    [long_row] = [x for x in rv["rows"] if x["answer"] == LONG]
    assert len(data["rows"][long_row["row"]]["answer"]) < len(LONG)
    # human layers are what a review writes, and numbers are not labels: neither is offered
    assert {x["name"] for x in rv["layers"]} == {"refusal", "stance"}
