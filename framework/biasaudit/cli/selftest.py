"""`biasaudit selftest`: run a spec against oracle responders built from its own data
(runner/selftest.py) and print oracle x threshold: expected verdict, verdict, ok."""

from __future__ import annotations

import argparse

from biasaudit.cli.common import OVERRIDES_HELP, checked_overrides, fail
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    st = sub.add_parser("selftest", help="check that a spec detects a planted bias and stays quiet on a null one",
                        description="Run the spec against oracle responders built from its own data, with no model: "
                                    "planted bias (always the stereotyped side), null (each side for half of the "
                                    "stimuli), refuse-all and all-ties. Prints oracle x threshold: expected verdict, "
                                    "verdict, ok. Exit code 0 when every row is as expected and the planted bias "
                                    "is detected, 1 when not, 2 on bad input. Besides these, content oracles plant the "
                                    "bias by the data's own records (which sentence stereotypes), not by the spec's "
                                    "slot names, so swapped slots fail (docs/validity.md).",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=OVERRIDES_HELP)
    st.add_argument("--label-words", action="store_true",
                    help="also send a handful of unambiguous cases (entailed and contradicted pairs) to the spec's "
                         "real model through its NLI label words, and check the mapped labels come out right "
                         "(8 model calls; loads the model)")
    st.set_defaults(fn=cmd_selftest)
    return st


def cmd_selftest(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.selftest import lines, selftests

    try:
        results = selftests(checked_overrides(rest, "selftest"), label_words=bool(getattr(args, "label_words", False)))
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
