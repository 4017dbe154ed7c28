"""Published data files and where they came from: the `provenance.json` of a data folder,
read into a strict model, and the check the loader makes against it.

A folder of published files (`specs/data/<benchmark>/`) carries a `provenance.json`
naming the benchmark, its licence, the source repository and commit, and each file with
its SHA-256 (docs/data.md). A stimuli file that such a folder lists is checked against
the recorded digest before it is parsed: a changed file is refused with one line, so a
run never reports numbers on data that is not the published data it says it used.

Files the project could not ship are listed under `unobtained` (or as a `files` entry
with a `url` and no file in the folder): `biasaudit data fetch` downloads them and checks
the recorded digest (the SHA-256, or the git blob SHA-1 the source repository's tree
gives when the SHA-256 could not be computed) before moving them into place.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from biasaudit._util.fileio import excerpt, path_problem, read_capped
from biasaudit.data.readers import FileDigest, file_digest
from biasaudit.errors import DataError
from biasaudit.records.manifest import DataProvenance

PROVENANCE_NAME = "provenance.json"
MAX_PROVENANCE_BYTES = 4 * 2**20
SEARCH_DEPTH = 3
"""Folders searched for a data file's provenance.json: its own and the two above it (a
benchmark's files may sit in sub-folders, e.g. one per model)."""
FORMAT_HINT = "see docs/data.md for the provenance.json format"


def _relative(value: str) -> str:
    """A file's path inside its provenance folder: relative, forward slashes, no `..`, so a
    provenance file can never name (or make `data fetch` write) a file outside its folder."""
    if not value or "\x00" in value or "\\" in value:
        raise ValueError("must be a non-empty relative path with forward slashes")
    p = PurePosixPath(value)
    if p.is_absolute() or any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError(f"must be a relative path inside the folder, without '.' or '..' parts (got {value!r})")
    return value


def http_url(value: str) -> str:
    """A download address: http or https with a host, no credentials in it (a provenance
    file is not the place for a secret, and nothing else may be read: no file:// URL)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"must be an http(s) URL with a host (got {excerpt(value, 80)!r})")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials")
    return value


RelPath = Annotated[str, AfterValidator(_relative)]
HttpUrl = Annotated[str, AfterValidator(http_url)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
GitSha1 = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PublishedFile(_Strict):
    """A file shipped in the folder (or, with `url`, fetched into it), byte-identical to the
    published file or its gzip."""

    path: RelPath
    """The file's path inside the provenance folder."""
    source_path: str
    """Its path in the source repository at `commit`."""
    sha256: Sha256
    """SHA-256 of the stored file (of the gzip when `compressed`)."""
    bytes: int = Field(ge=0)
    """Size of the stored file."""
    records: int | None = Field(default=None, ge=0)
    """Records (rows, lines, items) the published file holds."""
    compressed: bool = False
    """Stored gzip-compressed (`path` ends in `.gz`); `source_sha256` is the original's."""
    source_sha256: Sha256 | None = None
    git_blob_sha1: GitSha1 | None = None
    """The git blob id of the published file in the source repository's tree."""
    url: HttpUrl | None = None
    """Where `biasaudit data fetch` downloads it when it is not in the folder."""
    note: str = ""

    @model_validator(mode="after")
    def _gzip_named(self) -> PublishedFile:
        if self.compressed != self.path.endswith(".gz"):
            raise ValueError(f"`compressed` is {str(self.compressed).lower()} but the path "
                             f"{'does not end' if self.compressed else 'ends'} in .gz")
        return self


class UnobtainedFile(_Strict):
    """A published file the project could not ship: where it lives and how to check it."""

    source_path: str | None = None
    """Its path in the source repository (None: published elsewhere, e.g. a dataset hub;
    `url` says where)."""
    path: RelPath | None = None
    """Its name in the folder once fetched (default: the last part of `source_path`)."""
    url: HttpUrl | None = None
    sha256: Sha256 | None = None
    git_blob_sha1: GitSha1 | None = None
    bytes: int | None = Field(default=None, ge=0)
    records: int | None = Field(default=None, ge=0)
    why: str = ""

    @property
    def local_path(self) -> str | None:
        """Its name in the folder; None when the provenance names no file (a pointer only)."""
        if self.path is not None:
            return self.path
        return _relative(PurePosixPath(self.source_path).name) if self.source_path else None


class Provenance(_Strict):
    """A data folder's provenance.json."""

    benchmark: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """The benchmark's id (lower case), which `biasaudit data fetch` takes."""
    title: str = ""
    """Its name as cited in a report (e.g. CrowS-Pairs); the id when empty."""
    licence: str = Field(min_length=1)
    licence_url: str = ""
    licence_source: str = ""
    """Where the licence was read (the repository's LICENSE file, its README)."""
    source_repo: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
    """owner/name on GitHub."""
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    citation: str = ""
    note: str = ""
    files: list[PublishedFile] = Field(default_factory=list)
    unobtained: list[UnobtainedFile] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_paths(self) -> Provenance:
        seen: set[str] = set()
        for p in [f.path for f in self.files] + [u.local_path for u in self.unobtained if u.local_path]:
            if p in seen:
                raise ValueError(f"the path {p!r} is listed twice")
            seen.add(p)
        return self

    @property
    def name(self) -> str:
        return self.title or self.benchmark

    def entries(self) -> list[Entry]:
        """Every file, shipped or not, in one shape."""
        out = [Entry(path=f.path, source_path=f.source_path, sha256=f.sha256, git_blob_sha1=f.git_blob_sha1,
                     bytes=f.bytes, records=f.records, url=f.url, listed=True) for f in self.files]
        out += [Entry(path=u.local_path or "", source_path=u.source_path or "", sha256=u.sha256,
                      git_blob_sha1=u.git_blob_sha1, bytes=u.bytes, records=u.records, url=u.url, listed=False)
                for u in self.unobtained]
        return out

    def entry(self, rel: str) -> Entry | None:
        return next((e for e in self.entries() if e.path and e.path == rel), None)


@dataclass(frozen=True)
class Entry:
    """One file of a provenance folder, shipped (`listed` under `files`) or not."""

    path: str
    """Its path in the folder; empty for a pointer to data published elsewhere (no file named)."""
    source_path: str
    sha256: str | None
    git_blob_sha1: str | None
    bytes: int | None
    records: int | None
    url: str | None
    listed: bool

    @property
    def digest_kind(self) -> str | None:
        """What the file is checked against: its SHA-256 when recorded, else its git blob id."""
        return "sha256" if self.sha256 else "git_blob_sha1" if self.git_blob_sha1 else None

    def expected(self) -> str | None:
        return self.sha256 or self.git_blob_sha1

    def found(self, d: FileDigest) -> str:
        return d.git_blob_sha1 if self.digest_kind == "git_blob_sha1" else d.sha256

    def matches(self, d: FileDigest) -> bool:
        return self.expected() is not None and self.found(d) == self.expected()


@dataclass(frozen=True)
class Located:
    """A data file's provenance: the provenance.json, what it says and its entry for the file."""

    file: Path
    provenance: Provenance
    entry: Entry


def read_provenance(path: Path) -> Provenance:
    """A provenance.json, validated; a malformed one is one line naming the file and key."""
    raw = read_capped(path, MAX_PROVENANCE_BYTES, what="provenance file", hint=FORMAT_HINT)
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataError(f"not valid JSON ({excerpt(str(exc), 80)})", file=str(path), hint=FORMAT_HINT) from None
    try:
        return Provenance.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or None
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raise DataError(f"malformed provenance: {excerpt(msg, 200)}", file=str(path), key=loc,
                        hint=FORMAT_HINT) from None


def locate(path: Path) -> Located | None:
    """The provenance of a data file (symlinks already resolved): the nearest
    provenance.json in its folder or the `SEARCH_DEPTH` - 1 folders above, if it lists the
    file. A folder without one, or whose nearest one does not list the file, gives None."""
    for folder in list(path.parents)[:SEARCH_DEPTH]:
        pj = folder / PROVENANCE_NAME
        if not os.path.lexists(pj):
            continue
        problem = path_problem(pj)
        if problem:
            raise DataError(f"provenance file: {problem}", file=str(pj), hint=FORMAT_HINT)
        prov = read_provenance(pj)
        entry = prov.entry(path.relative_to(folder).as_posix())
        return Located(pj, prov, entry) if entry is not None else None
    return None


def mismatch(file: Path, loc: Located, d: FileDigest, key: str | None) -> DataError:
    """The one-line refusal of a file that is not the published one."""
    e = loc.entry
    kind = "SHA-256" if e.digest_kind == "sha256" else "git blob SHA-1"
    restore = (f"`biasaudit data fetch {loc.provenance.benchmark}`" if e.url
               else f"`git checkout -- {file.name}` in {file.parent}")
    return DataError(
        f"{kind} {e.found(d)[:12]}... does not match {(e.expected() or '')[:12]}... recorded for {e.path} "
        f"in {loc.file}", file=str(file), key=key,
        hint=f"this is not the published file: restore it ({restore}), or put an edited copy outside "
             f"{file.parent} and point stimuli.source at it")


def check(path: Path, key: str | None = "stimuli.source") -> tuple[DataProvenance, FileDigest] | None:
    """The provenance record of a data file that a provenance.json lists, after checking
    the file's digest against it (a mismatch is a DataError); None for a file no
    provenance lists. The digest is computed once per file version in a process."""
    loc = locate(path)
    if loc is None:
        return None
    d = file_digest(path, key=key)
    e = loc.entry
    if e.expected() is not None and not e.matches(d):
        raise mismatch(path, loc, d, key)
    p = loc.provenance
    return DataProvenance(
        benchmark=p.benchmark, title=p.name, licence=p.licence, licence_url=p.licence_url,
        source_repo=p.source_repo, commit=p.commit, source_path=e.source_path, path=e.path,
        sha256=d.sha256, records=e.records, citation=p.citation,
        checked=e.digest_kind or "none"), d


def data_folders(extra: list[Path]) -> list[Path]:
    """The shipped data folder (specs/data) and the folders given, each once."""
    from biasaudit._util.paths import shipped_specs_dir

    out: list[Path] = []
    for f in [shipped_specs_dir() / "data", *extra]:
        r = f.expanduser().resolve()
        if r not in out:
            out.append(r)
    return out


MAX_WALK = 10_000


def find_provenance_files(folders: list[Path]) -> list[Path]:
    """Every provenance.json under the folders (symlinked folders not followed, at most
    `MAX_WALK` folders visited), sorted."""
    found: set[Path] = set()
    seen = 0
    for root in folders:
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            seen += 1
            if seen > MAX_WALK:
                raise DataError(f"more than {MAX_WALK} folders under it", file=str(root),
                                hint="give the folder of one benchmark")
            dirnames.sort()
            if PROVENANCE_NAME in filenames:
                found.add(Path(dirpath) / PROVENANCE_NAME)
    return sorted(found)




@dataclass(frozen=True)
class FileStatus:
    entry: Entry
    path: Path
    state: str
    """`ok` (the recorded digest), `mismatch`, `absent` (a shipped file missing),
    `not fetched` (a file to fetch, not there), `unchecked` (there, no digest recorded)."""
    digest: FileDigest | None = None

    @property
    def problem(self) -> bool:
        return self.state in ("mismatch", "absent")


def file_status(folder: Path, entry: Entry) -> FileStatus:
    """Whether one file of a provenance folder is there and is the published file."""
    path = folder / entry.path
    if not entry.path or not path.is_file():
        fetchable = entry.url is not None or not entry.listed
        return FileStatus(entry, path, "not fetched" if fetchable else "absent")
    d = file_digest(path)
    if entry.expected() is None:
        return FileStatus(entry, path, "unchecked", d)
    return FileStatus(entry, path, "ok" if entry.matches(d) else "mismatch", d)


__all__ = ["PROVENANCE_NAME", "Entry", "FileStatus", "Located", "Provenance", "PublishedFile", "UnobtainedFile", "check",
           "data_folders", "file_status", "find_provenance_files", "locate", "mismatch", "read_provenance"]
