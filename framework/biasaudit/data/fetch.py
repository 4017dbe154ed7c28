"""`biasaudit data fetch`: download a published file the project could not ship, into its
provenance folder (or a folder the operator names), and keep it only if its digest is the
one its provenance records.

The download follows the rules of biasaudit's HTTP clients (backends/openai_compat.py):
the server is not trusted. Nothing is read from the environment (no proxy variables, no
.netrc: `trust_env=False`), only http(s) URLs are fetched, a redirect is followed only to
the same scheme, host and port (another host only when the operator allows it by name;
https never to http), the body is read raw (no decompression: the digest is of the bytes
published) up to the recorded size, every network step has a timeout, and the file is
written to a temporary file beside its place, hashed by the loader's own digest function
and moved into place only when the digest matches. A file's place is its provenance
`path` (validated relative, no `..`) inside the destination folder, checked again after
the folder's symlinks are resolved, so no provenance file can make it write elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

from biasaudit._util.fileio import (
    atomic_binary,
    atomic_write,
    check_output_dir,
    excerpt,
    read_capped,
)
from biasaudit.data.provenance import (
    MAX_PROVENANCE_BYTES,
    PROVENANCE_NAME,
    Entry,
    Located,
    Provenance,
    data_folders,
    find_provenance_files,
    http_url,
    read_provenance,
)
from biasaudit.data.readers import FileDigest, file_digest, hash_stream
from biasaudit.errors import DataError

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 2 * 2**30
"""Largest download when the provenance records no size (with a size, that size is the bound)."""
DEFAULT_TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Fetched:
    entry: Entry
    path: Path
    digest: FileDigest
    already: bool
    """True: the file was there already with the recorded digest; nothing downloaded."""
    url: str = ""


@dataclass(frozen=True)
class FetchOptions:
    allow_hosts: frozenset[str] = frozenset()
    """Hosts a redirect may lead to besides the URL's own (the operator's --allow-redirect-host)."""
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT
    force: bool = False
    """Replace a file that is there with another digest (after the download verified)."""
    transport: httpx.BaseTransport | None = None
    """For tests: a transport to send the requests through."""


def _origin(url: str) -> tuple[str, str, int | None]:
    p = urlsplit(url)
    return p.scheme, (p.hostname or "").lower(), p.port or {"http": 80, "https": 443}.get(p.scheme)


def _next_url(current: str, location: str, allow_hosts: frozenset[str], key: str) -> str:
    """Where a redirect leads, if the rules allow it: http(s), no credentials, the same
    origin or an allowed host, never from https to http."""
    nxt = urljoin(current, location)
    try:
        http_url(nxt)
    except ValueError as exc:
        raise DataError(f"redirect refused: {excerpt(str(exc), 120)}", key=key, hint="check the URL") from None
    (s0, h0, p0), (s1, h1, p1) = _origin(current), _origin(nxt)
    if s0 == "https" and s1 == "http":
        raise DataError(f"redirect from https to http ({excerpt(nxt, 80)}) refused", key=key,
                        hint="give the https URL with --url")
    if (h1, p1) != (h0, p0) and h1 not in allow_hosts:
        raise DataError(f"redirect to another host ({h1}) not followed", key=key,
                        hint=f"if you trust {h1}, allow it: --allow-redirect-host {h1}")
    return nxt


def _download(url: str, entry: Entry, target: Path, opts: FetchOptions, loc: Located) -> tuple[FileDigest, str]:
    """Stream `url` into a temporary file beside `target`, check its digest, move it into
    place. A refusal (size, status, digest) leaves nothing written."""
    key = f"{loc.provenance.benchmark}: {entry.path}"
    limit = entry.bytes if entry.bytes is not None else opts.max_bytes
    too_big = DataError(f"the download is larger than {limit} bytes"
                        + (" (the size its provenance records)" if entry.bytes is not None else ""),
                        key=key, hint="the server does not serve the published file; check the URL"
                        if entry.bytes is not None else "raise --max-bytes if the file is that large")
    headers = {"Accept-Encoding": "identity", "User-Agent": "biasaudit-data-fetch"}
    timeout = httpx.Timeout(opts.timeout, connect=min(CONNECT_TIMEOUT, opts.timeout))
    client = httpx.Client(trust_env=False, follow_redirects=False, timeout=timeout, headers=headers,
                          transport=opts.transport)
    try:
        with client:
            for _ in range(MAX_REDIRECTS + 1):
                with client.stream("GET", url) as r:
                    if r.status_code in (301, 302, 303, 307, 308) and "Location" in r.headers:
                        url = _next_url(url, r.headers["Location"], opts.allow_hosts, key)
                        continue
                    if r.status_code != 200:
                        raise DataError(f"HTTP {r.status_code} from {excerpt(url, 120)}", key=key,
                                        hint="check the URL (--url gives another)")
                    enc = r.headers.get("Content-Encoding", "identity").strip().lower()
                    if enc not in ("", "identity"):
                        raise DataError(f"the server sent the file {excerpt(enc, 20)}-encoded", key=key,
                                        hint="the digest is of the published bytes; use a URL that serves them as is")
                    length = r.headers.get("Content-Length", "")
                    if length.isdigit() and int(length) > limit:  # refused before a byte is read
                        raise too_big
                    with atomic_binary(target) as f:
                        n = 0
                        for chunk in r.iter_raw(_CHUNK):
                            n += len(chunk)
                            if n > limit:
                                raise too_big
                            f.write(chunk)
                        f.flush()
                        f.seek(0)
                        d = hash_stream(f, n)  # the loader's own digests of the bytes written
                        if not entry.matches(d):
                            kind = "SHA-256" if entry.digest_kind == "sha256" else "git blob SHA-1"
                            raise DataError(f"the download's {kind} {entry.found(d)[:12]}... does not match "
                                            f"{(entry.expected() or '')[:12]}... recorded in {loc.file}; "
                                            "nothing was written", key=key,
                                            hint="the server does not serve the published file: check the URL")
                    return d, url
            raise DataError(f"more than {MAX_REDIRECTS} redirects", key=key, hint="check the URL")
    except httpx.TimeoutException:
        raise DataError(f"no response within {opts.timeout:g} s from {excerpt(url, 120)}", key=key,
                        hint="try again, or raise --timeout") from None
    except httpx.HTTPError as exc:
        raise DataError(f"cannot download {excerpt(url, 120)} ({type(exc).__name__})", key=key,
                        hint="check the network and the URL") from None


def _inside(target: Path, root: Path, key: str) -> Path:
    """`target` (its folders made) if it stays inside `root` once symlinks are resolved."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        real = target.parent.resolve() / target.name
    except (OSError, RuntimeError) as exc:
        raise DataError(f"cannot make the folder for it ({exc})", file=str(target), key=key,
                        hint="choose another --dest") from None
    if not real.is_relative_to(root):
        raise DataError("its place leads outside the destination folder (a symlink)", file=str(target), key=key,
                        hint="choose a --dest without symlinked sub-folders")
    return real


def fetch_entry(entry: Entry, url: str | None, root: Path, loc: Located, opts: FetchOptions) -> Fetched:
    """One file into `root` / its path: kept if there with the recorded digest, else
    downloaded and checked."""
    key = f"{loc.provenance.benchmark}: {entry.path}"
    if entry.expected() is None:
        raise DataError("its provenance records no digest to check a download against", file=str(loc.file),
                        key=key, hint="add its sha256 to the provenance file")
    if url is None:
        raise DataError("its provenance gives no URL to fetch it from", file=str(loc.file), key=key,
                        hint="give one with --url")
    if entry.bytes is not None and entry.bytes > opts.max_bytes:
        raise DataError(f"its recorded size ({entry.bytes} bytes) is over --max-bytes ({opts.max_bytes})",
                        key=key, hint="raise --max-bytes")
    target = _inside(root / entry.path, root, key)
    if target.exists():
        d = file_digest(target, key=key)
        if entry.matches(d):
            return Fetched(entry, target, d, already=True)
        if not opts.force:
            raise DataError("a file with another digest is in its place", file=str(target), key=key,
                            hint="move it away, or add --force to replace it with the published file")
    d, final = _download(url, entry, target, opts, loc)
    return Fetched(entry, target, d, already=False, url=final)


def find_benchmark(benchmark: str, folders: list[Path]) -> tuple[Path, Provenance]:
    """The provenance.json of `benchmark` (the first found, in the order of `folders`)."""
    known = []
    for pj in find_provenance_files(folders):
        prov = read_provenance(pj)
        if prov.benchmark == benchmark:
            return pj, prov
        known.append(prov.benchmark)
    raise DataError(f"no provenance.json for benchmark {excerpt(benchmark, 60)!r}", key="BENCHMARK",
                    hint=f"known: {', '.join(sorted(set(known))) or 'none'} (`biasaudit data list`)")


def _place_provenance(pj: Path, root: Path) -> None:
    """A copy of the provenance.json beside the files fetched into another folder, so the
    loader checks them there too; a different provenance.json there is refused."""
    there = root / PROVENANCE_NAME
    text = read_capped(pj, MAX_PROVENANCE_BYTES, what="provenance file").decode("utf-8-sig")
    if there.exists():
        if there.resolve() == pj.resolve():
            return
        if read_capped(there, MAX_PROVENANCE_BYTES, what="provenance file").decode("utf-8-sig") != text:
            raise DataError("the destination holds another provenance.json", file=str(there), key="--dest",
                            hint="fetch each benchmark into a folder of its own")
        return
    atomic_write(there, text)


def fetch_benchmark(benchmark: str, *, dest: Path | None = None, url: str | None = None, only: str | None = None,
                    extra: list[Path] | None = None, opts: FetchOptions = FetchOptions(),
                    say: Callable[[str], None] = lambda _: None) -> list[Fetched]:
    """Fetch the files of `benchmark` that are not in place: those its provenance gives a
    URL for (`only`: the one of that path or source path; `url`: another address, for a
    single file)."""
    if url is not None:
        try:
            http_url(url)
        except ValueError as exc:
            raise DataError(f"--url {excerpt(str(exc), 120)}", key="--url", hint="give an http(s) URL") from None
    folders = ([dest] if dest is not None else []) + data_folders(extra or [])
    pj, prov = find_benchmark(benchmark, [f for f in folders if f.is_dir()])
    entries = prov.entries()
    if only is not None:
        entries = [e for e in entries if only in (e.path, e.source_path)]
        if not entries:
            raise DataError(f"{benchmark} has no file {excerpt(only, 80)!r}", file=str(pj), key="--file",
                            hint="`biasaudit data list` names its files")
    if url is not None and len(entries) != 1:
        raise DataError(f"--url names one file, and {benchmark} has {len(entries)}", key="--url",
                        hint="say which with --file PATH")
    root = check_output_dir(dest if dest is not None else pj.parent, key="--dest", error=DataError,
                            hint="choose a writable folder: --dest DIR")
    root.mkdir(parents=True, exist_ok=True)
    if root != pj.parent.resolve():
        _place_provenance(pj, root)
    out = []
    for e in entries:
        if not e.path:
            say(f"skipped: a file of {benchmark} published at {e.url or 'an address not recorded'}: its provenance "
                "names no file and no digest to check")
            continue
        src = url or e.url
        if src is None:
            if e.listed and (root / e.path).is_file():
                continue  # shipped, nothing to fetch (checked by `data verify`)
            say(f"skipped: {e.path}: no URL recorded (give one with --file {e.path} --url URL)")
            continue
        got = fetch_entry(e, src, root, Located(pj, prov, e), opts)
        say(f"{'present' if got.already else 'fetched'}: {got.path} ({got.digest.size} bytes, "
            f"{e.digest_kind} ok; sha256 {got.digest.sha256})")
        out.append(got)
    return out


__all__ = ["DEFAULT_MAX_BYTES", "FetchOptions", "Fetched", "fetch_benchmark", "fetch_entry", "find_benchmark"]
