"""`biasaudit calibrate`: code the labelled control set of every coding layer with a
`calibration` section (runner/calibrate.py) and print each rater's accuracy and kappa."""

from __future__ import annotations

import argparse

from biasaudit.cli.common import OVERRIDES_HELP, checked_overrides, fail, with_overrides
from biasaudit.errors import BiasAuditError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    cb = sub.add_parser("calibrate", help="code a layer's labelled control set: accuracy and kappa (per judge for panels)",
                        description="Code the control set (responses with known labels) of every coding layer with "
                                    "a `calibration` section, and report the accuracy (Wilson 95% interval) and "
                                    "Cohen's kappa against the gold labels, with the confusion matrix: the layer's, and each "
                                    "judge's for a panel. A filled annotation sheet (`biasaudit annotate export`, "
                                    "labelled by people) is a control set too: calibration: {source: <sheet>.csv, "
                                    "text: answer, gold: label}; its blank labels are left out.",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=OVERRIDES_HELP)
    cb.add_argument("--layer", default=None, help="the coding layer (default: every layer with a `calibration` section)")
    cb.set_defaults(fn=cmd_calibrate)
    with_overrides(cb)
    return cb


def cmd_calibrate(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.calibrate import calibrate
    from biasaudit.spec.compose import compose

    try:
        composed = compose(checked_overrides(rest, "calibrate"))
        results = calibrate(composed, args.layer)
    except BiasAuditError as exc:
        return fail(exc)

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    failed = False
    for result in results:
        blank = f"; {result['unlabelled']} rows without a gold label left out" if result.get("unlabelled") else ""
        print(f"layer {result['layer']}: control set {result['control_set']} ({result['n']} labelled responses{blank})")
        print(f"{'rater':<18}{'accuracy':>10}  {'95% CI':<16}{'chance':>8}{'kappa':>8}  {'95% CI':<18}verdict")
        for r in result["raters"]:
            verdict = "better than chance" if r["better_than_chance"] else "NOT better than chance"
            print(f"{r['rater']:<18}{r['accuracy']:>10.3f}  [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
                  f"{num(r['chance']):>8}{num(r['kappa']):>8}  [{num(r['kappa_low'])}, {num(r['kappa_high'])}]"
                  f"{'':<2}{verdict}")
            conf = r.get("confusion") or {}
            if conf.get("matrix"):
                rows = "; ".join(f"{g}: {' '.join(str(x) for x in row)}" for g, row in zip(conf["labels"],
                                                                                       conf["matrix"], strict=True))
                print(f"{'':<18}confusion (rows: gold, columns: rater; order {'/'.join(conf['labels'])}): {rows}")
        if not result["passed"]:
            failed = True
            print(f"layer {result['layer']}: its coder is NOT better than chance (kappa's 95% lower bound <= 0); "
                  "runs that use it report the verdicts it feeds as INCONCLUSIVE")
    print("chance = accuracy of always giving the most common gold label; better than chance = kappa's 95% "
          "interval above 0 (bootstrap over the control rows). Stored in the cache for later runs.")
    del failed  # a finding, not an error: the exit code stays 0 (the flag is stored for runs)
    return 0


__all__ = ["add_parser", "cmd_calibrate"]
