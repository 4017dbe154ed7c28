"""The golden files of format generation 2 (issue 40, acceptance 2): the run of
tests/fixtures/format_v1 made again by main when summary.json, manifest.json, the trails
and the evidence pack were at version 2, with its signed pack and its cache (user_version
1), written by tests/fixtures/format_v2/make_fixture.py. Every later biasaudit must read,
render and verify them; their bytes are pinned here, so a later layout change cannot
rewrite them: it must bump the version (records/upgrade, a new docs/schemas file) and
keep these readable.

Each check runs on the committed files (nothing wrong) and on a copy with one byte edited
(caught)."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from biasaudit.cli.app import main
from biasaudit.records import upgrade as up

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "format_v2"
RUN = Path("run/hiring-impact/20261129-223848-487939")
WRITTEN_UNDER = "/tmp/biasaudit-format-v2"  # the folder make_fixture.py wrote them in
PUB = GOLDEN / "TEST-ONLY-signing-pub.pem"
SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "schemas"

# SHA-256 of every golden file (README.md and make_fixture.py aside).
PINNED = {
    "TEST-ONLY-signing-key.pem":
        "56549e879af7e5999c451308fb0b7138e48ca33bcd535724adfd576c24048fb4",
    "TEST-ONLY-signing-pub.pem":
        "23edf6ad23c394136465b03afdd8c9797adcf14db351bf038510326f3c5ec5ac",
    "cache.sqlite":
        "8e3fa7980a55d59568b09f395e06ade58a7e31623f573b88dc189d8aed057ae1",
    "conf/model/screen.yaml":
        "28411e410d845d0117336e853e10487eb405a0488947beb45b52b74ecbee282f",
    "pack.zip":
        "a8e9620cfd296ca5c27bb4cd9b2671f2a877598b7d86bff4a4440fa3d7d66db4",
    "run/hiring-impact/20261129-223848-487939/.hydra/config.yaml":
        "c04245653cce58daecc43f8aacf97bbc58262372a3befc26c04a69d64b1663f0",
    "run/hiring-impact/20261129-223848-487939/.hydra/hydra.yaml":
        "0bb47af0ecefa0a82a5bc771b3482bce15b99aba384ef8e924182b3a35f0d4d2",
    "run/hiring-impact/20261129-223848-487939/.hydra/overrides.yaml":
        "3325dcc6ea675034cedae8bbeb4268b4fede5bc7f97decc34ee78747130f6b8d",
    "run/hiring-impact/20261129-223848-487939/cli.log":
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "run/hiring-impact/20261129-223848-487939/codes.jsonl":
        "b48fe2d8b74db2f05f6b1023e17dcb8b7bde9f5cadacaf04346c1422ef1ffc71",
    "run/hiring-impact/20261129-223848-487939/estimates.csv":
        "080063b793e1d3b32d72fb0fd0db40912a420ad9e2e75d578124b0a6b918d743",
    "run/hiring-impact/20261129-223848-487939/items.csv":
        "bf918677e3724e9114863db19ce82127d068031a5cb2170784db32d51611689a",
    "run/hiring-impact/20261129-223848-487939/manifest.json":
        "b37fe41f83f53d1035c20de379a8e66e87d2a9ace49cc6df51d4031bddf98114",
    "run/hiring-impact/20261129-223848-487939/plots/impact-1.svg":
        "41fba5386b114222a0809508ce7815bdb628993bbacdbe002c916bc9a6ebcb6e",
    "run/hiring-impact/20261129-223848-487939/plots/invite_rate-1.svg":
        "24a8cd29666c6b3d36f6339417951b2e1f6d377de9f1a9303e3dcfceab4f3fca",
    "run/hiring-impact/20261129-223848-487939/report.html":
        "6aff7494fdeed7fd6c9d42b5bdc48d31d8ba0f87ac74c428eab22a90aa99fabc",
    "run/hiring-impact/20261129-223848-487939/report.md":
        "c60f80572424ddbb7d16d192ab8d37c1ea3a462f20efa8cb25c1434c4dd68327",
    "run/hiring-impact/20261129-223848-487939/responses.jsonl":
        "80e0173d03493d6fb152bcf5f127a432f6d39868035d85904a23996fe49e9d2c",
    "run/hiring-impact/20261129-223848-487939/summary.json":
        "7ed3daae78ef1b55af6cda371b528496be741a5f6d8e1711c7dcbaf16433cc0e",
    "spec/data/hiring_profiles.csv":
        "5395ec87aca7650bf8923427a411a80ffa165741217e0f0d1e8e2c75fb97f47a",
    "spec/hiring_impact.yaml":
        "dfcdf29142ae123cc2c42c435af141d3baaddfd4363dc181e11dfa888f27fc02",
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pin_problems(root: Path) -> list[str]:
    skip = {"README.md", "make_fixture.py"}
    found = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() and p.name not in skip}
    problems = [f"{name}: missing" for name in sorted(set(PINNED) - set(found))]
    problems += [f"{name}: not a golden file" for name in sorted(set(found) - set(PINNED))]
    problems += [f"{name}: SHA-256 changed" for name, p in sorted(found.items())
                 if name in PINNED and _sha(p) != PINNED[name]]
    return problems


def _copy(tmp_path: Path) -> Path:
    """A copy of the golden folder, its manifest's paths moved to the copy."""
    root = tmp_path / "format_v2"
    shutil.copytree(GOLDEN, root)
    manifest = root / RUN / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(WRITTEN_UNDER, str(root)), encoding="utf-8")
    return root


def _summary(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((root / RUN / "summary.json").read_text(encoding="utf-8"))
    return out


def test_the_golden_files_are_unchanged() -> None:
    assert pin_problems(GOLDEN) == []


def test_a_one_byte_edit_breaks_the_pins(tmp_path: Path) -> None:
    root = tmp_path / "g"
    shutil.copytree(GOLDEN, root)
    raw = (root / RUN / "summary.json").read_bytes()
    (root / RUN / "summary.json").write_bytes(raw.replace(b'"FAIL"', b'"PAIL"', 1))
    assert pin_problems(root) == [f"{RUN.as_posix()}/summary.json: SHA-256 changed"]


# -- the versions they were written at, and the committed schemas of those versions ------------

def _schema(kind: str, version: int) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / kind / f"v{version}.json").read_text(encoding="utf-8")))


def test_each_file_says_format_2_and_satisfies_the_committed_format_2_schema() -> None:
    summary = _summary(GOLDEN)
    manifest = json.loads((GOLDEN / RUN / "manifest.json").read_text(encoding="utf-8"))
    assert summary["format_version"] == 2 and manifest["format_version"] == 2
    _schema("run-summary", 2).validate(summary)
    _schema("manifest", 2).validate(manifest)
    for kind in ("responses", "codes"):
        head, *lines = (GOLDEN / RUN / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(head) == {"biasaudit_trail": kind, "format_version": 2}
        check = _schema(kind, 2)
        check.validate(json.loads(head))
        assert len(lines) == 96
        for line in lines:
            check.validate(json.loads(line))
    with zipfile.ZipFile(GOLDEN / "pack.zip") as z:
        pack = json.loads(z.read("MANIFEST.json"))
    assert pack["format"] == "biasaudit-evidence-pack/2"
    _schema("pack", 2).validate(pack)
    # the cache's user_version, from the SQLite header (bytes 60-63, big-endian): opening the
    # golden file with SQLite, even read-only, would leave -shm/-wal files beside it (WAL mode)
    header = (GOLDEN / "cache.sqlite").read_bytes()[:100]
    assert header.startswith(b"SQLite format 3\x00") and int.from_bytes(header[60:64], "big") == 1
    # a later biasaudit reads these versions (it may write newer ones, never older)
    for kind in ("summary", "manifest", "responses", "codes", "pack"):
        assert up.current(kind) >= 2, kind


def test_a_schema_check_catches_an_edited_key() -> None:
    summary = _summary(GOLDEN)
    with pytest.raises(jsonschema.ValidationError):
        _schema("run-summary", 2).validate({**summary, "colour": 1})
    with pytest.raises(jsonschema.ValidationError):
        _schema("manifest", 2).validate({k: v for k, v in json.loads(
            (GOLDEN / RUN / "manifest.json").read_text(encoding="utf-8")).items() if k != "format_version"})


# -- verify -----------------------------------------------------------------------------------

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
    # format 2: this biasaudit's, or (a later one) read and upgraded
    assert "evidence pack format 2 (this biasaudit's)" in out or "read evidence pack format 2, upgraded" in out
    assert "verified:" in out


@pytest.mark.slow
def test_verify_catches_a_one_byte_edit_of_the_golden_pack(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with zipfile.ZipFile(GOLDEN / "pack.zip") as zf:
        members = [(i, zf.read(i)) for i in zf.infolist()]
    name = f"runs/{RUN.name}/report/summary.json"
    tampered = tmp_path / "member.zip"
    with zipfile.ZipFile(tampered, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info.filename, data.replace(b'"FAIL"', b'"PASS"', 1) if info.filename == name else data)
    code, out = _verify(tampered, capsys)
    assert code == 1 and f"FAILED: {name}: SHA-256 differs from MANIFEST.json" in out, out


# -- re-render ------------------------------------------------------------------------------

def _numbers(s: dict[str, Any]) -> dict[str, Any]:
    return {"overall": s["overall"], "verdicts": [(v["metric"], v["verdict"]) for v in s["verdicts"]],
            "estimates": {(k, e): (x["value"], x["ci_low"], x["ci_high"], x["n"], json.dumps(x.get("group")))
                          for k, m in s["metrics"].items() for e, x in m["estimates"].items()}}


@pytest.mark.slow
def test_report_re_renders_the_golden_run_with_the_same_numbers(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    assert main(["report", str(root / RUN)]) == 0, capsys.readouterr()
    capsys.readouterr()
    assert _numbers(_summary(root)) == _numbers(_summary(GOLDEN))
    assert _summary(root)["overall"] == "FAIL"
    assert (root / RUN / "estimates.csv").read_bytes() == (GOLDEN / RUN / "estimates.csv").read_bytes()
    assert (root / RUN / "report.md").is_file() and (root / RUN / "report.html").is_file()
    assert _sha(root / "cache.sqlite") == PINNED["cache.sqlite"]  # a re-render writes nothing to the cache


@pytest.mark.slow
def test_re_render_catches_a_one_byte_edit_of_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    raw = (root / "cache.sqlite").read_bytes()
    answer = b'"text":"Yes.'  # a stored answer (the runs table's manifest names the script first)
    assert raw.count(answer) >= 1
    (root / "cache.sqlite").write_bytes(raw.replace(answer, b'"text":"Nes.', 1))  # an invite becomes a reject
    main(["report", str(root / RUN)])
    capsys.readouterr()
    assert _numbers(_summary(root)) != _numbers(_summary(GOLDEN))
