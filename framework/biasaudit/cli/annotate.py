"""`biasaudit annotate export`: a sheet of a run's answers for people to label, read back
by a `human` coding layer (docs/coding-layers.md, "Human review")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from biasaudit.cli.common import whole_number

DESCRIPTION = """\
Write a seeded sample of a run's coded units for layer LAYER as an annotation sheet
(csv or jsonl, by the -o suffix): one row per unit with its unit_id, the prompt and the
answer, the allowed labels and a blank `label` column. The sheet is blind (no machine
codes, no rationales) unless --with-codes. Beside it, <sheet>.sample.json records what
was sampled (run, layer, labels, strata, seed, each unit's request and the hashes of the
answer and prompt shown): keep it with the sheet. Edit only `label` and `note`: a row whose
answer or prompt was rewritten is refused when the sheet is read back.

Fill the `label` column (blank = not annotated), then read the sheet back as a coding
layer and compare it with the machine layer:

  coding:
    human_stance: {coder: human, sheet: review/stance.csv}
  reliability:
    - pair: [human_stance, stance]

The report then gives each rater's accuracy, Cohen's kappa and confusion matrix against
the human labels, and every label's rate with a prediction-powered (PPI) interval beside
the judge-only one."""


def add_parser(sub: Any) -> None:
    an = sub.add_parser("annotate", help="human review: export a sheet of a run's answers to label by hand",
                        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    asub = an.add_subparsers(dest="annotate_command", metavar="action", required=True)
    ex = asub.add_parser("export", help="write a seeded, stratified sample of a layer's units as a sheet",
                         description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("run", help="a run folder written by `biasaudit run` (with codes.jsonl and responses.jsonl)")
    ex.add_argument("--layer", required=True, help="the coding layer whose units are sampled")
    ex.add_argument("--n", type=whole_number("--n", lo=1), default=100, help="units to sample (default: 100; all when the layer coded fewer)")
    ex.add_argument("--stratify", default=None, metavar="FIELD",
                    help="draw per stratum: `cell`, a factor or a stimulus field (e.g. group); each stratum gets "
                         "2 units or all it has, the rest in proportion to its size (default: one simple random "
                         "sample)")
    ex.add_argument("--seed", type=whole_number("--seed", lo=0), default=None, help="seed of the draw (default: the run's runtime.seed)")
    ex.add_argument("--with-codes", action="store_true",
                    help="add the layer's machine label and rationale (the review is then not blind)")
    ex.add_argument("-o", "--out", default=None, metavar="SHEET",
                    help="the sheet, .csv or .jsonl (default: RUN/review/<layer>.csv)")
    ex.add_argument("--force", action="store_true", help="replace an existing sheet and its sampling record")
    ex.set_defaults(fn=cmd_annotate)


def cmd_annotate(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.errors import BiasAuditError
    from biasaudit.runner.annotate import export_sheet

    if rest:
        raise BiasAuditError(f"unexpected arguments: {' '.join(rest)}", key="annotate export",
                             hint="see `biasaudit annotate export --help`")
    run = Path(args.run)
    out = Path(args.out) if args.out else run / "review" / f"{args.layer}.csv"
    done = export_sheet(run, args.layer, args.n, out, stratify=args.stratify, with_codes=args.with_codes,
                        seed=args.seed, force=args.force)
    strata = ", ".join(f"{h}: {done.sampled[h]} of {done.population[h]}" for h in done.population)
    print(f"wrote {done.sheet} ({done.rows} units; {strata})")
    print(f"wrote {done.record} (what was sampled: keep it beside the sheet)")
    print(f"fill the `label` column, then add a layer `{{coder: human, sheet: {done.sheet}}}` and a reliability "
          f"pair with {args.layer!r} to the spec")
    return 0


__all__ = ["add_parser", "cmd_annotate"]
