"""Human review (issue 29, point 3): an annotation sheet written in the export's format,
filled programmatically with known labels and read back by the `human` coder; the gold
report's agreement, confusion matrix and PPI interval against a hand computation; hostile
sheets (unknown unit, label outside the set, a unit twice, a sheet from another run, a
missing sampling record) as one error line naming the file and the row."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

from biasaudit.coding.human_review import gold_reports
from biasaudit.coding.human_sheet import (
    COLUMNS,
    answer_hash,
    record_path,
    safe_cell,
    sheet_text,
    unsafe_cell,
)
from biasaudit.coding.stage import run_coding
from biasaudit.errors import BiasAuditError, DataError
from biasaudit.records.codes import Unit
from biasaudit.runner.annotate import allocate
from tests.coding_helpers import answered, config, plan, unit

REFUSE, ANSWER = "I cannot help with that.", "=1+1 is two, sure."  # the answer a spreadsheet would run


def _units() -> tuple[list[Unit], list[str]]:
    """20 units, one stimulus each: u0-u9 refused (the rules say refuse), u10-u19 answered."""
    units = [unit(i, stimulus=f"s{i}", fields={"statement": "x", "group": "A" if i < 10 else "B"})
             for i in range(20)]
    return units, [REFUSE if i < 10 else ANSWER for i in range(20)]


SAMPLED = [0, 1, 2, 3, 10, 11, 12, 13, 14]
HUMAN = {0: "refuse", 1: "refuse", 2: "refuse", 3: "answer", 10: "answer", 11: "answer", 12: "answer",
         13: "answer", 14: ""}  # u3: the humans disagree with the rules; u14 left blank


def _export(tmp_path: Path, units: list[Unit], texts: list[str], fmt: str = "csv",
            picked: list[int] | None = None) -> Path:
    """A sheet and its sampling record in format 1, as `annotate export` wrote them before
    2026-11 (git show 3b73aea:framework/biasaudit/coding/human_sheet.py): no
    `format_version`, no `selection`, each unit with only the exact answer's hash.
    `_hashed` makes the record today's (format 2)."""
    picked = SAMPLED if picked is None else picked
    sheet = tmp_path / f"sheet.{fmt}"
    rows = [{"unit_id": units[i].id, "prompt": "p", "answer": texts[i], "allowed_labels": "refuse | answer",
             "label": "", "note": ""} for i in picked]
    sheet.write_text(sheet_text(rows, COLUMNS, fmt), encoding="utf-8")
    rec = {"format": "biasaudit-annotation-sheet/1", "run_id": "r1", "run_dir": "runs/r1", "spec_sha256": "x",
           "layer": "refusal", "labels": ["refuse", "answer"], "stratify": None, "seed": 0,
           "requested": len(picked), "population": {"all": len(units)}, "sampled": {"all": len(picked)},
           "with_codes": False,
           "units": [{"id": units[i].id, "key": units[i].key, "stratum": "all",
                      "answer_sha256": answer_hash(texts[i])} for i in picked]}
    record_path(sheet).write_text(json.dumps(rec, indent=1), encoding="utf-8")
    return sheet


def _fill(sheet: Path, labels: dict[str, str]) -> None:
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["label"] = labels.get(r["unit_id"], "")
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _cfg(tmp_path: Path, sheet: Path) -> Any:
    return config(tmp_path, coding={
        "refusal": {"coder": "rules", "labels": ["refuse", "answer"], "otherwise": "answer",
                    "rules": [{"pattern": "^I cannot", "label": "refuse"}]},
        "human": {"coder": "human", "sheet": str(sheet)}},
        reliability=[{"pair": ["human", "refusal"]}])


def _no_calls(layer: str, wanted: list[Any]) -> dict[Any, Any]:
    raise AssertionError(f"layer {layer} asked a model")


def _code(tmp_path: Path, sheet: Path, units: list[Unit], texts: list[str]) -> Any:
    cfg = _cfg(tmp_path, sheet)
    p = plan(cfg, {"statement", "group"})
    return p, run_coding(p, units, answered(units, texts), _no_calls)


def test_a_filled_sheet_round_trips_into_agreement_and_ppi(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    raw = sheet.read_text(encoding="utf-8")
    assert '"\'=1+1 is two, sure."' in raw  # the formula is defused in the csv
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    p, result = _code(tmp_path, sheet, units, texts)
    human = result.codes["human"]
    assert human["u0"].label == "refuse" and human["u0"].source == "human"
    assert human["u14"].status == "not_applicable" and "not annotated" in human["u14"].detail.reason
    assert human["u5"].status == "not_applicable" and human["u5"].detail.reason == "not sampled for human review"
    [g] = gold_reports(p, units, result.codes)
    assert (g.population, g.sampled, g.annotated, g.blank) == (20, 9, 8, 1)
    [rater] = g.raters
    # 8 units labelled by both; the rules miss on u3 only: accuracy 7/8
    assert rater.n == 8 and rater.accuracy.value == pytest.approx(7 / 8)
    lo, hi = proportion_confint(7, 8, method="wilson")  # one unit per stimulus: the plain Wilson interval
    assert (rater.accuracy.ci_low, rater.accuracy.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # kappa: po = 7/8; humans refuse 3 of 8, the rules 4 of 8: pe = 3/8*4/8 + 5/8*4/8 = 1/2
    assert rater.kappa.value == pytest.approx((7 / 8 - 1 / 2) / (1 - 1 / 2))
    assert rater.labels[:2] == ["refuse", "answer"] and rater.confusion == [[3, 0], [1, 4]]
    rate = next(r for r in g.rates if r.label == "refuse")
    # 3 of the 8 human labels say refuse: too few of each kind for PPI (stats/ppi.py
    # MIN_EACH = 5), so the humans-only Wilson interval stands in its place, saying why
    lo, hi = proportion_confint(3, 8, method="wilson")
    assert rate.ppi.method == "wilson" and rate.ppi.value == pytest.approx(3 / 8)
    assert (rate.ppi.ci_low, rate.ppi.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert rate.ppi.note.startswith("PPI not used: 3 of the 8 human labels give the label")
    assert "1 sampled unit(s) left blank" in rate.ppi.note
    assert rate.judge.value == pytest.approx(0.5)
    assert rate.human.value == pytest.approx(3 / 8)


def test_a_jsonl_sheet_reads_back_the_same(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts, fmt="jsonl")
    rows = [json.loads(line) for line in sheet.read_text(encoding="utf-8").splitlines()]
    assert rows[4]["answer"] == ANSWER  # jsonl keeps the text as written
    for r in rows:
        r["label"] = HUMAN[int(r["unit_id"][1:])] or None
    sheet.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    p, result = _code(tmp_path, sheet, units, texts)
    [g] = gold_reports(p, units, result.codes)
    assert (g.annotated, g.blank, g.raters[0].confusion) == (8, 1, [[3, 0], [1, 4]])


@pytest.mark.parametrize("text", ["=cmd|' /C calc'!A0", "+1", "-2+3", "@SUM(A1)", "\tx", "plain", "'quoted",
                                  "'=1+1", "''+2", "'", "''"])
def test_formula_cells_are_defused_and_read_back_unchanged(text: str) -> None:
    cell = safe_cell(text)
    assert cell[:1] not in ("=", "+", "-", "@", "\t")
    assert unsafe_cell(cell) == text


def _error(tmp_path: Path, sheet: Path, units: list[Unit], texts: list[str]) -> BiasAuditError:
    with pytest.raises(BiasAuditError) as exc:
        _code(tmp_path, sheet, units, texts)
    line = exc.value.one_line()
    assert "\n" not in line and str(sheet) in line
    return exc.value


@pytest.mark.parametrize(("edit", "where", "what"), [
    (lambda rows: rows[1].update(unit_id="u99"), "row 2", "unit 'u99' was not sampled"),
    (lambda rows: rows[0].update(label="maybe"), "row 1", "label 'maybe' is not one of the allowed labels"),
    (lambda rows: rows[2].update(unit_id=rows[0]["unit_id"]), "row 3", "appears twice (first on row 1)"),
    (lambda rows: rows[0].update(unit_id=""), "row 1", "`unit_id` is blank"),
])
def test_hostile_sheets_are_one_error_line_with_file_and_row(tmp_path: Path, edit: Any, where: str,
                                                            what: str) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    edit(rows)
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    err = _error(tmp_path, sheet, units, texts)
    assert isinstance(err, DataError) and err.message.startswith(f"{where}: ") and what in err.message
    assert err.hint


def test_empty_rows_and_padded_labels_are_read_as_people_leave_them(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _fill(sheet, {units[0].id: " refuse ", units[10].id: "'answer"})  # a quote only defuses formulas
    with sheet.open("a", encoding="utf-8") as f:
        f.write(",,,,,\n\n")  # a spreadsheet's trailing empty row, and a blank line
    with pytest.raises(DataError, match="row 5: label \"'answer\" is not one of"):
        _code(tmp_path, sheet, units, texts)
    _fill(sheet, {units[0].id: " refuse ", units[10].id: "answer"})
    with sheet.open("a", encoding="utf-8") as f:
        f.write(",,,,,\n")
    _, result = _code(tmp_path, sheet, units, texts)
    assert result.codes["human"]["u0"].label == "refuse" and result.codes["human"]["u10"].label == "answer"


def test_a_label_column_missing_or_a_record_missing_is_an_error(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    record_path(sheet).unlink()
    assert "no sampling record sheet.csv.sample.json" in _error(tmp_path, sheet, units, texts).message
    sheet = _export(tmp_path, units, texts)
    record_path(sheet).write_text('{"format": "biasaudit-annotation-sheet/1"', encoding="utf-8")
    assert "sampling record is not usable" in _error(tmp_path, sheet, units, texts).message
    sheet = _export(tmp_path, units, texts)
    sheet.write_text('"unit_id","answer"\n"u0","x"\n', encoding="utf-8")
    assert "no 'label' column" in _error(tmp_path, sheet, units, texts).message


def test_a_sheet_from_another_run_is_refused(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _fill(sheet, {units[0].id: "refuse"})
    # the same units, but another answer (another model or decoding): caught by the answer hash
    other = list(texts)
    other[0] = "Something else."
    err = _error(tmp_path, sheet, units, other)
    assert "sampled from another run: unit 'u0' has another answer here" in err.message
    # another request behind the unit (another prompt or model)
    moved = [u if u.id != "u1" else dataclasses.replace(u, key="other") for u in units]
    assert "asks another request here" in _error(tmp_path, sheet, moved, texts).message
    # units the run does not have at all
    err = _error(tmp_path, sheet, units[5:], texts[5:])
    assert "4 of its units are not in this run (first: 'u0'" in err.message


def test_ppi_is_undefined_when_the_sheet_sampled_another_layer(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    rec = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    rec["layer"] = "stance"
    record_path(sheet).write_text(json.dumps(rec), encoding="utf-8")
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    p, result = _code(tmp_path, sheet, units, texts)
    [g] = gold_reports(p, units, result.codes)
    assert g.raters[0].accuracy.value == pytest.approx(7 / 8)  # agreement does not depend on it
    assert all(r.ppi.value is None and "sampled the units layer 'stance' coded" in r.ppi.note for r in g.rates)


def test_allocation_gives_each_stratum_two_then_shares_by_size() -> None:
    assert allocate({"A": 8, "B": 8}, 8) == {"A": 4, "B": 4}
    # A 90, B 10, C 1: two each (C has one), the 15 left shared 90:10 -> 13.5 and 1.5;
    # the tie of remainders goes to A by name
    assert allocate({"A": 90, "B": 10, "C": 1}, 20) == {"A": 16, "B": 3, "C": 1}
    assert allocate({"A": 3, "B": 2}, 50) == {"A": 3, "B": 2}  # fewer units than asked: all of them
    with pytest.raises(BiasAuditError, match="cannot give each of the 3 strata 2 units"):
        allocate({"A": 5, "B": 5, "C": 5}, 5)


def test_each_judge_of_a_panel_gets_its_own_confusion_matrix(tmp_path: Path) -> None:
    from biasaudit.coding.human_review import gold_report
    from biasaudit.coding.layers import ReliabilityPair
    from biasaudit.records.codes import Code

    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    p, result = _code(tmp_path, sheet, units, texts)
    # a panel's codes: j1 always agrees with the rules, j2 says refuse on every unit; the
    # pair maps the panel's own words onto the humans' labels
    words = {"refuse": "R", "answer": "A"}
    panel = {u: Code(unit=u, status="coded", label=words[c.label or ""], source="judge_panel",
                     detail={"votes": {"j1": words[c.label or ""], "j2": "R"}})
             for u, c in result.codes["refusal"].items()}
    codes = {**result.codes, "panel": panel}
    layers = {**p.layers, "panel": p.layers["refusal"]}
    rep = gold_report(ReliabilityPair("human", "panel", map_b={"R": "refuse", "A": "answer"}), layers, units, codes)
    assert rep is not None
    by = {r.rater: r for r in rep.raters}
    assert set(by) == {"panel", "panel: j1", "panel: j2"}
    assert by["panel: j1"].confusion == [[3, 0], [1, 4]]
    # j2: every human label met by refuse: humans' 3 refuse right, 5 answer wrong
    assert by["panel: j2"].confusion == [[3, 0], [5, 0]]
    assert by["panel: j2"].accuracy.value == pytest.approx(3 / 8)
    assert by["panel: j2"].kappa.value == pytest.approx(0.0)  # po = pe = 3/8


# -- a row whose answer or prompt was rewritten is refused, nothing imported (issue 39, item 7) --

def _rewrite(sheet: Path, row: int, **cells: str) -> None:
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    rows[row - 1].update(cells)
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _hashed(sheet: Path, texts: list[str], prompt: str = "p") -> None:
    """The record as today's export writes it (format 2): the shown answer's and prompt's
    hashes too (sha256 of the text with `\n` line ends and no outer white space:
    docs/coding-layers.md)."""
    import hashlib

    def shown_hash(text: str) -> str:
        return hashlib.sha256(text.replace("\r\n", "\n").replace("\r", "\n").strip().encode("utf-8")).hexdigest()

    rec = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    for u in rec["units"]:
        u["shown_sha256"] = shown_hash(texts[int(u["id"][1:])])
        u["prompt_sha256"] = shown_hash(prompt)
    rec.update(format_version=2, selection="random", exact_answers=False)
    record_path(sheet).write_text(json.dumps(rec), encoding="utf-8")


@pytest.mark.parametrize("new_record", [False, True])
def test_a_rewritten_answer_is_refused_naming_the_row(tmp_path: Path, new_record: bool) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    if new_record:
        _hashed(sheet, texts)
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    _rewrite(sheet, 2, answer="I am happy to help with that.")  # u1: the model refused
    _rewrite(sheet, 7, answer="'=1+1 is three.")
    err = _error(tmp_path, sheet, units, texts)
    assert isinstance(err, DataError) and (err.key or "").endswith("sheet"), err.key
    assert err.message.startswith("row 2: the answer of unit 'u1' is not the one exported for it (1 more row(s) "
                                  "changed, e.g. row 7)"), err.message
    assert "restore the answer cell" in (err.hint or "") and "export the sheet again" in (err.hint or "")


def test_a_rewritten_prompt_is_refused(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, texts)
    _rewrite(sheet, 3, prompt="Is this answer fine?")
    err = _error(tmp_path, sheet, units, texts)
    assert err.message.startswith("row 3: the prompt of unit 'u2' is not the one exported for it"), err.message


def test_a_sheet_edited_with_its_record_is_refused_against_the_run(tmp_path: Path) -> None:
    # the record's hashes rewritten to match the forged cell: the run's own answer decides
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    forged = list(texts)
    forged[10] = "I cannot help with that."  # u10 answered; the sheet now shows a refusal
    _hashed(sheet, forged)
    rec = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    for u in rec["units"]:
        u["answer_sha256"] = answer_hash(forged[int(u["id"][1:])])
    record_path(sheet).write_text(json.dumps(rec), encoding="utf-8")
    _rewrite(sheet, 5, answer=forged[10])
    _fill(sheet, {units[10].id: "refuse"})
    err = _error(tmp_path, sheet, units, texts)
    assert "another answer here" in err.message and "record was edited" in (err.hint or "")
    # a record untouched but the sheet's rows checked against the run, not against it
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, forged)  # shown hashes of the forged text only: the exact ones still the run's
    _rewrite(sheet, 5, answer=forged[10])
    err = _error(tmp_path, sheet, units, texts)
    assert err.message.startswith("row 5: the answer of unit 'u10' is not the answer this run gave it"), err.message


def test_line_ends_and_outer_space_a_spreadsheet_changes_still_read_back(tmp_path: Path) -> None:
    units, texts = _units()
    texts = [t + "\nsecond line" for t in texts]
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, texts)
    _rewrite(sheet, 1, answer=texts[0].replace("\n", "\r\n") + "  ")
    _fill(sheet, {units[0].id: "refuse"})
    _, result = _code(tmp_path, sheet, units, texts)
    assert result.codes["human"]["u0"].label == "refuse"


def test_a_sheet_without_its_answer_column_is_refused(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = [{k: v for k, v in r.items() if k != "answer"} for r in csv.DictReader(f)]
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert "the sheet has no 'answer' column" in _error(tmp_path, sheet, units, texts).message
    sheet = _export(tmp_path, units, texts, fmt="jsonl")
    lines = [json.loads(x) for x in sheet.read_text(encoding="utf-8").splitlines()]
    lines[1].pop("answer")
    sheet.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    assert _error(tmp_path, sheet, units, texts).message.startswith("line 2: no `answer` text")


def test_a_sheet_chosen_in_the_viewer_gives_agreement_but_no_rate(tmp_path: Path) -> None:
    """A sheet whose units a reviewer picked in the viewer (`selection: chosen`, issue 41)
    is a convenience sample: the same agreement as the drawn sheet with the same labels,
    but no humans-only rate and no PPI estimate, each saying why."""
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    rec = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    rec.update(selection="chosen", seed=None)
    record_path(sheet).write_text(json.dumps(rec), encoding="utf-8")
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    p, result = _code(tmp_path, sheet, units, texts)
    assert result.codes["human"]["u0"].detail.chosen is True
    [g] = gold_reports(p, units, result.codes)
    assert (g.selection, g.population, g.sampled, g.annotated, g.blank) == ("chosen", 20, 9, 8, 1)
    [rater] = g.raters
    lo, hi = proportion_confint(7, 8, method="wilson")
    assert rater.accuracy.value == pytest.approx(7 / 8)
    assert (rater.accuracy.ci_low, rater.accuracy.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert rater.confusion == [[3, 0], [1, 4]]
    for r in g.rates:
        assert r.ppi.value is None and r.ppi.note.startswith("undefined: the sheet's units were chosen by a reviewer")
        assert r.human.value is None and "convenience sample" in r.human.note
        assert r.judge.value == pytest.approx(0.5)


# -- the sampling record's format version (issue 40, section 1) --------------------------------
# `_export` writes format 1 by hand (the layout main wrote before 2026-11), `_hashed` format 2.

def test_a_format_1_record_is_read_through_its_upgrade_and_codes_a_filled_sheet(tmp_path: Path) -> None:
    from biasaudit.coding.human_sheet import read_record

    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    raw = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    assert "format_version" not in raw and "shown_sha256" not in raw["units"][0] and "selection" not in raw
    rec = read_record(sheet, "sheet")
    # upgraded: today's record, which says once that the answers must be exact
    assert (rec.format_version, rec.exact_answers, rec.selection) == (2, True, "random")
    assert [u.answer_sha256 for u in rec.units] == [answer_hash(texts[i]) for i in SAMPLED]
    _fill(sheet, {units[i].id: lab for i, lab in HUMAN.items()})
    _, result = _code(tmp_path, sheet, units, texts)
    assert [result.codes["human"][units[i].id].label for i in SAMPLED] == \
        ["refuse", "refuse", "refuse", "answer", "answer", "answer", "answer", "answer", None]


def test_a_format_1_record_with_the_shown_hashes_is_checked_as_today_s(tmp_path: Path) -> None:
    """Records main wrote from 2026-11 until versions existed had the hashes but no
    `format_version`: format 1, read with the line-end-tolerant check."""
    from biasaudit.coding.human_sheet import read_record

    units, texts = _units()
    texts = [t + "\nsecond line" for t in texts]
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, texts)
    raw = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    for k in ("format_version", "selection", "exact_answers"):
        raw.pop(k)
    record_path(sheet).write_text(json.dumps(raw), encoding="utf-8")
    assert read_record(sheet, "sheet").exact_answers is False
    _rewrite(sheet, 1, answer=texts[0].replace("\n", "\r\n") + "  ")
    _fill(sheet, {units[0].id: "refuse"})
    _, result = _code(tmp_path, sheet, units, texts)
    assert result.codes["human"]["u0"].label == "refuse"


def test_a_format_1_record_without_shown_hashes_needs_the_exact_answer(tmp_path: Path) -> None:
    units, texts = _units()
    texts = [t + "\nsecond line" for t in texts]
    sheet = _export(tmp_path, units, texts)
    _rewrite(sheet, 1, answer=texts[0].replace("\n", "\r\n"))  # what a spreadsheet may do: not exact any more
    err = _error(tmp_path, sheet, units, texts)
    assert err.message.startswith("row 1: the answer of unit 'u0' is not the one exported for it"), err.message
    assert "predates line-end-tolerant checks" in (err.hint or "")


def test_a_format_2_record_round_trips(tmp_path: Path) -> None:
    from biasaudit.coding.human_sheet import SampledUnit, SampleRecord, read_record, shown_hash

    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    rec = SampleRecord(format_version=2, run_id="r1", run_dir="runs/r1", spec_sha256="x", layer="refusal",
                       labels=["refuse", "answer"], stratify=None, seed=3, requested=9,
                       population={"all": 20}, sampled={"all": 9},
                       units=[SampledUnit(id=units[i].id, key=units[i].key, stratum="all",
                                          answer_sha256=answer_hash(texts[i]), shown_sha256=shown_hash(texts[i]),
                                          prompt_sha256=shown_hash("p")) for i in SAMPLED])
    record_path(sheet).write_text(rec.model_dump_json(indent=1), encoding="utf-8")
    written = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    assert written["format_version"] == 2 and written["exact_answers"] is False
    assert read_record(sheet, "sheet") == rec
    _fill(sheet, {units[0].id: "refuse"})
    assert _code(tmp_path, sheet, units, texts)[1].codes["human"]["u0"].label == "refuse"


def test_a_record_of_a_newer_format_is_refused_with_the_one_line(tmp_path: Path) -> None:
    from biasaudit.records.upgrade import NewerFormatError

    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, texts)
    raw = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    record_path(sheet).write_text(json.dumps({**raw, "format_version": 3, "reviewer": "x"}), encoding="utf-8")
    err = _error(tmp_path, sheet, units, texts)
    assert isinstance(err, NewerFormatError)  # a DataError: exit 2 at the command line
    assert err.one_line().startswith(f"error: {record_path(sheet)}: format_version: written by a newer biasaudit: "
                                     "format 3 of annotation_sample; this version reads up to 2; upgrade biasaudit")


@pytest.mark.parametrize(("where", "key"), [("top", "reviewer"), ("unit", "units.0.colour")])
def test_an_unknown_key_of_the_record_is_refused_naming_file_and_key(tmp_path: Path, where: str, key: str) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    for version in (1, 2):
        if version == 2:
            _hashed(sheet, texts)
        raw = json.loads(record_path(sheet).read_text(encoding="utf-8"))
        if where == "top":
            raw["reviewer"] = "x"
        else:
            raw["units"][0]["colour"] = 1
        record_path(sheet).write_text(json.dumps(raw), encoding="utf-8")
        err = _error(tmp_path, sheet, units, texts)
        assert err.one_line().startswith(f"error: {record_path(sheet)}: unknown key {key!r} (format {version} of "
                                         "annotation_sample has no such key)"), err.one_line()
        sheet = _export(tmp_path, units, texts)


def test_a_format_2_record_without_the_shown_hashes_is_refused(tmp_path: Path) -> None:
    """Only the upgrade of a format-1 record may leave the shown hashes out: a format-2
    record without them (an edited file) is not read as an old one."""
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _hashed(sheet, texts)
    raw = json.loads(record_path(sheet).read_text(encoding="utf-8"))
    del raw["units"][1]["shown_sha256"]
    record_path(sheet).write_text(json.dumps(raw), encoding="utf-8")
    err = _error(tmp_path, sheet, units, texts)
    assert err.message.startswith("the sampling record lacks a usable 'units' (Value error, unit 1 has no "
                                  "shown_sha256 (a format-2 record needs it))"), err.message
