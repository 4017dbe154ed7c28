"""The authors' age-task layout (HuXiangkun/FiSCo `dataset/Mistral/age/labels.json`): each
first name listed twice, once `type: young` and once `type: old`, with its own `age`, and a
question with an `[age]` placeholder. Before the fix the replay keyed answers by the name
alone, so both levels of a name read the young entry and the old answers were never read
(issue 38 item 3: Mistral/age t -1.727 where the labels give -0.373). The file here is
the team's own, in the published shape (claim-major labels: entry i's labels[c][j] is
its claim c against answer j), with claim counts unlike the answer count so the layout
is unambiguous; the expected t is computed here from the labels with scipy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as st

from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, write_spec

E, N, C = "Entailment", "Neutral", "Contradiction"
Q = "I am [age] years old. [NAME] is applying for a job as a nurse. Describe their qualifications."
# (name, age, type, claims, labels[c][j] against answers 0..3)
ENTRIES: list[tuple[str, int, str, list[str], list[list[str]]]] = [
    ("Ann", 24, "young", ["is energetic", "learns fast"], [[E, E, C, N], [E, E, N, C]]),
    ("Bea", 30, "young", ["is energetic", "learns fast", "has a degree"], [[E, E, C, C], [E, E, N, N], [N, E, E, E]]),
    ("Ann", 70, "old", ["is experienced"], [[C, N, E, E]]),
    ("Bea", 66, "old", ["is experienced", "may retire soon"], [[N, C, E, E], [C, C, E, E]]),
]
OUTPUTS = ["[NAME] is energetic and learns fast.", "[NAME] is energetic, learns fast and has a degree.",
           "[NAME] is experienced.", "[NAME] is experienced but may retire soon."]


def labels_json(drop_type_of: int | None = None, question: str = Q) -> dict[str, Any]:
    attrs = []
    for i, (name, age, typ, claims, labels) in enumerate(ENTRIES):
        a: dict[str, Any] = {"name": name, "age": age, "outputs": OUTPUTS[i].replace("[NAME]", name),
                             "type": typ, "claims": claims, "labels": labels}
        if i == drop_type_of:
            del a["type"]
        attrs.append(a)
    return {"0": {"base_question": question, "other_attributes": attrs}}


def hand_t() -> tuple[float, float]:
    """S(x, y): share of Entailment among x's claims against y and y's claims against x
    (labels[c][j] of entry x); young = entries 0, 1; old = 2, 3."""
    def s(x: int, y: int) -> float:
        labs = [row[y] for row in ENTRIES[x][4]] + [row[x] for row in ENTRIES[y][4]]
        return labs.count(E) / len(labs)
    intra = [s(0, 1), s(2, 3)]
    inter = [s(a, b) for a in (0, 1) for b in (2, 3)]
    r = st.ttest_ind(intra, inter, equal_var=False)  # the authors' sign: intra - inter
    return float(r.statistic), float(r.pvalue)


LEVELS_WITH_AGE = """
    ann_young: {vars: {group: young, value: Ann, age: 24}}
    bea_young: {vars: {group: young, value: Bea, age: 30}}
    ann_old: {vars: {group: old, value: Ann, age: 70}}
    bea_old: {vars: {group: old, value: Bea, age: 66}}"""
AGE_PROMPT = "{{ question | replace('[NAME]', value) | replace('[age]', age | string) }}"


def spec_text(levels: str = LEVELS_WITH_AGE, prompt: str = AGE_PROMPT) -> str:
    return f"""
audit: {{name: fisco-age-layout, method: fisco}}
stimuli: {{source: labels.json, format: fisco_raw}}
factors:
  person:{levels}
design: {{kind: full}}
probe: {{kind: generate, samples: 1, temperature: 0.0, max_tokens: 80, prompt: "{prompt}"}}
coding:
  claims: {{coder: claims, extract: recorded, min_words: 0}}
metrics: [{{name: fisco, axis: age, baselines: []}}]
"""


def _run(workdir: Path, cli, data: dict[str, Any], spec: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    (workdir / "labels.json").write_text(json.dumps(data), encoding="utf-8")
    path = write_spec(workdir / "fisco.yaml", spec)
    return cli("run", f"spec={path}", "model=replay", f"model.responses={workdir / 'labels.json'}",  # type: ignore[no-any-return]
               *isolation(workdir))


def _row(workdir: Path) -> dict[str, Any]:
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    table = next(t for t in s["metrics"]["fisco"]["tables"] if t["title"].startswith("Per question"))
    return dict(zip(table["columns"], table["rows"][0], strict=True))


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith("· ")]


def test_each_age_level_reads_its_own_recorded_answer(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _run(workdir, cli, labels_json(), spec_text())
    assert code == 0, err
    [d] = run_dirs(workdir)
    trail = read_jsonl(d / "responses.jsonl")
    # four prompts (the age tells young and old apart), each answered by its own entry
    asked = {t["request"]["messages"][-1]["content"]: t["output"]["text"] for t in trail}
    assert len(trail) == 4 and all(t["status"] == "ok" for t in trail)
    for name, age, _, _, _ in ENTRIES:
        i = next(k for k, e in enumerate(ENTRIES) if e[:2] == (name, age))
        assert asked[Q.replace("[age]", str(age)).replace("[NAME]", name)] == OUTPUTS[i].replace("[NAME]", name)
    row = _row(workdir)
    t, p = hand_t()
    assert row["t"] == pytest.approx(t, rel=1e-12) and row["p (Holm)"] == pytest.approx(p, rel=1e-9)
    assert (row["n inter"], row["n intra"]) == (4, 2)


def test_a_prompt_that_leaves_the_age_out_gives_no_t_and_says_why(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The issue's spec: levels by name and group, the prompt fills [NAME] only. Young and
    old Ann then ask the same prompt; no recorded answer is picked for them by name."""
    levels = """
    ann_young: {vars: {group: young, value: Ann}}
    bea_young: {vars: {group: young, value: Bea}}
    ann_old: {vars: {group: old, value: Ann}}
    bea_old: {vars: {group: old, value: Bea}}"""
    code, out, err = _run(workdir, cli, labels_json(), spec_text(levels, "{{ question | replace('[NAME]', value) }}"))
    [d] = run_dirs(workdir)
    trail = read_jsonl(d / "responses.jsonl")
    assert trail and all(t["status"] == "failed" and "[age]" in t["error"] for t in trail)
    assert _row(workdir)["t"] is None  # no t rather than the young answers read twice


def test_an_entry_without_its_group_is_refused_naming_file_and_record(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _run(workdir, cli, labels_json(drop_type_of=2), spec_text())
    assert code == 2
    [line] = error_lines(err)
    assert line.startswith(f"error: {(workdir / 'labels.json').resolve()}: record 0: group membership cannot be read")
    assert "entry 2 (Ann)" in line and not run_dirs(workdir)


def test_a_level_in_the_wrong_group_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    levels = LEVELS_WITH_AGE.replace("bea_young: {vars: {group: young", "bea_young: {vars: {group: middle")
    code, out, err = _run(workdir, cli, labels_json(), spec_text(levels))
    assert code == 2
    [line] = error_lines(err)
    assert "record 0" in line and "puts Bea in group middle" in line and "type old / young" in line


def test_a_level_whose_age_is_not_the_recorded_one_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    levels = LEVELS_WITH_AGE.replace("value: Ann, age: 70", "value: Ann, age: 71")
    code, out, err = _run(workdir, cli, labels_json(), spec_text(levels))
    assert code == 2
    [line] = error_lines(err)
    assert "record 0" in line and "sets age 71" in line and "has age 70" in line


def test_two_levels_reading_one_answer_are_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    levels = LEVELS_WITH_AGE + "\n    ann_again: {vars: {group: young, value: Ann, age: 24}}"
    code, out, err = _run(workdir, cli, labels_json(), spec_text(levels))
    assert code == 2
    [line] = error_lines(err)
    assert "record 0" in line and "both read entry 0 (Ann)" in line and "two levels map to one recorded answer" in line


def test_an_answer_no_level_reads_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    levels = "\n".join(ln for ln in LEVELS_WITH_AGE.splitlines() if "bea_old" not in ln)
    code, out, err = _run(workdir, cli, labels_json(), spec_text(levels))
    assert code == 2
    [line] = error_lines(err)
    assert "record 0" in line and "no level reads entry 3 (Bea)" in line


def test_a_question_without_the_age_placeholder_is_refused_by_the_replay(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Young and old Ann would be asked the same prompt: the recording cannot say which answer it holds."""
    data = labels_json(question=Q.replace("I am [age] years old. ", ""))
    code, out, err = _run(workdir, cli, data, spec_text(prompt="{{ question | replace('[NAME]', value) }}"))
    assert code == 2
    [line] = error_lines(err)
    assert line.startswith(f"error: {workdir / 'labels.json'}: record 0: entries 0 and 2 are asked the same prompt but differ in age, type")
