"""`biasaudit report RUN_DIR`: a finished run's reports rebuilt from its manifest.json and
the cache (measured, judged and rendered again, no model call)."""

from __future__ import annotations

import argparse
from pathlib import Path

from biasaudit.cli.command import unexpected_arguments
from biasaudit.cli.common import fail
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    rp = sub.add_parser("report", help="re-render a run's report from the store (no model calls)",
                        description="Rebuild a finished run's reports from its manifest.json and the cache: "
                                    "measures, judges and renders again, with no model call.")
    rp.add_argument("run_dir", help="a run folder, e.g. reports/crows-pairs-tp/20261122-101500-000000")
    rp.set_defaults(fn=cmd_report)
    return rp


def cmd_report(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.pipeline import rerender

    if (refused := unexpected_arguments(args.command, rest)) is not None:
        return refused
    try:
        summary = rerender(Path(args.run_dir))
    except BiasAuditError as exc:
        return fail(exc)
    print(f"{summary.audit.name}: overall {summary.overall} (re-rendered from the store, 0 model calls)")
    print(f"report: {Path(args.run_dir) / 'report.html'}")
    return 0


__all__ = ["add_parser", "cmd_report"]
