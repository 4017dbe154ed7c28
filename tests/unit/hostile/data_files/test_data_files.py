"""Hostile data files: stimulus files a spec names (csv, jsonl, JSON), whatever bytes they
hold. A data file is untrusted: it cannot make biasaudit read a device or a FIFO, exhaust
memory, or inject markup into a report; a malformed one is one line naming the file and
the line, with a hint, exit code 2, and nothing written.

Gathered from issues 11 (bad input) and 15 (hardening II and its catalogue)."""

from __future__ import annotations

import gzip
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, write_crows_subset, write_spec
from tests.unit.cli.test_cli_errors import assert_clean_failure
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    BASE,
    BadInput,
    Case,
    assert_no_leak,
    assert_one_line_nothing_changed,
    bad_spec,
    case_spec,
    clean_failure,
    planted_fixture,
    run_case,
    with_args,
    write_file,
)

# -- plot labels and Markdown from the data are literal text (issue 15, classes 9 and 12) --------

def _relabel(data: Path, groups: list[str]) -> None:
    """Give the csv's rows these `bias_type` values, in turn."""
    import csv

    with data.open(newline="") as f:
        rows = list(csv.reader(f))
    col = rows[0].index("bias_type")
    for i, row in enumerate(rows[1:]):
        row[col] = groups[i % len(groups)]
    with data.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


def _grouped_run(workdir: Path, cli, groups: list[str], title: str) -> tuple[Path, str, str]:  # type: ignore[no-untyped-def]
    """A scored run whose `bias_type` groups (plot labels, table rows) and title are given."""
    _relabel(write_crows_subset(workdir / "pairs.csv", 2 * len(groups)), groups)
    spec = write_spec(workdir / "s.yaml", BASE.replace("mode: ar_full}", "mode: ar_full, by: [bias_type]}")
                      + f"report: {{title: {json.dumps(title)}}}\n")
    code, out, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    return run_dirs(workdir)[0], out, err


def test_mathtext_in_labels_is_drawn_as_text(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    run, out, err = _grouped_run(workdir, cli, ["$\\undefinedmacro$", "a_b^c\\", "$x$"], "Costs $5 and $\\frac{1}{$")
    html = (run / "report.html").read_text()
    assert "$\\undefinedmacro$" in html and "<svg" in html
    assert_no_leak(workdir, out, err)


def test_markdown_report_escapes_html_from_stimuli_output_and_titles(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    run, out, err = _grouped_run(workdir, cli, ["<script>alert(1)</script>", "<b>x</b>"],
                                 "<img src=x onerror=alert(2)> [click](javascript:alert(3))")
    md = (run / "report.md").read_text()
    assert "&lt;img src=x onerror=alert(2)&gt;" in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "<img" not in md and "<script" not in md and "[click](javascript" not in md and "\\[click\\]" in md
    assert_no_leak(workdir, out, err)


# -- duplicate csv columns (issue 15, class 11) -------------------------------------------------

def test_duplicate_csv_columns_are_refused(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    bad = workdir / "dup.csv"
    bad.write_text(",sent_more,sent_less,stereo_antistereo,bias_type,sent_more\n0,A x.,B x.,stereo,race,C x.\n")
    clean_failure(cli("run", f"stimuli.source={bad}", "model=scripted", *isolation(workdir)), workdir, str(bad),
                  "stimuli.source", "column 'sent_more' appears twice")


# -- records no reader can take: one line (issue 15, class 13) -----------------------------------

LONE = '{"a": "\\ud800"}\n'
BAD_RECORDS = {
    "deep jsonl nesting": (lambda w: ["spec=pivotal_blimp", f"stimuli.source={write_file(w, 'd.jsonl', '[' * 100000 + ']' * 100000)}"],
                           ["d.jsonl", "nested too deeply"]),
    "lone surrogate in jsonl": (lambda w: ["spec=pivotal_blimp", f"stimuli.source={write_file(w, 's.jsonl', LONE)}"],
                                ["s.jsonl", "unpaired surrogate"]),
}


@pytest.mark.parametrize("case", list(BAD_RECORDS))
def test_bad_paths_and_values_end_in_one_line(workdir: Path, cli, planted: str, case: str) -> None:  # type: ignore[no-untyped-def]
    make, must = BAD_RECORDS[case]
    assert_one_line_nothing_changed(workdir, cli, make, must)


# -- malformed data: one line, exit 2, nothing written (issue 11) --------------------------------

def empty_after_filter(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {bias_type: [astrology]}}"))
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli.where.bias_type", "no stimuli left", "values of bias_type"]


def filter_on_missing_field(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {colour: [red]}}"))
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli.where.colour", "fields: bias_type"]


def empty_data_file(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE)
    (w / "pairs.csv").write_text(",sent_more,sent_less,stereo_antistereo,bias_type\n", encoding="utf-8")
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli", "no stimuli to run"]


def non_utf8_data(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE)
    data = w / "pairs.csv"
    data.write_bytes(data.read_bytes().replace(b"He", "H\u00e9".encode("latin-1"), 1))
    return [f"spec={spec}"], [str(data), "stimuli.source", "not UTF-8", "UTF-8"]


def ragged_csv(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE)
    data = w / "pairs.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[2] += ",extra"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [f"spec={spec}"], [str(data), "stimuli.source", "line 3 has 9 fields, the header has 8"]


def jsonl_bad_line(w: Path) -> tuple[list[str], list[str]]:
    data = w / "pairs.jsonl"
    data.write_text('{"more": "A.", "less": "B."}\n{"more": "C.", "less": \n', encoding="utf-8")
    spec = write_spec(w / "j.yaml", BASE.replace("{source: pairs.csv, format: crows_pairs}",
                                                 "{source: pairs.jsonl, format: jsonl}"))
    return [f"spec={spec}"], [str(data), "stimuli.source", "line 2 is not valid JSON"]


BAD_DATA: list[BadInput] = [
    empty_after_filter, filter_on_missing_field, empty_data_file, non_utf8_data, ragged_csv, jsonl_bad_line,
]


@pytest.mark.parametrize("case", BAD_DATA, ids=[c.__name__ for c in BAD_DATA])
def test_bad_input_is_one_line_exit_2_nothing_written(case: BadInput, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    args, must = case(workdir)
    assert_clean_failure(cli("run", *args, *isolation(workdir)), workdir, *must)


def test_where_keeps_matching_stimuli(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 40)
    spec = write_spec(workdir / "where.yaml", BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {bias_type: [gender]}}"))
    code, out, err = cli("validate", f"spec={spec}", "model=scripted")
    from biasaudit.data.readers import read_csv

    _, rows = read_csv(workdir / "pairs.csv")
    n = sum(r["bias_type"] == "gender" for r in rows)
    assert 0 < n < len(rows)
    assert code == 0 and f"{n} stimuli, {2 * n} requests" in out, err


# -- the catalogue: data files (issue 15) ---------------------------------------------------------

CSV = ",sent_more,sent_less,stereo_antistereo,bias_type\n0,A x.,B x.,stereo,race\n1,C y.,D y.,stereo,age\n"


def _data(name: str, content: bytes | str | None, fmt: str = "crows_pairs") -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        p = w / name
        if content is not None:
            p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return [case_spec(w), f"stimuli.source={p}", f"stimuli.format={fmt}"]
    return build


def _fifo(w: Path) -> list[str]:
    os.mkfifo(w / "pipe.csv")
    return [case_spec(w), f"stimuli.source={w / 'pipe.csv'}"]


def _symlink_to(target: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        (w / "link.csv").symlink_to(target)
        return [case_spec(w), f"stimuli.source={w / 'link.csv'}"]
    return build


def _xlsx(w: Path) -> list[str]:
    with zipfile.ZipFile(w / "book.csv", "w") as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
    return [case_spec(w), f"stimuli.source={w / 'book.csv'}"]


CASES: dict[str, Case] = {
    "BOM and CRLF csv": Case("DATA", _data("bom.csv", "\ufeff" + CSV.replace("\n", "\r\n"))),
    "NUL in csv": Case("DATA", lambda w: [*_data("nul.csv", CSV.replace("A x.", "A\x00x."))(w), "model=scripted"],
                       command="run"),  # Python 3.11's csv reads NUL; it is text like any other
    "xlsx named .csv": Case("DATA", _xlsx, ["not UTF-8"]),
    "gzip named .csv": Case("DATA", _data("z.csv", gzip.compress(CSV.encode())), ["not UTF-8"]),
    "empty file": Case("DATA", _data("empty.csv", ""), ["csv file is empty"]),
    "header only": Case("DATA", _data("head.csv", CSV.splitlines()[0] + "\n"), ["no stimuli"]),
    "directory as source": Case("DATA", lambda w: [case_spec(w), f"stimuli.source={w}"], ["a directory"]),
    "/dev/urandom": Case("DATA", with_args("stimuli.source=/dev/urandom"), ["not a regular file"]),
    "FIFO": Case("DATA", _fifo, ["not a regular file"]),
    "symlink to /dev/zero": Case("DATA", _symlink_to("/dev/zero"), ["not a regular file"]),
    "10 MB field": Case("DATA", _data("long.csv", CSV.replace("A x.", "A" * 10_000_000)), ["malformed csv"]),
    "jsonl 5000-digit integer": Case("DATA", _data("big.jsonl", '{"a": ' + "9" * 5000 + "}\n", "jsonl"),
                                     ["line 1"]),
    "jsonl array line": Case("DATA", _data("arr.jsonl", "[1, 2]\n", "jsonl"), ["not a JSON object"]),
    "json_map as list": Case("DATA", _data("m.json", "[1]", "fisco_raw"), ["expected a JSON object"]),
    "over max_data_bytes": Case("DATA", lambda w: [*_data("c.csv", CSV)(w), "runtime.limits.max_data_bytes=10"],
                                ["larger than 10 bytes"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)
