"""`biasaudit selftest`: run a spec against oracle responders built from its own data
(runner/selftest.py) and print oracle x threshold: expected verdict, verdict, ok."""

from __future__ import annotations

import argparse

from biasaudit.cli.common import OVERRIDES_HELP, fail, positional_spec
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    st = sub.add_parser("selftest", help="check that a spec detects a planted bias and stays quiet on a null one",
                        description="Run the spec against oracle responders built from its own data, with no model: "
                                    "planted bias (always the stereotyped side), null (each side for half of the "
                                    "stimuli), refuse-all and all-ties. Prints oracle x threshold: expected verdict, "
                                    "verdict, ok. Exit code 0 when every row is as expected and the planted bias "
                                    "is detected, 1 when not, 2 on bad input.",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=OVERRIDES_HELP)
    st.set_defaults(fn=cmd_selftest)
    return st


def cmd_selftest(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.selftest import lines, selftests

    try:
        results = selftests(positional_spec(rest, "selftest"))
    except BiasAuditError as exc:
        return fail(exc)
    failed = 0
    for name, res in results:
        print(f"self-test of {name + ': ' if name else ''}{res.spec} (oracle responders, no model)")
        for line in lines(res):
            print("  " + line)
        verdict = "PASSED" if res.passed else "FAILED"
        print(f"  self-test {verdict}: planted bias {'detected' if res.detected else 'NOT detected'}, "
              f"{sum(r.ok for r in res.rows)}/{len(res.rows)} rows as expected")
        failed += not res.passed
    return 1 if failed else 0


__all__ = ["add_parser", "cmd_selftest"]
