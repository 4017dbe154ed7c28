"""`biasaudit merge-cache INTO SOURCES...`: the per-job cache files of a cluster sweep
merged into one cache (a stored answer is never replaced by a failure)."""

from __future__ import annotations

import argparse
from pathlib import Path

from biasaudit.cli.command import unexpected_arguments
from biasaudit.cli.common import fail
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    mc = sub.add_parser("merge-cache", help="merge per-job cache files into one (cluster sweeps without a shared cache)",
                        description="Copy the responses and throughput records of per-job cache files into one "
                                    "cache; a stored answer is never replaced by a failure.")
    mc.add_argument("into", help="the cache to merge into (created if missing)")
    mc.add_argument("sources", nargs="+", help="cache files to merge from; kept unchanged")
    mc.set_defaults(fn=cmd_merge_cache)
    return mc


def cmd_merge_cache(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.sweep_caches import merge_sources
    from biasaudit.store import Store

    if (refused := unexpected_arguments(args.command, rest)) is not None:
        return refused
    try:
        into = Path(args.into)
        # every source checked before the target is created or touched
        sources = merge_sources(into, [Path(p) for p in args.sources])
        for src in sources:
            Store(src, readonly=True).close()
        store = Store(into)
    except BiasAuditError as exc:
        return fail(exc)
    try:
        for src in sources:
            added = store.merge_from(src)
            print(f"{src}: {added} new responses")
        print(f"{args.into}: {store.count()} responses")
    except BiasAuditError as exc:
        return fail(exc)
    finally:
        store.close()
    return 0


__all__ = ["add_parser", "cmd_merge_cache"]
