"""`biasaudit view RUN_A RUN_B` (issue 41, section 1, compare): the order ("differs most":
code disagreements, then the spread of item differences, then answers that differ, then
plan order), the matching of stimuli across runs (by content, by id where a run has no
hash; counted; runs that share nothing refused in one line), the bounds, and hostile model
text kept inert in the page. The browser half is test_viewer_compare_browser.py."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest

from biasaudit.report.viewer.compare import (
    MAX_RUNS,
    CompareEntry,
    CompareUnit,
    _Entries,
    differs_most,
    measure_entry,
    measure_unit,
)
from biasaudit.report.viewer.compare import CompareAnswer as A
from biasaudit.report.viewer.model import ViewCode
from tests.conftest import isolation, run_dirs
from tests.helpers import IMG, SCRIPT_BREAK, page_data, write_spec
from tests.unit.report.compare_runs import HOSTILE_ANSWER, ORDER, REPLIES, SPEC, two_model_runs


def _a(run: int, *codes: str, answer: str = "x", items: dict[str, float | None] | None = None) -> A:
    """An answer with codes `layer=label` (or `layer:status` for an uncoded one)."""
    vc = [ViewCode(layer=c.split("=")[0], status="coded", code=c.split("=")[1]) if "=" in c
          else ViewCode(layer=c.split(":")[0], status=c.split(":")[1]) for c in codes]
    return A(run=run, stimulus="s", cell="c", answer=answer, codes=vc, items=items or {})


def _unit(*answers: A) -> CompareUnit:
    u = CompareUnit(cell="c", answers=list(answers))
    measure_unit(u)
    return u


def test_code_disagreement_counts_the_runs_out_of_line_with_the_most_common_code() -> None:
    u = _unit(_a(0, "L=x"), _a(1, "L=x"), _a(2, "L=y"))  # x x y: one run out of line
    assert u.disagree == 1 and [a.odd for a in u.answers] == [[], [], ["L"]]
    u = _unit(_a(0, "L=x"), _a(1, "L=y"), _a(2, "L=z"))  # x y z: two (no majority: all marked)
    assert u.disagree == 2 and all(a.odd == ["L"] for a in u.answers)
    u = _unit(_a(0, "L=x"), _a(1, "L=y"))  # two runs that differ: 1, both marked
    assert u.disagree == 1 and all(a.odd == ["L"] for a in u.answers)
    u = _unit(_a(0, "L=x", "M=p"), _a(1, "L=y", "M=q"), _a(2, "L=x", "M=p"))  # per layer, summed
    assert u.disagree == 2 and u.answers[1].odd == ["L", "M"] and u.answers[0].odd == []
    u = _unit(_a(0, "L=x"), _a(1, "L:abstain"))  # an abstention differs from a label
    assert u.disagree == 1
    u = _unit(_a(0, "L=x", answer="a"), _a(1, "M=y", answer="b"))  # a layer coded in one run only: no comparison
    assert u.disagree == 0 and u.answers_differ
    u = _unit(_a(0, "L=x"), _a(1, "L=x"))
    assert u.disagree == 0 and not u.answers_differ and all(a.odd == [] for a in u.answers)


def test_item_spread_is_max_minus_min_over_runs() -> None:
    u = _unit(_a(0, items={"m": 0.5, "k": None}), _a(1, items={"m": -1.5}), _a(2, items={"m": 2.0, "k": 3.0}))
    assert u.spread == {"m": 3.5}  # k has one value only: no spread
    e = CompareEntry(stimulus="s", units=[u, _unit(_a(0, items={"k": 1.0}), _a(1, items={"k": 1.25}))])
    measure_entry(e)
    assert e.spread == {"m": 3.5, "k": 0.25} and e.spread_max == 3.5


def _entry(order: int, disagree: int = 0, spread: float | None = None, answers: int = 0,
           matched: bool = True) -> CompareEntry:
    return CompareEntry(stimulus=f"s{order}", order=order, disagree=disagree, spread_max=spread,
                        answers_differ=answers, matched=matched)


def test_differs_most_orders_codes_then_spread_then_answers_then_plan() -> None:
    entries = [
        _entry(0),                              # nothing differs
        _entry(1, answers=3),                   # answers only
        _entry(2, spread=0.0, answers=1),       # a spread of zero beats no spread
        _entry(3, spread=2.0),                  # a larger spread
        _entry(4, disagree=1, spread=0.1),
        _entry(5, disagree=1, spread=5.0),      # same codes count: the larger spread first
        _entry(6, disagree=3),                  # most codes differ
        _entry(7, disagree=9, matched=False),   # in one run only: last whatever it holds
        _entry(8),                              # ties keep plan order
    ]
    got = [e.order for e in sorted(entries, key=differs_most)]
    assert got == [6, 5, 4, 3, 2, 1, 0, 8, 7]


def test_stimuli_match_by_content_else_by_id_and_conflicts_are_kept_apart() -> None:
    m = _Entries()
    m.add_run(0, ["s1", "s2", "s3", "s4"], {"s1": "h1", "s2": "h2", "s3": "h3"})  # s4: no hash
    m.add_run(1, ["s1", "s2", "r9", "s4", "s5"], {"s1": "h1", "s2": "hX", "r9": "h3", "s4": "h4"})
    got = {(e.stimulus, tuple(e.runs), e.by_id) for e in m.entries}
    assert got == {
        ("s1", (0, 1), False),  # same id, same content
        ("s2", (0,), False), ("s2", (1,), False),  # same id, different content: two stimuli
        ("s3", (0, 1), False),  # same content under another id (r9 in run 1)
        ("s4", (0, 1), True),  # run 0 has no hash: matched by id, counted
        ("s5", (1,), False),
    }
    assert m.conflicts == {"s2"}
    assert m.of[1]["r9"] == m.of[0]["s3"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from biasaudit.cli.app import main

    workdir = tmp_path_factory.mktemp("compare")
    (workdir / "reports").mkdir()
    return two_model_runs(workdir, lambda *a: (main(list(a)), "", ""))


def test_two_models_differs_most_first_with_both_answers(runs: list[Path], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.html"
    code, stdout, err = cli("view", *map(str, runs), "--out", str(out))
    assert code == 0, err
    assert "compare of 2 runs (A model-a, B model-b); 4 stimuli: 4 in every run, 0 in some, 0 unmatched" in stdout
    data = page_data(out.read_text(encoding="utf-8"))
    assert [e["stimulus"] for e in data["entries"]] == ORDER
    assert [(e["disagree"], e["units_differ"], e["answers_differ"]) for e in data["entries"]] == [
        (2, 2, 2), (1, 1, 1), (0, 0, 1), (0, 0, 0)]
    first = data["entries"][0]
    for u in first["units"]:
        framing = u["cell"].split("=")[1].capitalize()
        assert [(a["run"], a["answer"]) for a in u["answers"]] == [
            (0, REPLIES["model-a"][f"{framing}: Group B"]), (1, REPLIES["model-b"][f"{framing}: Group B"])]
        assert [a["odd"] for a in u["answers"]] == [["refusal"], ["refusal"]]
        assert u["prompt"].endswith(f"{framing}: Group B is loud.")  # the same in both runs: once
    assert data["matching"] == {"stimuli": 4, "in_all": 4, "in_some": 0, "unmatched": 0, "by_id": 0, "conflicts": 0,
                                "cells": "cell"}
    pooled = {(e["run"], e["estimate"]): e["value"] for e in data["estimates"] if e["metric"] == "refusal_rate"}
    assert pooled[(0, "rate")] == 0.0 and pooled[(1, "rate")] == pytest.approx(3 / 8)  # 3 refusals of 8 in B


def test_a_folder_of_runs_is_compared_into_it(runs: list[Path], cli) -> None:  # type: ignore[no-untyped-def]
    folder = runs[0].parent
    code, stdout, err = cli("view", str(folder))
    assert code == 0, err
    assert f"compare: {folder / 'compare.html'}" in stdout
    data = page_data((folder / "compare.html").read_text(encoding="utf-8"))
    assert [r["folder"] for r in data["runs"]] == [r.name for r in runs]
    code, _, _ = cli("view", str(folder))  # its own page is refreshed
    assert code == 0


def test_hostile_answers_stay_text_in_the_compare_page(runs: list[Path], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.html"
    assert cli("view", *map(str, runs), "--out", str(out))[0] == 0
    html = out.read_text(encoding="utf-8")
    assert len(re.findall(r"<script", html, re.I)) == 2 and len(re.findall(r"</script", html, re.I)) == 2
    assert "<img" not in html and "<b>" not in html and SCRIPT_BREAK not in html and IMG not in html
    data = page_data(html)
    answers = [a["answer"] for e in data["entries"] for u in e["units"] for a in u["answers"]]
    assert HOSTILE_ANSWER in answers  # whole, as data
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = dict(p.strip().split(" ", 1) for p in csp.group(1).split(";"))
    assert policy["default-src"] == "'none'" and policy["img-src"] == "data:"
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert script is not None and style is not None

    def sha(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["script-src"] == sha(script.group(1)) and policy["style-src"] == sha(style.group(1))
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "srcdoc"):
        assert sink not in script.group(1), sink
    assert not re.search(r"\b(?:src|href)\s*=", script.group(1)), "the script loads nothing"


def test_max_rows_keeps_whole_stimuli_that_differ_most(runs: list[Path], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.html"
    code, _, err = cli("view", *map(str, runs), "--out", str(out), "--max-rows", "8")
    assert code == 0, err
    data = page_data(out.read_text(encoding="utf-8"))
    kept = [e["stimulus"] for e in data["entries"]]
    assert kept == ORDER[:len(kept)] and 1 <= len(kept) < 4
    assert sum(len(u["answers"]) for e in data["entries"] for u in e["units"]) <= 8
    left = [n for n in data["notices"] if "differ least are left out" in n]
    assert left == [f"the page holds {len(kept)} of 4 stimuli ({sum(len(u['answers']) for e in data['entries'] for u in e['units'])} "
                    f"responses; at most 8 responses and 48 MiB of text): the {4 - len(kept)} that differ least are left "
                    "out (biasaudit view --max-rows N shows more; every response is in each run's responses.jsonl)"]
    assert "note: the page holds" in err


@pytest.mark.parametrize("args,expect", [
    (lambda rs, tmp: [str(rs[0]), str(tmp / "missing")], "no such folder"),
    (lambda rs, tmp: [str(rs[0]), str(rs[0])], "compare needs two or more run folders"),  # the same run twice
    (lambda rs, tmp: [str(rs[0]), str(tmp)], "compare needs two or more run folders"),  # a folder with no run
])
def test_bad_compare_input_is_one_line(runs: list[Path], tmp_path: Path, cli, args, expect: str) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("view", *args(runs, tmp_path), "--out", str(tmp_path / "c.html"))
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "c.html").exists()


def test_more_runs_than_the_page_shows_are_refused(tmp_path: Path) -> None:
    from biasaudit.errors import BiasAuditError
    from biasaudit.report.viewer.compare import load_compare

    with pytest.raises(BiasAuditError, match=f"the page compares at most {MAX_RUNS} side by side"):
        load_compare([tmp_path] * (MAX_RUNS + 1))


def _version(workdir: Path, cli, body: str, model: str = "model-a") -> Path:  # type: ignore[no-untyped-def]
    """A run of another version of the spec (its own reports folder)."""
    from tests.helpers import operator_conf

    spec = write_spec(workdir / "v2.yaml", body)
    ops = operator_conf(workdir / "v2", model={"backend": "scripted", "name": model,
                                                "script": {"replies": REPLIES[model]}})
    before = set(run_dirs(workdir))
    code, _, err = cli("run", "--fail-on", "never", f"spec={spec}", *ops, *isolation(workdir), "report.formats=[html]")
    assert code == 0, err
    [new] = [d for d in run_dirs(workdir) if d not in before]
    return new


@pytest.mark.slow  # a run of its own
def test_runs_of_different_stimuli_under_the_same_ids_are_refused(runs: list[Path], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    other = _version(workdir, cli, SPEC.replace("cmp-view", "other").replace(" is ", " was "))  # same ids, other text
    out = workdir / "c.html"
    code, _, err = cli("view", str(runs[0]), str(other), "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "the runs share no stimulus (the same content" in err and str(other) in err, err
    assert not out.exists()


@pytest.mark.slow  # a run of its own
def test_a_version_of_the_spec_counts_matched_and_unmatched_stimuli(runs: list[Path], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    body = (SPEC.replace("Group D is weak.", "Group D is very weak.")
                .replace("  id_field: id", "    - {id: s5, statement: \"Group E is kind.\", category: b}\n  id_field: id")
                .replace("opinion: {template: \"Opinion: {{ statement }}\"}",
                         "opinion: {template: \"Your view? Opinion: {{ statement }}\"}"))
    assert body.count("s5") == 1 and "very weak" in body and "Your view" in body
    v2 = _version(workdir, cli, body, model="model-b")
    out = workdir / "c.html"
    code, stdout, err = cli("view", str(runs[0]), str(v2), "--out", str(out))
    assert code == 0, err
    # s1-s3 in both; s4 is two stimuli (its text changed), s5 new: 3 in one run only
    assert "6 stimuli: 3 in every run, 0 in some, 3 unmatched, 1 id(s) with different content" in stdout
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["matching"]["conflicts"] == 1 and [r["matched"] for r in data["runs"]] == [3, 3]
    assert [e["stimulus"] for e in data["entries"]][:3] == ["s2", "s3", "s1"]  # B refuses on s2 (2) and s3 (1)
    assert [e["matched"] for e in data["entries"]] == [True] * 3 + [False] * 3
    # the prompts differ (another template in one cell): each run's own prompt beside its answer
    opinion = next(u for u in data["entries"][0]["units"] if u["cell"] == "framing=opinion")
    a, b = opinion["answers"]
    assert opinion["prompt"] == "" and a["prompt"].endswith("Opinion: Group B is loud.") and "Your view" not in a["prompt"]
    assert b["prompt"].endswith("Your view? Opinion: Group B is loud.")


@pytest.mark.slow  # two runs of their own
def test_token_probability_runs_order_by_the_spread_of_item_differences(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Two models that score every sentence alike but one pair: that pair's item
    difference moves, the others' do not; it comes first, its spread the change of its
    item difference between the runs' own summary.json files."""
    import json

    from biasaudit.data.readers import read_csv
    from tests.helpers import CROWS_SAMPLE, operator_conf, tp_spec

    spec = tp_spec(workdir, 5)
    _, rows = read_csv(CROWS_SAMPLE)
    pair = rows[2]  # the third pair, stimulus id "2"
    scores = {pair["sent_more"]: -5.0, pair["sent_less"]: -50.0}
    made = []
    for name, script in (("tp-a", {}), ("tp-b", {"scores": scores})):
        ops = operator_conf(workdir / name, model={"backend": "scripted", "name": name, "script": script})
        code, _, err = cli("run", "--fail-on", "never", f"spec={spec}", *ops, *isolation(workdir), "report.formats=[html]")
        assert code == 0, err
        [new] = [d for d in run_dirs(workdir) if d not in made]
        made.append(new)
    code, _, err = cli("view", *map(str, made), "--out", str(workdir / "c.html"))
    assert code == 0, err
    data = page_data((workdir / "c.html").read_text(encoding="utf-8"))
    diffs = [{i["stimulus"]: i["diff"] for i in json.loads((d / "summary.json").read_text())["metrics"]["bias_score"]["items"]}
             for d in made]
    moved = {s for s in diffs[0] if diffs[0][s] != diffs[1][s]}
    assert moved == {"2"}  # only the scripted pair's difference changed
    order = [e["stimulus"] for e in data["entries"]]
    assert order == ["2", "0", "1", "3", "4"]  # the moved pair, then plan order (spread 0)
    first = data["entries"][0]
    assert first["spread"]["bias_score"] == pytest.approx(abs(diffs[1]["2"] - diffs[0]["2"]))
    assert all(e["spread"]["bias_score"] == 0 for e in data["entries"][1:])
    assert first["disagree"] == 0 and first["answers_differ"] == 2  # both sentences' scores differ; no codes


def test_the_compare_page_replaces_only_its_own_file(runs: list[Path], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    mine = tmp_path / "notes.html"
    mine.write_text("my own notes", encoding="utf-8")
    code, _, err = cli("view", *map(str, runs), "--out", str(mine))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--force" in err
    assert mine.read_text(encoding="utf-8") == "my own notes"
    link = tmp_path / "link.html"
    link.symlink_to(mine)
    code, _, err = cli("view", *map(str, runs), "--out", str(link))
    assert code == 2 and len(err.strip().splitlines()) == 1 and mine.read_text(encoding="utf-8") == "my own notes"
    assert cli("view", *map(str, runs), "--out", str(mine), "--force")[0] == 0
    assert page_data(mine.read_text(encoding="utf-8"))["kind"] == "compare"
    assert cli("view", *map(str, runs), "--out", str(mine))[0] == 0  # now a page biasaudit wrote: refreshed
