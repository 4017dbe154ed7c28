"""`biasaudit view RUN_DIR`: write the viewer page of a run or suite folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biasaudit.cli.common import whole_number

MAX_ROWS = 5000
"""`report.viewer.load.MAX_ROWS`, here so that `--help` loads no report code (a test keeps them equal)."""

DESCRIPTION = (
    "Write a self-contained HTML page (RUN_DIR/viewer.html) that shows every response of a run, or of each "
    "run of a suite folder: its prompt, stimulus fields, condition (cell) and group, every coding layer's "
    "code and evidence (each judge's vote, the matched text, the reason), with filters by run, metric, cell, "
    "group, label and verdict, a sort by item difference, and each estimate linked to the responses behind it. "
    "A file rather than a local server: nothing to bind or leave running, it opens offline and travels in an "
    "evidence pack. It reads the run folder only (no model call, no cache). Model and stimulus text is shown "
    "as text, never as markup; the page makes no network request (a strict Content-Security-Policy). "
    "Given two or more run folders (RUN_A RUN_B ...), or a folder holding several runs, it writes a compare page "
    "instead (default: compare.html in the folder given, or in the runs' nearest common folder): the runs side by "
    "side per stimulus, answers, codes and item differences next to each other, stimuli that differ most first."
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    vw = sub.add_parser("view", help="write a browsable page of a run's responses, codes and estimates",
                        description=DESCRIPTION)
    vw.add_argument("run_dir", nargs="+", help="a run folder (reports/<audit>/<run>) or a suite folder; or two or "
                    "more run folders, or a folder of runs, to compare")
    vw.add_argument("--out", default=None, metavar="FILE", help="where to write the page (default: RUN_DIR/viewer.html)")
    vw.add_argument("--max-rows", type=whole_number("--max-rows", lo=1), default=MAX_ROWS, metavar="N",
                    help=f"responses embedded at most, shared between a suite's runs (default: {MAX_ROWS}); "
                         "when comparing, each run is read as far as N and the page holds N in all, whole "
                         "stimuli, those that differ most first; the page says how many it leaves out")
    vw.add_argument("--force", action="store_true",
                    help="replace a file at the output path that biasaudit did not write, or a symlink there "
                         "(the link itself, never its target)")
    vw.add_argument("--open", action="store_true", help="open the page in the default browser")
    vw.set_defaults(fn=cmd_view)
    assert isinstance(vw, argparse.ArgumentParser)
    return vw


def _folder_of_runs(folder: Path) -> bool:
    """A folder with no summary.json of its own but run folders below it (a sweep, the
    runs of one audit): compared rather than viewed."""
    if not folder.is_dir() or (folder / "summary.json").exists():
        return False
    return any(True for _ in folder.glob("*/summary.json")) or any(True for _ in folder.glob("*/*/summary.json"))


def cmd_view(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.cli.command import bad_input, unexpected_arguments
    from biasaudit.errors import BiasAuditError
    from biasaudit.report.viewer import write_viewer

    if (refused := unexpected_arguments("view", rest)) is not None:
        return refused
    folders = [Path(p) for p in args.run_dir]
    if len(folders) > 1 or _folder_of_runs(folders[0]):
        from biasaudit.cli.view_compare import cmd_compare_view

        return cmd_compare_view(args, folders)
    try:
        path, data = write_viewer(folders[0], Path(args.out) if args.out else None, max_rows=args.max_rows,
                                  force=args.force)
    except BiasAuditError as exc:
        return bad_input(exc)
    shown = sum(r.shown for r in data.runs)
    total = sum(r.responses for r in data.runs)
    from biasaudit._util.fileio import STD_STREAMS

    out = sys.stderr if STD_STREAMS.get(str(path)) == 1 else sys.stdout  # the page itself went to stdout
    print(f"{data.title}: {len(data.runs)} run(s), {shown} of {total} responses, {len(data.estimates)} estimates",
          file=out)
    for note in data.notices:
        print(f"note: {note}", file=sys.stderr)
    print(f"viewer: {path}", file=out)
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0
