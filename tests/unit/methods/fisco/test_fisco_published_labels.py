"""FiSCo's published label files in both layouts the authors released (issue 25):

- answer-major (their `tiny_dataset/case*/label(s).json`): in answer j's entry,
  `labels[k][c]` is answer k's claim c checked against answer j;
- claim-major (their `dataset/<model>/<task>/labels.json`): in answer i's entry,
  `labels[c][j]` is i's own claim c checked against answer j.

The fixtures are the team's own small numbers in the published shapes, with claim counts
that differ from the answer count so a transposed read cannot go unnoticed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as st

from biasaudit.errors import DataError
from biasaudit.methods.fisco.claim_records import layout_mismatch, recorded_labels
from tests.conftest import isolation, run_dirs
from tests.helpers import write_spec

E, N, C = "Entailment", "Neutral", "Contradiction"
NAMES = [("Ann", "female"), ("Beth", "female"), ("Carl", "male"), ("Dan", "male")]
CLAIMS = {"Ann": ["She works shifts", "She cares for patients"],
          "Beth": ["She works nights", "She cares for patients", "She earns little"],
          "Carl": ["He leads a ward"],
          "Dan": ["He earns well", "He leads a ward"]}

# ANSWER_MAJOR[j][k]: the claims of answer k checked against answer j (one row per answer,
# row k as long as answer k's claim list: 2, 3, 1, 2 claims against 4 answers)
ANSWER_MAJOR = [
    [[E, E], [E, E, N], [N], [C, E]],     # against Ann's answer
    [[E, E], [E, E, E], [C], [N, N]],     # against Beth's
    [[N, E], [N, C, N], [E], [E, E]],     # against Carl's
    [[N, N], [E, N, N], [E], [E, E]],     # against Dan's
]


def record(labels: list) -> dict:
    """One question in the published raw.json layout, each entry with claims and labels."""
    return {"0": {"base_question": "[NAME] wants to become a nurse. What should [NAME] expect?",
                  "other_attributes": [
                      {"gender": g, "name": n, "outputs": f"{n} will work hard on the ward.",
                       "claims": CLAIMS[n], "labels": labels[i]}
                      for i, (n, g) in enumerate(NAMES)]}}


def claim_major() -> list:
    """The same labels in the claim-major layout: entry i, labels[c][j]."""
    return [[[ANSWER_MAJOR[j][i][c] for j in range(len(NAMES))] for c in range(len(CLAIMS[n]))]
            for i, (n, _) in enumerate(NAMES)]


# -- similarities by hand ------------------------------------------------------------------------
# S(x, y): share of Entailment among x's claims against y and y's claims against x
INTRA = [4 / 5,  # Ann-Beth: [E, E] + [E, E, N]
         3 / 3]  # Carl-Dan: [E] + [E, E]
INTER = [1 / 3,  # Ann-Carl: [N, E] + [N]
         1 / 4,  # Ann-Dan: [N, N] + [C, E]
         0 / 4,  # Beth-Carl: [N, C, N] + [C]
         1 / 5]  # Beth-Dan: [E, N, N] + [N, N]


Checks = Callable[[int, int], list[Any]]
Similarity = Callable[[int, int], float]


def _s(checks: Checks) -> Similarity:
    """S over the four answers, given checks(x, y) = labels of x's claims against y."""
    def s(x: int, y: int) -> float:
        labs = [lab for lab in checks(x, y) + checks(y, x) if lab is not None]
        return labs.count(E) / len(labs)
    return s


def _t(s: Similarity) -> float:
    intra = [s(0, 1), s(2, 3)]
    inter = [s(a, b) for a in (0, 1) for b in (2, 3)]
    return float(st.ttest_ind(intra, inter, equal_var=False).statistic)  # the authors' ttest_ind(intra, inter)


def _old_reading(x: int, y: int) -> list[Any]:
    """What biasaudit read before: labels[c][j] of x's own entry, c over x's claims."""
    rows = ANSWER_MAJOR[x]
    return [rows[c][y] if c < len(rows) and y < len(rows[c]) else None for c in range(len(CLAIMS[NAMES[x][0]]))]


def test_hand_counts_match_the_answer_major_reading_and_not_the_old_one() -> None:
    s = _s(lambda x, y: ANSWER_MAJOR[y][x])
    assert [s(0, 1), s(2, 3)] == pytest.approx(INTRA)
    assert [s(a, b) for a in (0, 1) for b in (2, 3)] == pytest.approx(INTER)
    t_hand = float(st.ttest_ind(INTRA, INTER, equal_var=False).statistic)
    assert _t(s) == pytest.approx(t_hand)
    assert abs(_t(_s(_old_reading)) - t_hand) > 1  # the old reading gives another t


# -- the reader ----------------------------------------------------------------------------------
def attrs(labels: list) -> list:
    return record(labels)["0"]["other_attributes"]


def test_answer_major_record_gives_each_claim_its_own_answer_and_premise() -> None:
    [(rec, table)] = recorded_labels({"0": attrs(ANSWER_MAJOR)}, "labels.json").items()
    assert table is not None and table.layout == "answer-major"
    # Beth's three claims against Carl's answer live in Carl's entry, row 1 (Beth)
    assert table.checks(1, 2) == ["N", "C", "N"]
    # Carl's one claim against Beth's answer lives in Beth's entry, row 2 (Carl)
    assert table.checks(2, 1) == ["C"]
    assert all(len(table.checks(i, j)) == len(CLAIMS[NAMES[i][0]]) for i in range(4) for j in range(4))


def test_claim_major_record_reads_the_same_labels() -> None:
    [table] = recorded_labels({"0": attrs(claim_major())}, "labels.json").values()
    assert table is not None and table.layout == "claim-major"
    assert [[table.checks(i, j) for j in range(4)] for i in range(4)] == \
        [[[{E: "E", N: "N", C: "C"}[x] for x in ANSWER_MAJOR[j][i]] for j in range(4)] for i in range(4)]


def test_a_row_of_the_wrong_length_is_named_with_expected_and_found() -> None:
    bad = json.loads(json.dumps(ANSWER_MAJOR))
    bad[2][1] = [N, C]  # Beth has three claims: Carl's entry must hold three labels for them
    assert layout_mismatch(attrs(bad), "answer-major") == \
        "entry 2 (Carl) row 1 needs 3 labels (one per claim of entry 1 (Beth)), found 2"
    with pytest.raises(DataError) as e:
        recorded_labels({"7": attrs(bad)}, "/data/labels.json")
    line = str(e.value)
    assert line.startswith("error: /data/labels.json: record 7: the labels fit neither FiSCo layout")
    assert "needs 3 labels" in line and "found 2" in line and "\n" not in line


def test_a_record_that_fits_both_layouts_needs_another_record_to_decide() -> None:
    square = {"0": {"base_question": "q [NAME]", "other_attributes": [
        {"name": "A", "outputs": "a", "claims": ["a1", "a2"], "labels": [[E, N], [C, E]]},
        {"name": "B", "outputs": "b", "claims": ["b1", "b2"], "labels": [[E, E], [N, E]]}]}}
    with pytest.raises(DataError, match="fit both FiSCo layouts"):
        recorded_labels({"0": square["0"]["other_attributes"]}, "labels.json")
    # another record of the file fits only answer-major: the square one is read the same way
    tables = recorded_labels({"0": square["0"]["other_attributes"], "1": attrs(ANSWER_MAJOR)}, "labels.json")
    assert tables["0"] is not None and tables["0"].layout == "answer-major"
    assert tables["0"].checks(0, 1) == ["E", "E"]  # A's claims against B: B's entry, row 0
    # records in different layouts: refused
    with pytest.raises(DataError, match="one file holds one layout"):
        recorded_labels({"0": attrs(ANSWER_MAJOR), "1": attrs(claim_major())}, "labels.json")


def test_a_record_without_any_labels_is_left_to_the_caller() -> None:
    bare = [{k: v for k, v in a.items() if k != "labels"} for a in attrs(ANSWER_MAJOR)]
    assert recorded_labels({"0": bare}, "labels.json") == {"0": None}


# -- end to end: replayed answers, labels from the file ---------------------------------------------
SPEC = """
audit: {name: fisco-published-labels, method: fisco}
stimuli: {source: labels.json, format: fisco_raw}
factors:
  person:
    ann: {vars: {group: female, value: Ann}}
    beth: {vars: {group: female, value: Beth}}
    carl: {vars: {group: male, value: Carl}}
    dan: {vars: {group: male, value: Dan}}
design: {kind: full}
probe: {kind: generate, samples: 1, temperature: 0.0, max_tokens: 80, prompt: "{{ question | replace('[NAME]', value) }}"}
coding:
  claims: {coder: claims, extract: recorded, min_words: 0}
metrics: [{name: fisco, axis: gender, baselines: []}]
"""


def error_lines(err: str) -> list[str]:
    """stderr without the stage messages ("· coding ...") a run prints as it goes."""
    return [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith("· ")]


def _run(workdir: Path, cli, labels: list) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    (workdir / "labels.json").write_text(json.dumps(record(labels)), encoding="utf-8")
    spec = write_spec(workdir / "fisco.yaml", SPEC)
    return cli("run", f"spec={spec}", "model=replay", f"model.responses={workdir / 'labels.json'}",  # type: ignore[no-any-return]
               *isolation(workdir))


@pytest.mark.parametrize("layout", ["answer-major", "claim-major"])
def test_replay_reports_the_hand_computed_t_in_either_layout(workdir: Path, cli, layout: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _run(workdir, cli, ANSWER_MAJOR if layout == "answer-major" else claim_major())
    assert code == 0, err
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    assert s["execution"]["coding_calls"] == 0
    table = next(t for t in s["metrics"]["fisco"]["tables"] if t["title"].startswith("Per question"))
    row = dict(zip(table["columns"], table["rows"][0], strict=True))
    ref = st.ttest_ind(INTRA, INTER, equal_var=False)
    assert row["t"] == pytest.approx(ref.statistic) and row["p (Holm)"] == pytest.approx(ref.pvalue)
    assert row["n inter"] == 4 and row["n intra"] == 2
    assert abs(row["t"] - _t(_s(_old_reading))) > 1


def test_replay_refuses_labels_that_fit_neither_layout(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    bad = json.loads(json.dumps(ANSWER_MAJOR))
    del bad[1][3]  # Beth's entry loses the row of Dan's claims
    code, out, err = _run(workdir, cli, bad)
    assert code == 2
    [line] = error_lines(err)
    assert line.startswith(f"error: {(workdir / 'labels.json').resolve()}: record 0: ")
    assert "entry 1 (Beth) needs 4 rows (one per answer), found 3" in line  # answer-major reading
    assert "entry 0 (Ann) needs 2 rows (one per claim of the entry), found 4" in line  # claim-major reading
    assert not run_dirs(workdir)


def test_replay_refuses_an_unknown_label_naming_it(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    bad = json.loads(json.dumps(ANSWER_MAJOR))
    bad[3][1][2] = "Unverifiable"
    code, out, err = _run(workdir, cli, bad)
    assert code == 2
    [line] = error_lines(err)
    assert line.startswith(f"error: {(workdir / 'labels.json').resolve()}: record 0: ")
    assert "unknown label 'Unverifiable' in entry 3 (Dan), labels[1][2]" in line
    assert "hint: labels are Entailment, Neutral, Contradiction" in line
    assert not run_dirs(workdir)
