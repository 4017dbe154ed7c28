"""An evidence pack is untrusted input: `zipsafe.extract` refuses unsafe names, links,
encrypted members, zip bombs and packs over the member and size bounds, and writes
nothing outside the folder it is given."""

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
