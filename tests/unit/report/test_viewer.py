"""`biasaudit view` (issue 29, point 1): the page embeds every response of the run with its
prompt, answer, stimulus fields, group and every layer's code and evidence; estimates
name the responses behind them; untrusted text cannot break out of the data element;
what is left out is said; bad input is one line and exit code 2. The browser half
(filters, sort, links, no request, no console error) is in test_viewer_browser.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from biasaudit.report.answers import answer_text, prompt_text
from biasaudit.report.viewer.load import FIELD_CHARS, MAX_ROWS, TEXT_CHARS, _shares, in_subset
from biasaudit.report.viewer.page import embed_json
from tests.conftest import isolation, run_dirs
from tests.helpers import (
    CONTROL,
    FLAG,
    IMG,
    JINJA,
    LONG,
    SCRIPT_BREAK,
    codes_of,
    hostile_run,
    page_data,
    tp_spec,
    trail_of,
    verdict_code,
)

HOSTILE = [SCRIPT_BREAK, IMG, FLAG, JINJA, CONTROL, "\u2028", "\u2029", "<!--", "]]>", "\ud800", "é漢🙂"]


@pytest.mark.parametrize("text", HOSTILE)
def test_embedded_json_round_trips_and_cannot_close_its_element(text: str) -> None:
    out = embed_json({"t": text, "k" + text: [text, 1.5, float("nan"), float("inf")]})
    assert json.loads(out) == {"t": text, "k" + text: [text, 1.5, None, None]}
    assert out.isascii()  # U+2028/2029 and every control character are escapes
    assert not set(out) & {"<", ">", "&", "\x00"}
    assert "</" not in out.lower() and "<!--" not in out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hostile run for the module (each test writes its page elsewhere with --out)."""
    from biasaudit.cli.app import main

    workdir = tmp_path_factory.mktemp("hostile")
    (workdir / "reports").mkdir()
    return hostile_run(workdir, lambda *a: (main(list(a)), "", ""))


def _view(cli, run: Path, *more: str, out: Path | None = None) -> tuple[dict, str, str]:  # type: ignore[no-untyped-def]
    code, stdout, err = cli("view", str(run), *more, *(["--out", str(out)] if out else []))
    assert code == 0, err
    html = (out or run / "viewer.html").read_text(encoding="utf-8")
    return page_data(html), html, stdout + err


def test_every_response_with_its_prompt_answer_codes_and_group(hostile: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from biasaudit.plan.requests import Request
    from biasaudit.records.responses import Response

    run = hostile
    data, _, out = _view(cli, run)  # the default place: beside the report
    assert f"viewer: {run / 'viewer.html'}" in out and "8 of 8 responses" in out
    assert data["kind"] == "run" and data["notices"] == []  # inline stimuli: fields from the spec itself
    t = trail_of(run)
    assert len(data["rows"]) == len(t) == 8
    for row, line in zip(data["rows"], t, strict=True):
        req = Request.model_validate({**line["request"], "key": line["key"]})
        resp = Response.model_validate({"key": line["key"], "status": line["status"], "output": line["output"]})
        assert (row["cell"], row["stimulus"]) == (line["cell"], line["stimulus"])
        assert row["prompt"] == prompt_text(req)
        answer = answer_text(req, resp)
        assert row["answer"] == (answer if len(answer) <= TEXT_CHARS else row["answer"])
        assert row["groups"] == {"category": "a" if line["stimulus"] in ("s1", "s2") else "b"}
        assert row["fields"]["statement"] in row["prompt"]
    # the hostile texts arrive whole (the long one cut with a marker)
    answers = {r["answer"] for r in data["rows"]}
    assert f"Yes. {FLAG} {IMG}" in answers and f"Sure {CONTROL} {JINJA}" in answers
    long = next(a for a in answers if a.startswith("long "))
    assert long.startswith(LONG[:TEXT_CHARS]) and long.endswith(f"[... {len(LONG) - TEXT_CHARS} more characters cut]")
    assert any(SCRIPT_BREAK in r["prompt"] for r in data["rows"])
    # every layer's code for every response, with the coder's evidence
    by_unit = {}
    for c in codes_of(run):
        by_unit.setdefault(c["unit"], {})[c["layer"]] = c
    for row in data["rows"]:
        unit = by_unit[f"{row['cell']}|{row['stimulus']}|{row['slot']}|{row['variant']}|{row['sample']}"]
        assert [c["layer"] for c in row["codes"]] == ["refusal", "stance"]
        for c in row["codes"]:
            want = unit[c["layer"]]
            assert c["code"] == (want["label"] or "") and c["status"] == want["status"]
        stance = next(c for c in row["codes"] if c["layer"] == "stance")
        votes = unit["stance"]["detail"]["votes"]
        assert stance["why"] == "votes: " + json.dumps(votes, separators=(",", ":"))
    refusal = [c for r in data["rows"] for c in r["codes"] if c["layer"] == "refusal"]
    assert sum(c["code"] == "refuse" for c in refusal) == 1  # "I'm sorry, I cannot." once
    assert next(c for c in refusal if c["code"] == "refuse")["why"].startswith("span: [0,9]; token: I'm sorry")


def test_verdicts_and_estimates_name_the_responses_behind_them(hostile: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = hostile
    data, _, _ = _view(cli, run, out=tmp_path / "v.html")
    summary = json.loads((run / "summary.json").read_text())
    worst = next(v for v in summary["verdicts"] if v["over"] == "worst_cell")
    pooled = next(v for v in summary["verdicts"] if v["over"] == "pooled")
    for row in data["rows"]:  # the pooled threshold covers every response, the worst cell's only its cell
        want = {pooled["verdict"]} | ({worst["verdict"]} if row["cell"] == worst["cell"] else set())
        assert set(row["verdicts"]) == want
    est = {(e["metric"], e["estimate"], e["cell"]): e for e in data["estimates"]}
    head = est[("refusal_rate", "rate", "")]
    assert head["headline"] and head["verdicts"] == [pooled["verdict"]]
    assert head["value"] == summary["metrics"]["refusal_rate"]["estimates"]["rate"]["value"]
    assert est[("endorsement_rate", "rate", worst["cell"])]["verdicts"] == [worst["verdict"]]
    g = est[("refusal_rate", "rate.category.b", "")]
    assert (g["field"], g["values"]) == ("category", ["b"])
    c = est[("refusal_rate", "contrast.category.a-b", "")]
    assert (c["field"], c["values"]) == ("category", ["a", "b"])
    # every estimate of the summary is in the page: pooled and per cell
    n = sum(len(m["estimates"]) + sum(len(cs) for cs in (m.get("cells") or {}).values())
            for m in summary["metrics"].values())
    assert len(data["estimates"]) == n


def test_the_page_is_self_contained_with_a_strict_policy(hostile: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = hostile
    _, html, _ = _view(cli, run, out=tmp_path / "v.html")
    # exactly the data element and the page's own script; no markup from the data
    assert len(re.findall(r"<script", html, re.I)) == 2 and len(re.findall(r"</script", html, re.I)) == 2
    assert "<img" not in html and "<!--" not in html and "\u2028" not in html and "\x00" not in html
    assert "{{ config" in html  # Jinja syntax is data: never rendered (it stays literal in the JSON)
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
    # the script never turns data into markup
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "srcdoc"):
        assert sink not in script.group(1), sink
    # it loads nothing: the one link it makes is a download of text it built itself (a
    # blob: URL of the review sheet, review.js), never a URL from the data
    blob = "a.href = URL.createObjectURL(new Blob([text], {type: type}));"
    assert script.group(1).count(blob) == 1 and script.group(1).count("createObjectURL(") == 1
    assert not re.search(r"\b(?:src|href)\s*=", script.group(1).replace(blob, "")), "the script loads nothing"
    assert not re.search(r"setAttribute\(\s*[\"'](?:src|href)", script.group(1))


def test_max_rows_cuts_with_a_notice(hostile: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = hostile
    data, _, out = _view(cli, run, "--max-rows", "3", out=tmp_path / "v.html")
    assert len(data["rows"]) == 3 and data["runs"][0]["shown"] == 3 and data["runs"][0]["responses"] == 8
    assert data["notices"] == ["hostile-view: showing the first 3 of 8 responses (biasaudit view --max-rows N "
                               "shows more; every response is in responses.jsonl)"]
    assert "note: hostile-view: showing the first 3 of 8" in out
    assert [r["stimulus"] for r in data["rows"]] == [x["stimulus"] for x in trail_of(run)[:3]]


@pytest.mark.slow  # a run of its own
def test_item_differences_reach_their_responses(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 6)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    data, _, _ = _view(cli, run)
    items = json.loads((run / "summary.json").read_text())["metrics"]["bias_score"]["items"]
    diffs = {(i["stimulus"], i["cell"]): i["diff"] for i in items}
    assert len(diffs) == 6 and len(data["rows"]) == 12  # two sentences (slots) per pair
    for row in data["rows"]:
        assert row["items"] == {"bias_score": pytest.approx(diffs[(row["stimulus"], row["cell"])])}
        assert row["answer"] == "" and '"logprobs"' in row["output"]  # a scoring probe: its numbers
        assert len(row["output"]) <= FIELD_CHARS + 40


@pytest.mark.slow  # a run of its own
def test_a_changed_data_file_falls_back_to_the_items_fields(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    [run] = run_dirs(workdir)
    data_file = workdir / "pairs.csv"
    data_file.write_text(data_file.read_text() + "\n", encoding="utf-8")
    data, _, _ = _view(cli, run)
    assert len(data["notices"]) == 1 and "not the data file (the data file changed since the run)" in data["notices"][0]
    items = json.loads((run / "summary.json").read_text())["metrics"]["bias_score"]["items"]
    for row in data["rows"]:
        item = next(i for i in items if i["stimulus"] == row["stimulus"])
        assert row["fields"]["bias_type"] == item["bias_type"]


@pytest.mark.slow  # a run of its own
def test_a_suite_lists_its_members_and_shares_the_rows(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.helpers import write_spec

    for name, n in (("a", 6), ("b", 4)):
        (workdir / name).mkdir()
        tp_spec(workdir / name, n=n, name=f"tp-{name}")
    suite = write_spec(workdir / "suite.yaml", "suite:\n  name: mini\n  members:\n"
                       "    - {spec: a/tp-a.yaml, label: first}\n    - {spec: b/tp-b.yaml, label: second}\n")
    cli("run", f"spec={suite}", "model=scripted", *isolation(workdir))
    [folder] = list((workdir / "reports" / "mini").iterdir())
    data, _, _ = _view(cli, folder, "--max-rows", "18")
    assert data["kind"] == "suite"
    assert [(r["label"], r["responses"], r["shown"]) for r in data["runs"]] == [
        ("first / scripted", 12, 10), ("second / scripted", 8, 8)]  # the small run whole (8 < 18 / 2), the rest to the other
    assert [r["run"] for r in data["rows"]] == [0] * 10 + [1] * 8
    assert all((folder / r["folder"] / "summary.json").is_file() for r in data["runs"])


def test_shares_give_small_runs_all_their_rows() -> None:
    assert _shares([10, 2, 50], 30) == [10, 2, 18]
    assert _shares([10, 10], 5) == [2, 3]  # every row of the budget used
    assert _shares([], 5) == []


def test_an_estimates_subset_selects_its_items_not_its_name() -> None:
    from biasaudit.records.estimate import Subset

    group = Subset(where={"category": ["b-c"]})  # a group whose name has a dash
    assert in_subset("s1", {"category": "b-c"}, None, group) and not in_subset("s1", {"category": "b"}, None, group)
    assert in_subset("s1", {"n": 1}, None, Subset(where={"n": ["1"]}))  # a number's value as text
    pair = Subset(where={"category": ["a", "b-c"]})
    assert in_subset("s", {"category": "a"}, None, pair) and not in_subset("s", {}, None, pair)
    level = Subset(levels={"tone": ["calm"]})
    assert in_subset("s", {}, {"tone": "calm"}, level) and not in_subset("s", {}, {"tone": "upset"}, level)
    assert not in_subset("s", {}, None, level)
    both = Subset(any_of=[{"gender": "man", "race": "Black"}, {"gender": "woman", "race": "White"}])
    assert in_subset("s", {"gender": "man", "race": "Black"}, None, both)
    assert not in_subset("s", {"gender": "man", "race": "White"}, None, both)  # not a product of the lists
    ids = Subset(stimuli=["s2"])
    assert in_subset("s2", {}, None, ids) and not in_subset("s1", {}, None, ids)
    assert in_subset("s", {}, None, None)  # no subset: every item of the metric


@pytest.mark.parametrize("setup,expect", [
    (lambda d: d / "missing", "not a folder"),
    (lambda d: d, "no summary.json here"),
    (lambda d: (d / "summary.json").write_text("{not json") and d, "summary.json is not valid JSON"),
    (lambda d: (d / "summary.json").write_text("[]") and d, "summary.json lacks a usable"),
])
def test_bad_folders_are_one_line(tmp_path: Path, cli, setup, expect: str) -> None:  # type: ignore[no-untyped-def]
    folder = setup(tmp_path)
    code, out, err = cli("view", str(folder))
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "viewer.html").exists()


def test_bad_output_and_options_write_nothing(hostile: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = hostile
    code, _, err = cli("view", str(run), "--out", str(tmp_path))  # a folder
    assert code == 2 and "--out" in err and "directory" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
    code, _, err = cli("view", str(run), "--max-rows", "0")  # one line, not argparse's usage block (issue 39)
    assert code == 2 and err.startswith("error: --max-rows must be 1 or more") and len(err.strip().splitlines()) == 1
    code, _, err = cli("view", str(run), "extra")  # a second folder: a comparison, of a folder that is not there
    assert code == 2 and "extra: no such folder" in err and len(err.strip().splitlines()) == 1


def test_help_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from biasaudit.cli import view
    from biasaudit.cli.app import main

    assert view.MAX_ROWS == MAX_ROWS  # the CLI's copy of the default (kept import-light for --help)
    with pytest.raises(SystemExit) as exc:
        main(["view", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in ("RUN_DIR/viewer.html", "suite folder", "group, label and verdict", "sort by item difference",
                  "Content-Security-Policy", "rather than a local server", "--max-rows N", "--open"):
        assert words in text, words


@pytest.mark.slow  # a run of its own
def test_per_level_estimates_of_a_design_factor_name_their_condition(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.helpers import biaxis_spec

    spec, ops = biaxis_spec(workdir)
    cli("run", "--fail-on", "never", f"spec={spec}", *ops, *isolation(workdir))
    [run] = run_dirs(workdir)
    data, _, _ = _view(cli, run)
    levels = [line["levels"] for line in trail_of(run)]
    assert [r["levels"] for r in data["rows"]] == levels
    per_level = [e for e in data["estimates"] if e["factor"]]
    factors = {e["factor"] for e in per_level}
    assert factors and factors <= {"task", "tone"}
    for e in per_level:
        assert e["field"] == "" and e["cell"] == ""
        tail = e["estimate"].split(f".{e['factor']}.", 1)[1].removesuffix(".paired")
        assert tail in (e["values"][0], "-".join(e["values"]))
        assert sum(lv[e["factor"]] in e["values"] for lv in levels) > 0
    union = {(e["factor"], tuple(e["values"])) for e in per_level if e["estimate"].startswith("union.")}
    assert union == {("task", ("bj",)), ("task", ("explain",)), ("tone", ("calm",)), ("tone", ("upset",))}
    assert all(e["factor"] == "" for e in data["estimates"] if "." not in e["estimate"])  # pooled: no condition


def test_a_suite_reads_only_run_folders_inside_it(tmp_path: Path) -> None:
    from biasaudit.report.viewer import load_view

    suite = tmp_path / "suite"
    suite.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "summary.json").write_text("{}")
    est = {"value": 1.0, "ci_low": 0.0, "ci_high": 2.0, "n": 3, "method": "t"}
    rows = [{"member": "m", "subject": "far", "estimate": est, "report": "../elsewhere/report.html"},
            {"member": "m", "subject": "gone", "estimate": est, "report": "m--gone/report.html"}]
    (suite / "summary.json").write_text(json.dumps({"suite": {"name": "s"}, "rows": rows}))
    data = load_view(suite)
    assert data.kind == "suite" and data.runs == [] and data.rows == []
    assert data.notices == ["m / far: no run folder inside the suite folder; left out",
                            "m / gone: m--gone has no summary.json; left out"]


def test_damaged_lines_and_the_text_budget_are_counted(hostile: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from biasaudit.report.viewer import load

    run = tmp_path / "run"
    shutil.copytree(hostile, run)
    lines = (run / "responses.jsonl").read_bytes().split(b"\n")
    long_line = b'{"pad": "' + b"x" * 20000 + b'"}'  # the longest good line (a 10000-character answer) is shorter
    # a cut line, a JSON array, an over-long line among the 8 good ones
    (run / "responses.jsonl").write_bytes(b"\n".join([lines[0], b'{"cell": "trunc', b"[1, 2]", long_line, *lines[1:]]))
    monkeypatch.setattr(load, "MAX_LINE", 16384)
    data = load.load_view(run)
    assert len(data.rows) == 8 and data.runs[0].responses == 11
    assert "hostile-view: 3 line(s) of responses.jsonl / codes.jsonl could not be read; skipped" in data.notices
    monkeypatch.setattr(load, "MAX_BYTES", 200)  # the first rows' text passes it
    data = load.load_view(run)
    assert 0 < len(data.rows) < 8
    assert "hostile-view: the page holds at most 0 MiB of text; later responses left out" in data.notices
