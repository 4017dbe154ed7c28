"""The golden files of format generation 1 (issue 40, section 1): a run folder and a
signed evidence pack written by main at 4a169ce, before any `format_version` field
existed (tests/fixtures/format_v1/README.md). Every later biasaudit must read, render and
verify them; they are never regenerated, so their SHA-256 are pinned here.

Each check is a function returning what it found wrong, run once on the committed files
(nothing wrong) and once on a copy with one byte edited (caught): a check that could not
fail would keep no promise."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from biasaudit.cli.app import main

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "format_v1"
RUN = Path("run/hiring-impact/20261129-152450-157669")
WRITTEN_UNDER = "/tmp/biasaudit-format-v1"  # the folder the files were written in (README.md)
PUB = GOLDEN / "TEST-ONLY-signing-pub.pem"

# SHA-256 of every golden file (README.md aside: it explains them and may be reworded).
PINNED = {
    "TEST-ONLY-signing-key.pem":
        "83d54e8404f72eeb440960ce7d3716b66359a9759f71164a845d18e146048d6e",
    "TEST-ONLY-signing-pub.pem":
        "d9a70c3d1bfea5982c4bd91aacf8d1c103307d45a4478e4866d446148d0bc777",
    "cache.sqlite":
        "8cc781e8fb45a087487e3d96abd684f2b09a57776a90b44c9565e7050560251c",
    "conf/model/screen.yaml":
        "28411e410d845d0117336e853e10487eb405a0488947beb45b52b74ecbee282f",
    "pack.zip":
        "2931a432e5ed64cda0033bfae9821eee4061676167b4385cb1c5b494c444b1b6",
    "run/hiring-impact/20261129-152450-157669/.hydra/config.yaml":
        "80d28c5b908b4ecd5f9fc1dbfa0beb0f48a9c37800e43489bf6a253a2a6e3cc0",
    "run/hiring-impact/20261129-152450-157669/.hydra/hydra.yaml":
        "b455224f9e305ba5ddfe51f8470cb3cfbe67045056b4e1dbf2a70157144d2427",
    "run/hiring-impact/20261129-152450-157669/.hydra/overrides.yaml":
        "931fc41974dd6eb066fca0c9cc5b811bf099d40f75b572ed2b869bde319552ba",
    "run/hiring-impact/20261129-152450-157669/cli.log":
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "run/hiring-impact/20261129-152450-157669/codes.jsonl":
        "73bcb223d3d9c9c6461b865554e8e39709e4f99877544d307fe4782990ab491c",
    "run/hiring-impact/20261129-152450-157669/estimates.csv":
        "080063b793e1d3b32d72fb0fd0db40912a420ad9e2e75d578124b0a6b918d743",
    "run/hiring-impact/20261129-152450-157669/items.csv":
        "bf918677e3724e9114863db19ce82127d068031a5cb2170784db32d51611689a",
    "run/hiring-impact/20261129-152450-157669/manifest.json":
        "405a44b75ddf8d4eddd0ab80b6fcd03b4e160b832a9fa0882d37d7422b46faa0",
    "run/hiring-impact/20261129-152450-157669/plots/impact-1.svg":
        "41fba5386b114222a0809508ce7815bdb628993bbacdbe002c916bc9a6ebcb6e",
    "run/hiring-impact/20261129-152450-157669/plots/invite_rate-1.svg":
        "24a8cd29666c6b3d36f6339417951b2e1f6d377de9f1a9303e3dcfceab4f3fca",
    "run/hiring-impact/20261129-152450-157669/report.html":
        "77cd1f7248f22a8021f97269f1ac794e6412863d7c9588be33737e9270c7275a",
    "run/hiring-impact/20261129-152450-157669/report.md":
        "48a7e198749767393f8da00bfdbbceb71c50ecd6c8cccad6487570ac190029a2",
    "run/hiring-impact/20261129-152450-157669/responses.jsonl":
        "3a80d9c84edc8e7aa4ad581de6112194d635156fd4dd5fae85173213bbb44767",
    "run/hiring-impact/20261129-152450-157669/summary.json":
        "7d60584358da1bc9fa521eaee2825b52df7374b1763a35f549dc107a577b84ad",
    "spec/data/hiring_profiles.csv":
        "5395ec87aca7650bf8923427a411a80ffa165741217e0f0d1e8e2c75fb97f47a",
    "spec/hiring_impact.yaml":
        "dfcdf29142ae123cc2c42c435af141d3baaddfd4363dc181e11dfa888f27fc02",
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pin_problems(root: Path) -> list[str]:
    """Files of `root` whose bytes differ from the pinned ones, or missing, or added."""
    found = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() and p.name != "README.md"}
    problems = [f"{name}: missing" for name in sorted(set(PINNED) - set(found))]
    problems += [f"{name}: not a golden file" for name in sorted(set(found) - set(PINNED))]
    problems += [f"{name}: SHA-256 changed" for name, p in sorted(found.items())
                 if name in PINNED and _sha(p) != PINNED[name]]
    return problems


def _copy(tmp_path: Path) -> Path:
    """A copy of the golden folder, its manifest's paths moved to the copy (the one edit a
    moved run folder needs; README.md)."""
    root = tmp_path / "format_v1"
    shutil.copytree(GOLDEN, root)
    manifest = root / RUN / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(WRITTEN_UNDER, str(root)), encoding="utf-8")
    return root


def _edit_one_byte(path: Path, old: bytes, new: bytes) -> None:
    raw = path.read_bytes()
    assert len(old) == len(new) and raw.count(old) >= 1, (path, old)
    path.write_bytes(raw.replace(old, new, 1))


def _summary(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((root / RUN / "summary.json").read_text(encoding="utf-8"))
    return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- the pins -------------------------------------------------------------------------------

def test_the_golden_files_are_unchanged() -> None:
    assert pin_problems(GOLDEN) == []


def test_a_one_byte_edit_breaks_the_pins(tmp_path: Path) -> None:
    root = tmp_path / "g"
    shutil.copytree(GOLDEN, root)
    _edit_one_byte(root / RUN / "summary.json", b'"FAIL"', b'"PAIL"')
    assert pin_problems(root) == [f"{RUN.as_posix()}/summary.json: SHA-256 changed"]


# -- verify ---------------------------------------------------------------------------------

def _verify(pack: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["verify", str(pack), "--public-key", str(PUB)])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.slow
def test_verify_passes_on_the_golden_pack(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _verify(GOLDEN / "pack.zip", capsys)
    assert code == 0, out
    assert "ok: signature: valid Ed25519 signature" in out and "(the key given with --public-key)" in out
    assert "2 metric(s) and 2 verdict(s) re-computed" in out and "byte-identical (overall FAIL)" in out
    assert "verified:" in out
    # issue 40: the pack is format 1 (no versions anywhere), read through records/upgrade
    assert "ok: format: read evidence pack format 1, upgraded to 2" in out
    assert "ok: runs/20261129-152450-157669/trail/responses.jsonl: read format 1, upgraded to 2" in out
    assert "ok: runs/20261129-152450-157669/trail/codes.jsonl: read format 1, upgraded to 2" in out


@pytest.mark.slow
def test_verify_catches_a_one_byte_edit_of_the_golden_pack(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # one byte of a member (the HTML report), the zip otherwise as packed
    with zipfile.ZipFile(GOLDEN / "pack.zip") as zf:
        members = [(i, zf.read(i)) for i in zf.infolist()]
    name = "runs/20261129-152450-157669/report/report.html"
    tampered = tmp_path / "member.zip"
    with zipfile.ZipFile(tampered, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info.filename, data.replace(b"FAIL", b"PASS", 1) if info.filename == name else data)
    code, out = _verify(tampered, capsys)
    assert code == 1 and f"FAILED: {name}: SHA-256 differs from MANIFEST.json" in out, out
    # one byte of the zip file itself
    raw = bytearray((GOLDEN / "pack.zip").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (tmp_path / "raw.zip").write_bytes(bytes(raw))
    code, out = _verify(tmp_path / "raw.zip", capsys)
    assert code != 0, out


# -- re-render: `biasaudit report RUN_DIR` ---------------------------------------------------

def rerender_problems(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Re-render the run folder under `root` with `biasaudit report` and name every
    estimate, verdict or overall verdict that differs from what its summary.json held
    (fields a later version adds are allowed; a changed or missing one is not)."""
    before = _summary(root)
    code = main(["report", str(root / RUN)])
    out, err = capsys.readouterr()
    if code != 0:
        return [f"biasaudit report exited {code}: {out} {err}"]
    after = _summary(root)
    problems = []
    if after["overall"] != before["overall"]:
        problems.append(f"overall {before['overall']} -> {after['overall']}")
    if len(after["verdicts"]) != len(before["verdicts"]):
        problems.append("a different number of verdicts")
    for old, new in zip(before["verdicts"], after["verdicts"], strict=False):
        problems += [f"verdict {old['metric']}.{k}" for k, v in old.items() if new.get(k) != v]
    if set(after["metrics"]) != set(before["metrics"]):
        problems.append("different metrics")
    for name, m in before["metrics"].items():
        again = after["metrics"].get(name, {}).get("estimates", {})
        for est, fields in m["estimates"].items():
            problems += [f"{name}.{est}.{k}" for k, v in fields.items() if again.get(est, {}).get(k) != v]
        problems += [f"{name}.{est}: added" for est in set(again) - set(m["estimates"])]
    return problems


@pytest.mark.slow
def test_report_re_renders_the_golden_run_with_the_same_numbers(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    assert rerender_problems(root, capsys) == []
    s = _summary(root)
    assert s["overall"] == "FAIL"
    assert {v["metric"]: v["verdict"] for v in s["verdicts"]} == {"impact.lowest.gender": "INCONCLUSIVE",
                                                                  "impact.lowest.race": "FAIL"}
    # the re-rendered CSV and Markdown tables are the golden run's
    assert (root / RUN / "estimates.csv").read_bytes() == (GOLDEN / RUN / "estimates.csv").read_bytes()
    assert (root / RUN / "report.html").is_file()


@pytest.mark.slow
def test_re_render_catches_a_one_byte_edit_of_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    # the verdict on race: FAIL in the golden run
    _edit_one_byte(root / RUN / "summary.json", b'"verdict": "FAIL"', b'"verdict": "PASS"')
    assert rerender_problems(root, capsys) == ["verdict impact.lowest.race.verdict"]


@pytest.mark.slow
def test_re_render_catches_a_one_byte_edit_of_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    # a stored answer "Yes." (invite) becomes "No s." (reject): the numbers move
    _edit_one_byte(root / "cache.sqlite", b"Yes.", b"Nes.")
    problems = rerender_problems(root, capsys)
    assert problems and any(p.startswith("impact.") for p in problems), problems


# -- view, load_runs, CSV export -------------------------------------------------------------

@pytest.mark.slow
def test_view_builds_from_the_golden_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    page = tmp_path / "viewer.html"
    code = main(["view", str(root / RUN), "--out", str(page)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "1 run(s), 96 of 96 responses" in out
    html = page.read_text(encoding="utf-8")
    assert "hiring-impact" in html.lower() or "Hiring screen" in html


def test_view_catches_a_one_byte_edit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    _edit_one_byte(root / RUN / "summary.json", b'{', b'[')  # no longer a JSON object
    code = main(["view", str(root / RUN), "--out", str(tmp_path / "viewer.html")])
    assert code != 0
    capsys.readouterr()


def load_problems(root: Path) -> list[str]:
    """`biasaudit.load_runs` on the run folder: one run, nothing skipped, and its tables
    (estimates, items, verdicts) are the golden run's CSV files and summary."""
    import biasaudit

    rs = biasaudit.load_runs(root / "run")
    if len(rs.runs) != 1 or rs.skipped:
        return [f"{len(rs.runs)} run(s), skipped {rs.skipped}"]
    [r] = rs.runs
    problems = []
    written = _csv_rows((root / RUN / "estimates.csv").read_text(encoding="utf-8"))
    read = r.estimates.fillna("").astype(str)
    if len(read) != len(written):
        problems.append(f"{len(read)} estimate rows, estimates.csv has {len(written)}")
    for i, (row, want) in enumerate(zip(read.to_dict("records"), written, strict=False)):
        for k, v in want.items():
            got = row[k]
            same = got == v or (v != "" and got != "" and _num(got) == _num(v))
            if not same:
                problems.append(f"estimates row {i} {k}: {got!r} != {v!r}")
    items = _csv_rows((root / RUN / "items.csv").read_text(encoding="utf-8"))
    if len(r.items) != len(items):
        problems.append(f"{len(r.items)} item rows, items.csv has {len(items)}")
    raw = _summary(root)
    verdicts = r.verdicts_df.to_dict("records")
    for v, want in zip(verdicts, raw["verdicts"], strict=True):
        for k in ("metric", "verdict", "min", "max"):
            if v[k] != want[k]:
                problems.append(f"verdict {want['metric']} {k}: {v[k]!r} != {want[k]!r}")
        if v["value"] != want["estimate"]["value"]:
            problems.append(f"verdict {want['metric']} value")
    if r.overall != raw["overall"]:
        problems.append("overall")
    # what the scripted screen's replies give by hand (conf/model/screen.yaml; derivation in
    # tests/integration/test_impact_ratio_e2e.py): invited man 19/24, woman 13/24, Black 1/12
    pooled = r.estimates[(r.estimates["metric"] == "impact") & (r.estimates["cell"] == "")]
    est = dict(zip(pooled["estimate"], pooled["value"], strict=True))
    for name, want in (("rate.gender.man", 19 / 24), ("rate.gender.woman", 13 / 24), ("ratio.race.Black", 1 / 12),
                       ("lowest.gender", 13 / 19), ("lowest.race", 1 / 12)):
        if est.get(name) != pytest.approx(want):
            problems.append(f"{name}: {est.get(name)} != {want}")
    if r.overall != "FAIL" or [(v.metric, v.verdict) for v in r.verdicts] != [
            ("impact.lowest.gender", "INCONCLUSIVE"), ("impact.lowest.race", "FAIL")]:
        problems.append(f"verdicts {r.overall} {[(v.metric, v.verdict) for v in r.verdicts]}")
    return problems


def _num(s: str) -> float | str:
    try:
        return float(s)
    except ValueError:
        return s


def test_load_runs_reads_the_golden_run() -> None:
    assert load_problems(GOLDEN) == []


def test_load_runs_catches_a_one_byte_edit(tmp_path: Path) -> None:
    root = tmp_path / "g"
    shutil.copytree(GOLDEN, root)
    _edit_one_byte(root / RUN / "summary.json", b'"verdict": "FAIL"', b'"verdict": "PASS"')
    assert load_problems(root) == ["verdicts FAIL [('impact.lowest.gender', 'INCONCLUSIVE'), "
                                   "('impact.lowest.race', 'PASS')]"]
    shutil.copytree(GOLDEN, tmp_path / "h")
    _edit_one_byte(tmp_path / "h" / RUN / "estimates.csv", b"0.7916666666666666", b"0.7916666666666606")
    assert load_problems(tmp_path / "h") and all(p.startswith("estimates row") for p in load_problems(tmp_path / "h"))


def csv_problems(root: Path) -> list[str]:
    """The CSV export (`report.csv_export.write_csvs`, what `biasaudit run` and `report`
    write) of the golden summary gives the golden estimates.csv byte for byte."""
    from biasaudit.records.summary import RunSummary
    from biasaudit.report.csv_export import write_csvs

    summary = RunSummary.read(root / RUN / "summary.json")
    wrote: dict[str, str] = {}
    write_csvs(root / RUN, summary.metrics, lambda p, text: wrote.__setitem__(p.name, text))
    if wrote["estimates.csv"] != (root / RUN / "estimates.csv").read_text(encoding="utf-8"):
        return ["estimates.csv differs"]
    # items.csv without the prompt and answer texts (the run joins them from its responses)
    written = _csv_rows((root / RUN / "items.csv").read_text(encoding="utf-8"))
    again = _csv_rows(wrote["items.csv"])
    if len(again) != len(written):
        return [f"items.csv: {len(again)} rows, {len(written)} written"]
    return [f"items.csv row {i} {k}" for i, (a, w) in enumerate(zip(again, written, strict=True))
            for k, v in a.items() if w.get(k) != v]


def test_csv_export_of_the_golden_summary() -> None:
    assert csv_problems(GOLDEN) == []


def test_csv_export_catches_a_one_byte_edit(tmp_path: Path) -> None:
    root = tmp_path / "g"
    shutil.copytree(GOLDEN, root)
    _edit_one_byte(root / RUN / "estimates.csv", b"0.", b"1.")
    assert csv_problems(root) == ["estimates.csv differs"]


# -- format_version: absent in the golden files, read as 1; written by today's runs ------------

def test_the_golden_files_have_no_format_version_and_read_as_1() -> None:
    from biasaudit.errors import BiasAuditError
    from biasaudit.records.manifest import FORMAT_VERSION, RunManifest
    from biasaudit.records.summary import RunSummary

    raw_summary = _summary(GOLDEN)
    raw_manifest = json.loads((GOLDEN / RUN / "manifest.json").read_text(encoding="utf-8"))
    assert "format_version" not in raw_summary and "format_version" not in raw_manifest
    # summary.json's layout is 2 since estimates carry their typed group: format 1 (no key)
    # is read through records/upgrade/summary.py's step, which gives each group its field
    from biasaudit.records.upgrade.summary import CURRENT, STEPS
    assert CURRENT == 2 and set(STEPS) == {1}
    read = RunSummary.read(GOLDEN / RUN / "summary.json")
    assert read.format_version == 2
    woman = read.metrics["impact"].estimates["ratio.gender.woman"].group
    assert woman is not None and (woman.factor, woman.levels) == ("gender", ["woman"])
    pair = read.metrics["invite_rate"].estimates["contrast.race.Asian-Black.paired"].group
    assert pair is not None and (pair.factor, pair.levels) == ("race", ["Asian", "Black"])
    assert read.metrics["impact"].estimates["lowest.race"].group is None
    manifest = RunManifest.read_raw(raw_manifest, file="manifest.json")  # through records/upgrade/manifest.py
    assert manifest.format_version == FORMAT_VERSION == 2
    assert manifest.as_json() == {"format_version": 2, **raw_manifest}  # every key as it was, its version stated
    with pytest.raises(ValueError, match="format_version"):  # the record reads only today's layout
        RunManifest.model_validate(raw_manifest)
    with pytest.raises(BiasAuditError, match="lacks a usable 'format_version'"):  # 0 is no version
        RunManifest.read_raw({**raw_manifest, "format_version": 0}, file="manifest.json")
    with pytest.raises(BiasAuditError, match="lacks a usable 'format_version'"):
        RunManifest.read_raw({**raw_manifest, "format_version": "1"}, file="manifest.json")


@pytest.mark.slow
def test_a_re_rendered_summary_carries_format_version_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    assert main(["report", str(root / RUN)]) == 0
    capsys.readouterr()
    assert _summary(root)["format_version"] == 2  # summary.json's layout (its estimates' groups)


@pytest.mark.slow
def test_a_new_run_writes_today_s_format_versions_and_the_golden_numbers(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The golden run made again by today's biasaudit (README.md's command): its manifest
    says format_version 2 and its summary 2, and its estimates and verdicts are the golden ones."""
    root = _copy(tmp_path)
    code = main(["run", f"spec={root / 'spec' / 'hiring_impact.yaml'}",
                 f"hydra.searchpath=[biasaudit-specs://specs,file://{root / 'conf'}]", "model=screen",
                 f"runtime.cache={tmp_path / 'cache.sqlite'}", f"runtime.reports_dir={tmp_path / 'reports'}",
                 "runtime.progress=false"])
    capsys.readouterr()
    assert code == 1  # FAIL, as the golden run
    [run] = [p.parent for p in (tmp_path / "reports").rglob("summary.json")]
    fresh = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert fresh["format_version"] == 2  # summary.json's layout
    assert json.loads((run / "manifest.json").read_text(encoding="utf-8"))["format_version"] == 2  # manifest's
    def numbers(s: dict[str, Any]) -> dict[str, Any]:
        return {"overall": s["overall"], "verdicts": [(v["metric"], v["verdict"]) for v in s["verdicts"]],
                "estimates": {(k, e): (x["value"], x["ci_low"], x["ci_high"], x["n"])
                              for k, m in s["metrics"].items() for e, x in m["estimates"].items()}}

    assert numbers(fresh) == numbers(_summary(GOLDEN))


@pytest.mark.slow
def test_the_golden_run_folder_packs_and_the_pack_verifies(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`biasaudit pack` of the format-1 run folder as it is (no re-render first): its
    summary is compared with the re-computed one through records/upgrade, as verify does."""
    root = _copy(tmp_path)
    pack = tmp_path / "again.zip"
    code = main(["pack", str(root / RUN), "-o", str(pack)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    code = main(["verify", str(pack)])  # unsigned: digests and re-computation
    out = "".join(capsys.readouterr())
    assert code == 0 and "byte-identical (overall FAIL)" in out, out
