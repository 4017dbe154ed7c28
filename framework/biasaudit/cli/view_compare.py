"""`biasaudit view RUN_A RUN_B [...]` (or a folder of runs): the compare page
(`report.viewer.compare` says how stimuli are matched and what "differs most" is)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def cmd_compare_view(args: argparse.Namespace, folders: list[Path]) -> int:
    from biasaudit._util.fileio import STD_STREAMS
    from biasaudit.cli.command import bad_input
    from biasaudit.comparison.runs import collect
    from biasaudit.errors import BiasAuditError
    from biasaudit.report.viewer.compare_page import COMPARE_FILE, write_compare

    notes: list[str] = []
    try:
        for f in folders:  # `collect` skips what it cannot list; a mistyped path is an error here
            if not f.exists():
                raise BiasAuditError("no such folder", file=str(f), hint="give run folders written by `biasaudit run`")
        runs = [d for d, _ in collect(folders, notes)]  # run folders under a sweep / suite folder, each once
        if len(folders) == 1:
            base = folders[0]
        else:
            base = Path(os.path.commonpath([str(d.resolve()) for d in runs])) if runs else folders[0]
        out = Path(args.out) if args.out else base / COMPARE_FILE
        path, data = write_compare(runs, out, max_rows=args.max_rows, force=args.force, explicit=bool(args.out),
                                   base=base)
    except BiasAuditError as exc:
        return bad_input(exc)
    m = data.matching
    shown = sum(len(u.answers) for e in data.entries for u in e.units)
    stream = sys.stderr if STD_STREAMS.get(str(path)) == 1 else sys.stdout  # the page itself went to stdout
    print(f"{data.title}: compare of {len(data.runs)} runs ({', '.join(f'{r.letter} {r.label}' for r in data.runs)}); "
          f"{m.stimuli} stimuli: {m.in_all} in every run, {m.in_some} in some, {m.unmatched} unmatched"
          f"{f', {m.conflicts} id(s) with different content' if m.conflicts else ''}; "
          f"{len(data.entries)} stimuli ({shown} responses) on the page", file=stream)
    for note in [*notes, *data.notices]:
        print(f"note: {note}", file=sys.stderr)
    print(f"compare: {path}", file=stream)
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0


__all__ = ["cmd_compare_view"]
