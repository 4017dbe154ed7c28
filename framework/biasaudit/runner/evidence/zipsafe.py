"""Reading a pack as the untrusted input it is: every member name checked (no absolute
path, no `..`, no backslash, no odd character, no duplicate), no symlink, no encrypted
member, a bounded member count and a bounded number of bytes actually decompressed (a
zip's declared sizes may lie). Members are extracted only into the caller's temporary
folder, by our own code (never `extractall`)."""

from __future__ import annotations

import re
import stat
import zipfile
import zlib
from pathlib import Path

from biasaudit._util.fileio import open_output
from biasaudit.errors import BiasAuditError

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 4 * 2**30
"""Bytes decompressed from the whole pack, at most (responses of a large run fit)."""
MAX_RATIO = 1_000
"""Declared compression ratio above which a large member is taken for a zip bomb."""
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
_CHUNK = 1 << 20


class UnsafePack(BiasAuditError):
    """The file is not a zip, or a zip that cannot be read safely."""


def check_name(name: str) -> str | None:
    """Why a member name is unsafe, or None. Names are relative paths of plain parts."""
    if not name or len(name) > 1000:
        return "an empty or over-long name"
    if "\\" in name or name.startswith("/") or ":" in name:
        return "an absolute or Windows path"
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "a path with an empty, '.' or '..' part"
    if not all(_PART.fullmatch(p) for p in parts):
        return "characters outside A-Z a-z 0-9 . _ -"
    return None


def _bad(pack: Path, why: str) -> UnsafePack:
    return UnsafePack(f"not a safe evidence pack: {why}", file=str(pack),
                      hint="give a zip written by `biasaudit pack`; do not unzip this file")


def extract(pack: Path, into: Path, *, max_total: int = MAX_TOTAL_BYTES, max_members: int = MAX_MEMBERS) -> list[str]:
    """Extract the pack's files into the empty folder `into`; returns their names in zip order."""
    if not pack.is_file():
        raise UnsafePack("no such file" if not pack.exists() else "not a regular file", file=str(pack),
                         hint="give the path of an evidence pack (.zip) written by `biasaudit pack`")
    try:
        zf = zipfile.ZipFile(pack)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnsafePack(f"not a zip file ({str(exc)[:80]})", file=str(pack),
                         hint="give an evidence pack (.zip) written by `biasaudit pack`") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > max_members:
            raise _bad(pack, f"{len(infos)} members, over the limit of {max_members}")
        # zipfile reads past bytes put before the first member (a shell script's, making
        # the pack a self-extracting or polyglot file); `biasaudit pack` writes none
        first = min((i.header_offset for i in infos), default=0)
        if first:
            raise _bad(pack, f"{first} bytes before its first member (a self-extracting or polyglot file)")
        seen: set[str] = set()
        declared = 0
        for info in infos:
            why = check_name(info.filename)
            if why:
                raise _bad(pack, f"member {info.filename[:80]!r} has {why}")
            key = info.filename.rstrip("/")
            if key in seen:
                raise _bad(pack, f"member {key[:80]!r} is there twice")
            seen.add(key)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise _bad(pack, f"member {key[:80]!r} is a symbolic link")
            if info.flag_bits & 0x1:
                raise _bad(pack, f"member {key[:80]!r} is encrypted")
            declared += info.file_size
            if info.file_size > 2**20 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise _bad(pack, f"member {key[:80]!r} expands {info.file_size // max(info.compress_size, 1)} times "
                                 "(a zip bomb?)")
        if declared > max_total:
            raise _bad(pack, f"it expands to {declared} bytes, over the limit of {max_total}")
        # a file and a folder of the same name cannot both be extracted
        for key in seen:
            parent = key.rpartition("/")[0]
            while parent:
                if parent in seen and not any(i.filename == parent + "/" for i in infos):
                    raise _bad(pack, f"member {parent[:80]!r} is both a file and a folder")
                parent = parent.rpartition("/")[0]
        return _copy_out(zf, infos, pack, into, max_total)


def _copy_out(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], pack: Path, into: Path, max_total: int) -> list[str]:
    root = into.resolve()
    total = 0
    names = []
    for info in infos:
        if info.is_dir():
            continue
        dest = (root / info.filename).resolve()
        if root not in dest.parents:  # belt and braces: check_name already refused this
            raise _bad(pack, f"member {info.filename[:80]!r} points outside the folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        try:
            with zf.open(info) as src, open_output(dest, "wb", key="pack", what="pack member") as out:
                while block := src.read(_CHUNK):
                    n += len(block)
                    total += len(block)
                    if n > info.file_size or total > max_total:
                        raise _bad(pack, f"member {info.filename[:80]!r} holds more bytes than it declares")
                    out.write(block)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, NotImplementedError,
                ValueError) as exc:
            raise _bad(pack, f"member {info.filename[:80]!r} cannot be read ({str(exc)[:80]})") from None
        names.append(info.filename)
    return names
