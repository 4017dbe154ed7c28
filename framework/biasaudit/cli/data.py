"""`biasaudit data list | verify | fetch`: the published data files, their provenance and
licences, their digests, and downloading the ones not shipped (docs/data.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit.cli.command import BAD_INPUT, bad_input, command_parser, unexpected_arguments
from biasaudit.cli.common import real_number, whole_number
from biasaudit.errors import BiasAuditError, printable

if TYPE_CHECKING:
    from biasaudit.data import StimulusSet
    from biasaudit.data.provenance import FileStatus, Provenance

DESCRIPTION = """The published benchmark files biasaudit ships (specs/data/<benchmark>/) and
any folder you give, each described by its folder's provenance.json: the benchmark, its
licence, the repository and commit it was published at, and each file's path there, size,
record count and SHA-256. A run checks a stimuli file that a provenance.json lists
against the recorded digest before reading it, and its report cites the data.

  biasaudit data list [FOLDER ...]     every benchmark, its files and licence, and whether
                                       each file is present with the recorded digest
  biasaudit data verify [FOLDER]       recompute every digest (exit code 1 on a mismatch
                                       or a shipped file missing)
  biasaudit data fetch BENCHMARK       download the files not shipped, keep them only if
                                       their digest matches (exit code 2 otherwise)"""

FETCH_DESCRIPTION = """Download the files of BENCHMARK that its provenance.json lists with a URL
and that are not in place yet, into the provenance folder (or --dest DIR, with a copy of
the provenance.json so runs check them there too). Each download is written to a
temporary file and moved into place only when its SHA-256 (or, where the provenance
records only the source repository's git blob id, that id) matches: a mismatch, a file
larger than its recorded size, an HTTP error or a refused redirect leaves nothing
written (exit code 2). Nothing is read from the environment (no proxy settings, no
.netrc); redirects are followed to the same host only, unless --allow-redirect-host
names another (https never goes to http)."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = command_parser(sub, "data", help="list, verify and fetch the published benchmark files",
                       description=DESCRIPTION,
                       epilog="examples:\n  biasaudit data list\n  biasaudit data verify specs/data/crows_pairs\n"
                              "  biasaudit data fetch winoqueer --dest ~/data/winoqueer")
    p.set_defaults(fn=cmd_data, data_parser=p)
    subs = p.add_subparsers(dest="data_command", metavar="subcommand")
    ls = subs.add_parser("list", help="benchmarks, files, licences, present / digest ok",
                         description="List every provenance.json under the shipped specs/data and the folders "
                                     "given: the benchmark, its licence and source, and each file with its record "
                                     "count and state (ok: present with the recorded digest; mismatch; absent; not "
                                     "fetched). Exit code 0; 2 on a malformed provenance.json.")
    ls.add_argument("folders", nargs="*", metavar="FOLDER", type=Path, help="more folders to search")
    ls.set_defaults(data_fn=_list)
    v = subs.add_parser("verify", help="recompute the digests (exit 1 on a mismatch)",
                        description="Recompute the SHA-256 of every file every provenance.json under FOLDER "
                                    "(default: the shipped specs/data) lists. Exit code 0 when each present file "
                                    "has its recorded digest, 1 on a mismatch or a shipped file missing (a file "
                                    "to fetch that is not there is not a failure), 2 on a malformed provenance.json.")
    v.add_argument("folder", nargs="?", metavar="FOLDER", type=Path, help="the folder to verify")
    v.set_defaults(data_fn=_verify)
    f = subs.add_parser("fetch", help="download a published file that is not shipped, checking its digest",
                        description=FETCH_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="example: biasaudit data fetch winoqueer --dest ~/data/winoqueer")
    f.add_argument("benchmark", metavar="BENCHMARK", help="the benchmark id (`biasaudit data list` shows them)")
    f.add_argument("--dest", metavar="DIR", type=Path,
                   help="the folder to write into (default: the benchmark's provenance folder)")
    f.add_argument("--url", metavar="URL", help="download from this address instead of the recorded one "
                                                "(one file: with --file when the benchmark has several)")
    f.add_argument("--file", metavar="PATH", help="fetch only this file (its path or source path)")
    f.add_argument("--allow-redirect-host", metavar="HOST", action="append", default=[],
                   help="a host a redirect may lead to (repeatable)")
    f.add_argument("--max-bytes", metavar="N", type=whole_number("--max-bytes", lo=1), default=None,
                   help="largest download when the provenance records no size (default 2 GiB)")
    f.add_argument("--timeout", metavar="SECONDS", type=real_number("--timeout", lo=0, lo_open=True), default=None,
                   help="seconds each network step may take (default 60)")
    f.add_argument("--force", action="store_true",
                   help="replace a file in place that has another digest (after the download verified)")
    f.set_defaults(data_fn=_fetch)


def cmd_data(args: argparse.Namespace, rest: list[str]) -> int:
    if (refused := unexpected_arguments("data", rest)) is not None:
        return refused
    if getattr(args, "data_fn", None) is None:
        args.data_parser.print_help()
        return BAD_INPUT
    try:
        return int(args.data_fn(args))
    except BiasAuditError as exc:
        return bad_input(exc)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _statuses(folders: list[Path]) -> list[tuple[Path, Provenance, list[FileStatus]]]:
    """Each provenance.json under the folders, with the state of each of its files."""
    from biasaudit.data.provenance import file_status, find_provenance_files, read_provenance

    out: list[tuple[Path, Provenance, list[FileStatus]]] = []
    for pj in find_provenance_files(folders):
        prov = read_provenance(pj)
        out.append((pj, prov, [file_status(pj.parent, e) for e in prov.entries()]))
    return out


def _check_folders(folders: list[Path]) -> None:
    from biasaudit.errors import DataError

    for f in folders:
        if not f.is_dir():
            raise DataError("not a folder", file=str(f), key="FOLDER", hint="give a folder holding provenance.json files")


def _list(args: argparse.Namespace) -> int:
    from biasaudit.data.provenance import data_folders

    _check_folders(args.folders)
    found = _statuses(data_folders(args.folders))
    if not found:
        print("no provenance.json found")
        return 0
    for pj, prov, statuses in found:
        title = f" ({prov.title})" if prov.title else ""
        print(printable(f"{prov.benchmark}{title}: {prov.licence}, {prov.source_repo}@{prov.commit[:7]}, "
                        f"{_rel(pj)}"))
        for st in statuses:
            rec = f"{st.entry.records} records" if st.entry.records is not None else "? records"
            state = {"ok": f"present, {st.entry.digest_kind} ok", "mismatch": "present, DIGEST MISMATCH",
                     "absent": "ABSENT", "unchecked": "present, no digest recorded",
                     "not fetched": f"not fetched (biasaudit data fetch {prov.benchmark})"}[st.state]
            name = st.entry.path or f"(published at {st.entry.url or 'an address not recorded'}; no file named)"
            print(printable(f"  {name}: {rec}, {state}"))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from biasaudit.data.provenance import data_folders

    if args.folder is not None:
        _check_folders([args.folder])
    folders = [args.folder.resolve()] if args.folder is not None else data_folders([])
    found = _statuses(folders)
    problems = 0
    counts = {"ok": 0, "not fetched": 0, "unchecked": 0}
    for _, prov, statuses in found:
        for st in statuses:
            name = printable(f"{prov.benchmark}/{st.entry.path or st.entry.url or '?'}")
            if st.state == "mismatch":
                assert st.digest is not None
                problems += 1
                print(f"FAILED: {name}: {st.entry.digest_kind} {st.entry.found(st.digest)[:12]}... is not the "
                      f"recorded {(st.entry.expected() or '')[:12]}...")
            elif st.state == "absent":
                problems += 1
                print(f"FAILED: {name}: missing")
            else:
                counts[st.state] += 1
                print(f"{st.state}: {name}")
    where = ", ".join(_rel(f) for f in folders)
    if problems:
        print(f"verify: {where}: {problems} problem(s)", file=sys.stderr)
        return 1
    print(f"verified: {where}: {counts['ok']} file(s) ok, {counts['not fetched']} not fetched, "
          f"{counts['unchecked']} without a recorded digest")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from biasaudit.data.fetch import (
        DEFAULT_MAX_BYTES,
        DEFAULT_TIMEOUT,
        FetchOptions,
        fetch_benchmark,
    )
    from biasaudit.errors import DataError

    if args.max_bytes is not None and args.max_bytes < 1:
        raise DataError("must be 1 or more", key="--max-bytes")
    if args.timeout is not None and not args.timeout > 0:
        raise DataError("must be more than 0", key="--timeout")
    opts = FetchOptions(allow_hosts=frozenset(h.lower() for h in args.allow_redirect_host),
                        max_bytes=args.max_bytes or DEFAULT_MAX_BYTES, timeout=args.timeout or DEFAULT_TIMEOUT,
                        force=args.force)
    got = fetch_benchmark(args.benchmark, dest=args.dest, url=args.url, only=args.file, opts=opts,
                         say=lambda line: print(printable(line)))
    if not got:
        print(f"nothing to fetch for {printable(args.benchmark)}")
    return 0


def validate_line(stimuli: StimulusSet) -> str | None:
    """`biasaudit validate`'s line on a stimuli file a provenance.json lists: the benchmark,
    the records read, the digest check and whether a sample is drawn; None for other data."""
    from biasaudit.report.sections import sample_text

    p = stimuli.provenance
    if p is None:
        return None
    title = f" ({p.title})" if p.title and p.title != p.benchmark else ""
    said = f" (its provenance says {p.records})" if p.records is not None and p.records != stimuli.n_total else ""
    checked = {"sha256": "SHA-256 matches its provenance", "git_blob_sha1": "git blob id matches its provenance",
               }.get(p.checked, "no digest recorded to check")
    sm = stimuli.sample
    if sm is not None:
        from biasaudit.records.summary import DataInfo

        text = sample_text(DataInfo(rows=stimuli.n_total, sample=sm))
        sample = f"sample drawn: {text}" if sm.drawn else f"no sample drawn: {text}"
    else:
        n = stimuli.selected if stimuli.selected is not None else stimuli.n_total
        sample = f"no sample drawn: all {n} stimuli are used"
    return printable(f"data: {p.benchmark}{title}, {stimuli.n_total} records{said}, {checked}; {sample}")


__all__ = ["add_parser", "cmd_data", "validate_line"]
