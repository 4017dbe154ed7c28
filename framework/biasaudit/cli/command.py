"""What the subcommand modules (`pack`, `verify`, `view`, `init`) share: the parser of a
command with a long description, and the two refusals every command makes (arguments it
does not take, bad input) with the exit code 2 they end in.

Kept apart from `cli/app.py` so that a command module's `--help` loads no more than this."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from biasaudit.errors import BiasAuditError

BAD_INPUT = 2
"""The exit code of a refused command line or input (nothing written)."""


def command_parser(sub: Any, name: str, *, help: str, description: str, epilog: str | None = None
                   ) -> argparse.ArgumentParser:
    """The parser of `biasaudit NAME`, its description and epilog printed as written
    (their line breaks and example blocks kept)."""
    p = sub.add_parser(name, help=help, description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    assert isinstance(p, argparse.ArgumentParser)
    return p


def unexpected_arguments(command: str, rest: list[str]) -> int | None:
    """BAD_INPUT, with one line on stderr, when `rest` holds arguments the command does not
    take (the main parser hands every command what it did not parse); None when it is empty."""
    if not rest:
        return None
    print(f"error: unexpected arguments {rest} (hint: see `biasaudit {command} --help`)", file=sys.stderr)
    return BAD_INPUT


def bad_input(exc: BiasAuditError, *, redacted: bool = False) -> int:
    """BAD_INPUT, with the error's one line on stderr; `redacted`: with the secrets this
    process knows of masked (a command that reads API keys or a signing key)."""
    line = exc.one_line()
    if redacted:
        from biasaudit._util.secrets import redact

        line = redact(line)
    print(line, file=sys.stderr)
    return BAD_INPUT


__all__ = ["BAD_INPUT", "bad_input", "command_parser", "unexpected_arguments"]
