"""`biasaudit compare`: finished runs side by side (comparison/ computes, report/ renders
compare/compare.html)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from biasaudit.cli.common import fail, whole_number
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    cp = sub.add_parser("compare", help="compare runs: side-by-side estimates, TP vs NLI fits, R² heatmap, MI ranking",
                        description="Compare finished runs (a sweep folder, a suite folder or run folders): "
                                    "headline estimates side by side, differences with intervals, the "
                                    "TP-versus-NLI analysis and sweep stability. Writes compare/compare.html.")
    cp.add_argument("paths", nargs="+", help="sweep folders or run folders")
    cp.add_argument("--out", default=None, help="output folder (default: <first path>/compare)")
    cp.add_argument("--max-paired-runs", type=whole_number("--max-paired-runs", lo=0), default=50, metavar="N",
                    help="paired tests compare every pair of runs of a metric (N runs: N(N-1)/2 tests); a metric "
                         "with more runs gets its ranking but no paired tests, and the report says so (0: none; default: 50)")
    cp.set_defaults(fn=cmd_compare)
    return cp


def cmd_compare(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit._util.fileio import check_output_dir
    from biasaudit.comparison.runs import compare
    from biasaudit.report import render_compare
    from biasaudit.runner.pipeline import _write

    paths = [Path(p) for p in [*args.paths, *rest]]
    out = Path(args.out) if args.out else (paths[0] if paths[0].is_dir() else paths[0].parent) / "compare"
    notes: list[str] = []
    try:  # the output folder before any work (a file, a device or a read-only place is one line)
        check_output_dir(out, key="--out" if args.out else "compare", what="compare output folder")
        result = compare(paths, notes, max_paired_runs=args.max_paired_runs)
    except BiasAuditError as exc:
        return fail(exc)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    render_compare(out, result, write=_write)
    from biasaudit.comparison.paired import lines

    for line in lines(result):
        print(line)
    extra = "".join(f"; {a.title}" for a in result.analyses.values())
    print(f"compared {len(result.runs)} runs{extra}")
    print(f"report: {out / 'compare.html'}")
    return 0


__all__ = ["add_parser", "cmd_compare"]
