"""The `biasaudit` command line: the parser and the dispatch to the commands, one module
each (cli/run.py, validate.py, selftest.py, plan.py, report.py, compare.py, calibrate.py,
merge_cache.py, schema.py, catalog.py for `list`, init.py, annotate.py, view.py, pack.py,
verify.py, data.py); what they share is in cli/common.py."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

from biasaudit._util.envdefaults import apply as apply_env_defaults
from biasaudit.cli.common import (
    EXIT_INTERNAL,
    OptionError,
    fail,
    log_traceback,
    print_traceback,
    set_verbose,
)
from biasaudit.cli.run import junit_after_error
from biasaudit.errors import USER_ERRORS, BiasAuditError, user_error

apply_env_defaults()


def build_parser() -> argparse.ArgumentParser:
    from biasaudit._version import __version__
    from biasaudit.cli.annotate import add_parser as add_annotate
    from biasaudit.cli.calibrate import add_parser as add_calibrate
    from biasaudit.cli.catalog import add_parser as add_catalog
    from biasaudit.cli.compare import add_parser as add_compare
    from biasaudit.cli.data import add_parser as add_data
    from biasaudit.cli.init import add_parser as add_init
    from biasaudit.cli.merge_cache import add_parser as add_merge_cache
    from biasaudit.cli.pack import add_parser as add_pack
    from biasaudit.cli.plan import add_parser as add_plan
    from biasaudit.cli.report import add_parser as add_report
    from biasaudit.cli.run import add_parser as add_run
    from biasaudit.cli.schema import add_parser as add_schema
    from biasaudit.cli.selftest import add_parser as add_selftest
    from biasaudit.cli.validate import add_parser as add_validate
    from biasaudit.cli.verify import add_parser as add_verify
    from biasaudit.cli.view import add_parser as add_view

    p = argparse.ArgumentParser(
        prog="biasaudit",
        description="Audit language models for social bias with declarative YAML specs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `biasaudit <command> --help` for a command's options. Exit codes: 0 all thresholds "
               "PASS, 1 any FAIL, 3 INCONCLUSIVE only, 4 could not measure (more than "
               "validity.max_failed_share of the model requests failed), 2 user error, 130 interrupted.",
    )
    p.add_argument("--version", action="version", version=f"biasaudit {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    sub = p.add_subparsers(dest="command", metavar="command")
    # the order of `biasaudit --help`
    # the commands in the order `biasaudit --help` lists them
    adders: tuple[Callable[[Any], object], ...] = (
        add_run, add_validate, add_selftest, add_plan, add_report, add_compare, add_calibrate, add_merge_cache,
        add_schema, add_catalog, add_init, add_annotate, add_view, add_pack, add_verify, add_data)
    for add in adders:
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    nul = next((a for a in argv if "\x00" in a), None)
    if nul is not None:  # only main(argv) can pass one (a shell cannot); a path holding it raised mid-command
        return fail(BiasAuditError("an argument holds a NUL character", key=ascii(nul)[:80],
                                   hint="remove the NUL (\\x00) from the argument"))
    parser = build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
    except OptionError as exc:  # a numeric option out of range (cli/common.py): one line, not the usage block
        return fail(exc)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    set_verbose(bool(args.verbose))
    if args.command is None:
        parser.print_help()
        return 0
    unknown_flags = [a for a in rest if a.startswith("-")]
    if unknown_flags:
        msg = f"unrecognized arguments: {' '.join(unknown_flags)}"
        junit_after_error(args, f"error: {msg} (hint: see `biasaudit {args.command} --help`)")
        parser.error(msg)
    from biasaudit._util.secrets import guard_logging

    guard_logging()
    if args.command in ("run", "report"):
        from biasaudit._util.progress import show

        show()  # stage messages on stderr
    from biasaudit._util.paths import spec_lookup_scope

    try:
        with spec_lookup_scope():  # specs given as paths are this command's only
            return int(args.fn(args, rest))
    except KeyboardInterrupt:  # outside a run (a run says how to resume itself)
        print("interrupted", file=sys.stderr)
        return 130
    except (BiasAuditError, *USER_ERRORS) as exc:
        log_traceback(exc)
        err = user_error(exc)
        assert err is not None
        code = fail(err)
        junit_after_error(args, err.one_line())
        return code
    except Exception as exc:
        import sqlite3

        if isinstance(exc, sqlite3.Error):
            log_traceback(exc)
            return fail(user_error(exc))  # type: ignore[arg-type]
        # a bug in biasaudit: the traceback says where, and the exit code sets it apart
        # from verdicts (0, 1, 3), runs that could not measure (4), user errors (2) and interrupts (130)
        print_traceback(exc)
        print("error: internal error in biasaudit (a bug: the traceback above says where; please report it)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
