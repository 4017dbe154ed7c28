"""Evidence packs (`biasaudit verify`) are untrusted input: `zipsafe.extract` refuses unsafe
names, links, encrypted members, zip bombs and packs over the member and size bounds, and
writes nothing outside the folder it is given; the re-computation never reads a file, or
hashes a model, that the packed config names, and keeps the resource limits at their defaults."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from biasaudit.runner.evidence.zipsafe import UnsafePack, check_name, extract


def _zip(path: Path, members: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "/etc/passwd", "a\\..\\evil", "C:/x",
                                  "a//b", "./a", "a/./b", "", ".hidden", "a b", "caf\u00e9", "x\n"])
def test_unsafe_member_names_are_refused(tmp_path: Path, name: str) -> None:
    assert check_name(name) is not None
    pack = tmp_path / "p.zip"
    with zipfile.ZipFile(pack, "w") as zf:
        info = zipfile.ZipInfo("placeholder")
        info.filename = name  # ZipInfo would normalise some of these: write them as an attacker would
        zf.writestr(info, b"x")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UnsafePack):
        extract(pack, out)
    assert not (tmp_path / "evil.txt").exists() and list(out.rglob("*")) == []


def test_safe_names_extract_inside_the_folder(tmp_path: Path) -> None:
    pack = _zip(tmp_path / "p.zip", [("MANIFEST.json", b"{}"), ("runs/r1/report/summary.json", b"[1]")])
    out = tmp_path / "out"
    out.mkdir()
    assert extract(pack, out) == ["MANIFEST.json", "runs/r1/report/summary.json"]
    assert (out / "runs/r1/report/summary.json").read_bytes() == b"[1]"


def test_a_symlink_member_is_refused(tmp_path: Path) -> None:
    info = zipfile.ZipInfo("link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    pack = _zip(tmp_path / "p.zip", [(info, b"/etc/passwd")])
    with pytest.raises(UnsafePack, match="symbolic link"):
        extract(pack, tmp_path)


def test_duplicate_and_encrypted_members_are_refused(tmp_path: Path) -> None:
    with pytest.warns(UserWarning):  # zipfile warns about the duplicate it writes
        pack = _zip(tmp_path / "dup.zip", [("a.txt", b"1"), ("a.txt", b"2")])
    with pytest.raises(UnsafePack, match="twice"):
        extract(pack, tmp_path)
    pack = _zip(tmp_path / "enc.zip", [("secret.txt", b"x")])
    raw = bytearray(pack.read_bytes())
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 8] |= 0x1  # the general-purpose flag: encrypted
    raw[6] |= 0x1  # and in the local header
    pack.write_bytes(bytes(raw))
    with pytest.raises(UnsafePack, match="encrypted"):
        extract(pack, tmp_path)


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    pack = _zip(tmp_path / "bomb.zip", [("zeros.bin", bytes(64 * 2**20))])  # ~64 KiB on disk
    assert pack.stat().st_size < 2**20
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UnsafePack, match="zip bomb"):
        extract(pack, out)
    assert list(out.iterdir()) == []


def test_total_size_and_member_count_are_bounded(tmp_path: Path) -> None:
    pack = _zip(tmp_path / "p.zip", [(f"f{i}.txt", b"x" * 100) for i in range(5)])
    with pytest.raises(UnsafePack, match="over the limit of 499"):
        extract(pack, tmp_path / "a", max_total=499)
    with pytest.raises(UnsafePack, match="5 members, over the limit of 4"):
        extract(pack, tmp_path / "b", max_members=4)


def test_a_member_that_lies_about_its_size_is_refused(tmp_path: Path) -> None:
    pack = _zip(tmp_path / "p.zip", [("a.txt", b"y" * 5000)])
    raw = bytearray(pack.read_bytes())
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24:central + 28] = (10).to_bytes(4, "little")  # declared uncompressed size: 10 bytes
    pack.write_bytes(bytes(raw))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UnsafePack):
        extract(pack, out)


def test_not_a_zip_and_missing_file_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "x.zip").write_text("not a zip")
    with pytest.raises(UnsafePack, match="not a zip file"):
        extract(tmp_path / "x.zip", tmp_path)
    with pytest.raises(UnsafePack, match="no such file"):
        extract(tmp_path / "nope.zip", tmp_path)


def test_the_recomputation_keeps_resource_limits_at_their_defaults() -> None:
    from biasaudit.runner.evidence.recompute import _bounded
    from biasaudit.spec import RuntimeLimits

    default = RuntimeLimits()
    got = _bounded({"max_stimuli": 10**12, "template_seconds": 1e9, "template_steps": "many", "max_coding_chars": 50_000,
                    "max_cells": 10})
    assert got["max_stimuli"] == default.max_stimuli and got["template_seconds"] == default.template_seconds
    assert got["template_steps"] == default.template_steps
    assert got["max_coding_chars"] == 50_000  # changes results: the run's own
    assert got["max_cells"] == 10  # lower than the default: kept
    assert _bounded(None) == default.model_dump(mode="json")


# -- packs whose config was rewritten (and rehashed) to reach the verifier's files ----------

SPEC = """
audit: {name: hostile-pack, method: token_probability}
stimuli: {source: crows.csv, format: crows_pairs}
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
"""


@pytest.fixture
def packed(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    from tests.conftest import isolation, run_dirs
    from tests.helpers import write_crows_subset, write_spec

    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent")
    (tmp_path / "reports").mkdir()
    write_crows_subset(tmp_path / "crows.csv", 4)
    spec = write_spec(tmp_path / "audit.yaml", SPEC)
    assert cli("run", f"spec={spec}", "model=scripted", *isolation(tmp_path))[0] == 0
    assert cli("pack", str(run_dirs(tmp_path)[0]), "-o", str(tmp_path / "audit.zip"))[0] == 0
    with zipfile.ZipFile(tmp_path / "audit.zip") as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _forge(files: dict[str, bytes], out: Path, changes: dict[str, bytes | None]) -> Path:
    """Apply `changes` (None: remove) and update MANIFEST.json's digests to match."""
    import hashlib
    import json

    files = {**files, **{k: v for k, v in changes.items() if v is not None}}
    for k, v in changes.items():
        if v is None:
            files.pop(k)
    manifest = json.loads(files["MANIFEST.json"])
    manifest["files"] = {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for n, b in files.items()
                         if n != "MANIFEST.json"}
    files["MANIFEST.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w") as zf:
        for n, b in files.items():
            zf.writestr(n, b)
    return out


def _run_prefix(files: dict[str, bytes]) -> str:
    return next(n for n in files if n.endswith("/config/manifest.json")).removesuffix("config/manifest.json")


@pytest.mark.slow
def test_a_packed_config_cannot_make_verify_read_a_local_file(packed: dict[str, bytes], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import json

    r = _run_prefix(packed)
    secret = tmp_path / "private.csv"
    secret.write_text("sent_more,sent_less,stereo_antistereo,bias_type\nPRIVATE-LINE,x,stereo,gender\n")
    manifest = json.loads(packed[f"{r}config/manifest.json"])
    manifest["config"]["stimuli"]["source"] = str(secret)
    manifest["data"]["source"] = None
    forged = _forge(packed, tmp_path / "forged.zip", {f"{r}config/manifest.json": json.dumps(manifest).encode(),
                                                       f"{r}data/stimuli-crows.csv": None})
    code, out, err = cli("verify", str(forged))
    assert code == 1 and "the pack holds no data file for this run" in out
    assert "PRIVATE-LINE" not in out + err


@pytest.mark.slow
def test_a_model_the_pack_has_no_identity_for_is_not_hashed(packed: dict[str, bytes], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import json

    r = _run_prefix(packed)
    manifest = json.loads(packed[f"{r}config/manifest.json"])
    scripted_only = ("script", "api_key_env")  # the scripted double's keys: not an hf_causal config's
    manifest["config"]["model"] = {**{k: v for k, v in manifest["config"]["model"].items() if k not in scripted_only},
                                   "backend": "hf_causal", "path": str(tmp_path), "name": "local"}
    identity = json.loads(packed[f"{r}model/identity.json"])
    identity["pinned"] = {}
    forged = _forge(packed, tmp_path / "forged.zip", {f"{r}config/manifest.json": json.dumps(manifest).encode(),
                                                       f"{r}model/identity.json": json.dumps(identity).encode()})
    code, out, _ = cli("verify", str(forged))
    assert code == 1 and "no recorded identity for the model config" in out
