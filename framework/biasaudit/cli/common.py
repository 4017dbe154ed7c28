"""What every command shares: printing a user error (exit code 2), a scrubbed traceback,
the exit code of a bug, the `-v` switch, the spec file given without `spec=`, and the
overrides help of the commands that compose a spec."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit.errors import BiasAuditError, SpecError

if TYPE_CHECKING:
    from biasaudit.spec.override_gate import GatedOverrides

EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h)

OVERRIDES_HELP = """overrides are Hydra's: `key=value` for any config key, `group=option` to pick a
config group option. A spec file may also be given without `spec=` (`audit.yaml` is
`spec=audit.yaml`). Examples:
  path/to/audit.yaml                   a spec (or suite) file, the same as spec=path/to/audit.yaml
  spec=crows_pairs_tp                  a shipped spec (specs/<name>.yaml) or a path to a spec file
  model=smollm2                        the model under test (conf/model/)
  stimuli.source=/data/crows.csv       any spec key
  runtime.batch_size=16                run-time settings (conf/runtime/)
  runtime.sequential.look_every=50     look at the thresholds every 50 stimuli and stop once all are
                                       decided (alpha-spending; docs/statistics.md#sequential-stopping)
"""


def error_lines(exc: BiasAuditError) -> list[str]:
    return exc.lines() if hasattr(exc, "lines") else [exc.one_line()]


def fail(exc: BiasAuditError) -> int:
    """A user error: its line(s) on stderr, exit code 2."""
    from biasaudit._util.secrets import redact

    for line in error_lines(exc):
        print(redact(line), file=sys.stderr)  # a server's text in an error may echo the API key
    return 2


def print_traceback(exc: BaseException) -> None:
    """A traceback on stderr, scrubbed of the API keys (an exception's text may hold a
    server's answer)."""
    import traceback

    from biasaudit._util.secrets import redact

    print(redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)


_VERBOSE = {"on": False}


def set_verbose(on: bool) -> None:
    """`biasaudit -v`: one-line errors also show where they came from."""
    _VERBOSE["on"] = on


def log_traceback(exc: BaseException) -> None:
    """With -v, where a one-line error came from (to tell a bug from bad input)."""
    if _VERBOSE["on"]:
        print_traceback(exc)


def positional_spec(rest: list[str], command: str) -> list[str]:
    """`biasaudit validate path/to/spec.yaml`: a spec (or suite) file given without `spec=`
    becomes `spec=path/to/spec.yaml`. Any other argument that is not an override (no `=`,
    not a `~key` deletion) is a one-line error."""
    from biasaudit.spec.suite import spec_override

    loose = [a for a in rest if "=" not in a and not a.startswith("~")]
    if not loose:
        return rest
    hint = (f"give an existing spec file (biasaudit {command} path/to/spec.yaml), a shipped spec by name "
            f"(spec=crows_pairs_tp) or key=value overrides; see `biasaudit {command} --help`")
    for a in loose:
        path = Path(a).expanduser()
        if not path.is_file():
            what = "a folder, not a spec file" if path.is_dir() else "neither a spec file nor an override (key=value)"
            raise SpecError(f"{a!r} is {what}", hint=hint)
    if len(loose) > 1:
        raise SpecError(f"{len(loose)} spec files given ({', '.join(loose)}); a command takes one",
                        hint="run them one by one, or sweep them with -m spec=a.yaml,b.yaml")
    if spec_override(rest) is not None:
        raise SpecError(f"a spec file ({loose[0]}) and spec={spec_override(rest)} both given", key="spec",
                        hint="give the spec once")
    return [f"spec={a}" if a == loose[0] else a for a in rest]


def gated_overrides(rest: list[str], command: str) -> GatedOverrides:
    """A command's overrides (a spec file given without `spec=` taken as one) through the
    one override gate (spec/override_gate.py), before anything else reads them: a refused
    override is one line and exit code 2, and nothing is composed, run or written."""
    from biasaudit.spec.override_gate import gate

    return gate(positional_spec(rest, command))


def checked_overrides(rest: list[str], command: str) -> list[str]:
    """`gated_overrides`, as the user gave them (spec files by path)."""
    return list(gated_overrides(rest, command).typed)


class OptionError(BiasAuditError):
    """A numeric option's value out of its range. Raised from an argparse `type` function,
    which argparse does not catch (it catches ValueError and turns it into its usage block),
    so `main` prints it as one line with exit code 2."""


def _bounds(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    low = None if lo is None else (f"more than {lo:g}" if lo_open else f"{lo:g} or more")
    high = None if hi is None else (f"less than {hi:g}" if hi_open else f"{hi:g} or less")
    return " and ".join(p for p in (low, high) if p) or "a number"


def _out_of_range(option: str, text: str, rng: str, kind: str, not_kind: bool) -> OptionError:
    got = f"got {text[:40]!r}" + (f", not {kind}" if not_kind else "")
    return OptionError(f"{option} must be {rng} ({got})", hint=f"give {option} {kind}, {rng}")


def whole_number(option: str, *, lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse `type` for a whole-number option in [lo, hi]: a bad value is one line
    naming the option, the value and the range (`--n must be 1 or more (got '0')`)."""
    rng = _bounds(lo, hi, False, False)

    def parse(text: str) -> int:
        try:
            n = int(text.strip())
        except ValueError:
            raise _out_of_range(option, text, rng, "a whole number", True) from None
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise _out_of_range(option, text, rng, "a whole number", False)
        return n

    return parse


def real_number(option: str, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                hi_open: bool = False) -> Callable[[str], float]:
    """An argparse `type` for a finite number in the range (open or closed at each end);
    nan and inf are refused."""
    rng = _bounds(lo, hi, lo_open, hi_open)

    def parse(text: str) -> float:
        import math

        try:
            x = float(text.strip())
        except ValueError:
            x = math.nan
        if not math.isfinite(x):
            raise _out_of_range(option, text, rng, "a finite number", True)
        if (lo is not None and (x < lo or (lo_open and x == lo))) or (
                hi is not None and (x > hi or (hi_open and x == hi))):
            raise _out_of_range(option, text, rng, "a finite number", False)
        return x

    return parse


def with_overrides(sp: argparse.ArgumentParser) -> None:
    """Show `[overrides...]` in the usage line: they are not argparse arguments (Hydra
    parses them), so argparse would leave them out."""
    usage = sp.format_usage().removeprefix("usage: ").strip()
    sp.usage = " ".join(usage.split()) + " [SPEC_FILE] [overrides...]"


__all__ = ["EXIT_INTERNAL", "OVERRIDES_HELP", "OptionError", "checked_overrides", "error_lines", "fail", "gated_overrides",
           "log_traceback", "positional_spec", "real_number", "whole_number",
           "print_traceback", "set_verbose", "with_overrides"]
