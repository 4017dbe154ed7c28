"""`biasaudit data list | verify | fetch`, the validate line on published data, and a run
that cites its data (issue 37, section 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import write_spec
from tests.unit.data._fixtures import (
    COMMIT,
    Route,
    file_entry,
    http_server,
    provenance,
    sha256,
    write_folder,
)

# sentences of varied length, so the scripted model's per-pair differences vary (a
# histogram of differences equal up to float rounding fails in matplotlib: see the report)
DATA = (b"sent_more,sent_less,stereo_antistereo,bias_type\n" + b"".join(
    f"{' '.join(['more'] * (1 + i % 7))} {i}.,less {'word ' * (i % 4)}{i}.,{'stereo' if i % 3 else 'antistereo'},gender\n"
    .encode() for i in range(30)))

SPEC = """
audit: {name: toy-audit, method: token_probability}
stimuli:
  source: data/toy/pairs.csv
  format: crows_pairs
%s
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
"""


@pytest.fixture(autouse=True)
def _no_shipped_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped specs/data is replaced by an empty folder: the tests see their fixtures only."""
    (tmp_path / "no-specs" / "data").mkdir(parents=True)
    monkeypatch.setenv("BIASAUDIT_SPECS", str(tmp_path / "no-specs"))


def _published(root: Path, data: bytes = DATA) -> Path:
    return write_folder(root / "data" / "toy", {"pairs.csv": data}, records={"pairs.csv": 30})


@pytest.mark.parametrize(("args", "words"), [
    (["data", "--help"], ["provenance.json", "data list", "data verify", "data fetch"]),
    (["data", "list", "--help"], ["licence", "not", "fetched"]),
    (["data", "verify", "--help"], ["Exit code 0", "1 on a mismatch"]),
    (["data", "fetch", "--help"], ["--url", "--dest", "--allow-redirect-host", "temporary file", "nothing"]),
])
def test_help_says_what_each_does(capsys: pytest.CaptureFixture[str], args: list[str], words: list[str]) -> None:
    from biasaudit.cli.app import main

    with pytest.raises(SystemExit) as ei:
        main(args)
    out = capsys.readouterr().out
    assert ei.value.code == 0 and all(w in out for w in words), out


def test_data_without_a_subcommand_prints_its_help(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("data")
    assert code == 2 and "data fetch" in out


def test_list_names_benchmarks_files_licences_and_states(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    folder = _published(tmp_path)
    doc = json.loads((folder / "provenance.json").read_text())
    doc["unobtained"] = [{"source_path": "data/dev.csv", "url": "https://example.org/dev.csv",
                          "sha256": "a" * 64, "why": "too large"}]
    (folder / "provenance.json").write_text(json.dumps(doc))
    code, out, err = cli("data", "list", str(tmp_path / "data"))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("toy_pairs (Toy-Pairs): CC BY-SA 4.0, example-org/toy-pairs@" + COMMIT[:7])
    assert "  pairs.csv: 30 records, present, sha256 ok" in lines
    assert "  dev.csv: ? records, not fetched (biasaudit data fetch toy_pairs)" in lines


def test_verify_recomputes_digests(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    folder = _published(tmp_path)
    code, out, err = cli("data", "verify", str(folder))
    assert code == 0 and "ok: toy_pairs/pairs.csv" in out and "1 file(s) ok" in out, (out, err)
    changed = DATA.replace(b"less", b"LESS", 1)
    (folder / "pairs.csv").write_bytes(changed)
    code, out, err = cli("data", "verify", str(folder))
    assert code == 1 and f"FAILED: toy_pairs/pairs.csv: sha256 {sha256(changed)[:12]}" in out
    assert "1 problem(s)" in err
    (folder / "pairs.csv").unlink()
    code, out, _ = cli("data", "verify", str(folder))
    assert code == 1 and "FAILED: toy_pairs/pairs.csv: missing" in out


def test_a_malformed_provenance_exits_2_with_one_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    folder = _published(tmp_path)
    doc = json.loads((folder / "provenance.json").read_text())
    doc["files"][0]["path"] = "../../etc/passwd"
    (folder / "provenance.json").write_text(json.dumps(doc))
    for args in (["data", "verify", str(folder)], ["data", "list", str(folder)]):
        code, out, err = cli(*args)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "provenance.json: files.0.path:" in err and "Traceback" not in err


def test_fetch_from_a_local_server(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    good, bad = DATA, DATA.replace(b"more", b"MORE", 1)
    with http_server({"/good.csv": Route(good), "/bad.csv": Route(bad), "/big.csv": Route(good + b"\n" * 100),
                      "/moved": Route(status=302, headers={"Location": "/good.csv"})}) as srv:
        entry = {**file_entry("pairs.csv", good, 30), "url": srv.url("/bad.csv")}
        # as shipped: in the specs folder's data/ (BIASAUDIT_SPECS points at it)
        folder = write_folder(tmp_path / "no-specs" / "data" / "toy", {}, doc=provenance(files=[entry]))
        dest = tmp_path / "dest"
        code, out, err = cli("data", "fetch", "toy_pairs", "--dest", str(dest))
        assert code == 2 and "does not match" in err and "nothing was written" in err
        assert not dest.exists() or list(dest.glob("*.csv*")) == [] and list(dest.glob(".*part")) == []
        code, out, err = cli("data", "fetch", "toy_pairs", "--dest", str(dest), "--url", srv.url("/big.csv"))
        assert code == 2 and f"larger than {len(good)} bytes" in err
        code, out, err = cli("data", "fetch", "toy_pairs", "--dest", str(dest), "--url", srv.url("/moved"))
        assert code == 0, err
        assert (dest / "pairs.csv").read_bytes() == good and (dest / "provenance.json").is_file()
        assert f"fetched: {dest / 'pairs.csv'}" in out and f"sha256 {sha256(good)}" in out
        assert sorted(p.name for p in folder.iterdir()) == ["provenance.json"]  # the shipped folder untouched


def test_fetch_an_unknown_benchmark(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("data", "fetch", "nope")
    assert code == 2 and "no provenance.json for benchmark 'nope'" in err


def test_validate_prints_the_data_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _published(tmp_path)
    plain = write_spec(tmp_path / "plain.yaml", SPEC % "")
    code, out, err = cli("validate", str(plain))
    assert code == 0, err
    assert ("data: toy_pairs (Toy-Pairs), 30 records, SHA-256 matches its provenance; "
            "no sample drawn: all 30 stimuli are used") in out.splitlines()
    sampled = write_spec(tmp_path / "sampled.yaml", SPEC % "  where: {direction: [stereo]}\n  sample: {n: 7, seed: 4}")
    code, out, err = cli("validate", str(sampled))
    assert code == 0, err
    assert ("data: toy_pairs (Toy-Pairs), 30 records, SHA-256 matches its provenance; "
            "sample drawn: 7 of 20 stimuli (after `where`; 30 in the data), seed 4") in out.splitlines()


def test_validate_and_run_refuse_a_changed_published_file(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    folder = _published(tmp_path)
    (folder / "pairs.csv").write_bytes(DATA.replace(b"stereo", b"STEREO", 1))
    spec = write_spec(tmp_path / "plain.yaml", SPEC % "")
    code, out, err = cli("validate", str(spec))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not match" in err
    code, out, err = cli("run", str(spec), "model=scripted", *isolation(tmp_path))
    assert code == 2 and "does not match" in err
    assert run_dirs(tmp_path) == [] and not (tmp_path / "cache.sqlite").exists()


def test_a_run_cites_its_data_and_sample(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _published(tmp_path)
    spec = write_spec(tmp_path / "s.yaml", SPEC % "  sample: {n: 12, seed: 5}\nreport: {formats: [md, html]}")
    code, _, err = cli("run", str(spec), "model=scripted", *isolation(tmp_path))
    assert code in (0, 1, 3), err
    run = run_dirs(tmp_path)[0]
    manifest = json.loads((run / "manifest.json").read_text())
    p = manifest["data"]["provenance"]
    assert (p["benchmark"], p["source_repo"], p["commit"], p["source_path"], p["sha256"], p["licence"]) == (
        "toy_pairs", "example-org/toy-pairs", COMMIT, "data/pairs.csv", sha256(DATA), "CC BY-SA 4.0")
    assert manifest["data"]["sample"] == {"n": 12, "of": 30, "seed": 5, "drawn": True}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["data"]["provenance"]["benchmark"] == "toy_pairs"
    assert summary["method"]["sample"] == "12 of 30 stimuli, seed 5"
    cite = f"Toy-Pairs, example-org/toy-pairs@{COMMIT[:7]} data/pairs.csv, CC BY-SA 4.0, sha256 {sha256(DATA)}"
    assert summary["method"]["data_citation"] == cite
    md = (run / "report.md").read_text()
    assert f"Data: {cite}." in md and "Sample: 12 of 30 stimuli, seed 5." in md
    html = (run / "report.html").read_text()
    assert cite in html and "Sample: 12 of 30 stimuli, seed 5" in html
