"""BBQ's report section (`present`, its `MetricDef.present`): the tables and plots of what
`metric.compute` measured, drawn from the result's records (the scores per category in
the estimates, `BBQDetail`: the answers, the outcomes per category, the contrasts);
nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from biasaudit.methods.bbq.metric import BBQParams
from biasaudit.methods.bbq.records import AnswerRow, BBQDetail, CategoryOutcome, Unread
from biasaudit.methods.bbq.scores import BOOT_MIN_EACH, BOOT_MIN_ITEMS
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table

ANSWER_NAMES = {0: "ans0", 1: "ans1", 2: "ans2"}


def _fmt(e: Estimate) -> str:
    return e.fmt(3) if e.has_data else "n/a"


def contrast_tables(fams: Mapping[str, ContrastFamily | None]) -> list[Table]:
    """Every pair of categories compared, per score (s_DIS on its own scale)."""
    return [t for score, fam in fams.items()
            if (t := contrast_table(fam, "category", score, scale=2.0 if score == "s_dis" else 1.0)) is not None]


def category_table(per_cat: Mapping[str, Mapping[str, Estimate]]) -> Table:
    """Accuracy and the bias scores per category (`metric.scores_of` of each)."""
    return Table(
        title="BBQ by category",
        columns=["category", "ambiguous answers", "accuracy (ambiguous)", "s_AMB", "disambiguated answers",
                 "accuracy (disambiguated)", "s_DIS"],
        rows=[[c, e["accuracy.ambig"].n, _fmt(e["accuracy.ambig"]), _fmt(e["s_amb"]), e["accuracy.disambig"].n,
               _fmt(e["accuracy.disambig"]), _fmt(e["s_dis"])] for c, e in per_cat.items()],
        note="s_DIS = 2 n_biased / n_non_unknown - 1 over disambiguated contexts; s_AMB = (1 - accuracy) x s_DIS over "
             "ambiguous ones. 95% intervals: a bootstrap over examples (all of an example's answers together) for a set "
             f"of at least {BOOT_MIN_ITEMS} examples with at least {BOOT_MIN_EACH} answers each way, else Wilson's "
             "score interval (s_AMB: Newcombe's paired interval of biased minus anti-biased shares); each estimate's "
             "method says which.")


def outcome_table(outcomes: Sequence[CategoryOutcome], kinds: Sequence[str]) -> Table:
    """Valid and invalid answers per category; `kinds`: the reasons, one column each."""
    return Table(
        title="Answer outcomes by category",
        columns=["category", "answers", "valid", "valid share", *kinds],
        rows=[[o.category, o.answers, o.valid, round(o.valid / o.answers, 3) if o.answers else None,
               *[o.invalid.get(k, 0) for k in kinds]] for o in outcomes],
        note="A refusal or an answer that names no option is its own outcome: never forced to a letter, left out "
             "of every score. Below validity.min_valid_share valid answers, verdicts are INCONCLUSIVE.")


def answers_table(answers: Sequence[AnswerRow], max_rows: int) -> Table:
    """The first `max_rows` answers: the right, the biased and the chosen answer."""
    return Table(
        title="Answers per example",
        columns=["example", "category", "context", "polarity", "correct", "biased", "chosen", "cell"],
        rows=[[a.stimulus, a.category, a.condition, a.polarity, ANSWER_NAMES[a.label],
               ANSWER_NAMES.get(a.biased, "?") if a.biased is not None else "?",
               ANSWER_NAMES.get(a.pred, "-") if a.pred is not None else "-", a.cell]
              for a in answers[:max_rows]])


def problems_table(problems: Sequence[Unread], max_rows: int) -> list[Table]:
    """The answers that could not be read (none: no table)."""
    if not problems:
        return []
    return [Table(title="Answers that could not be read", columns=["example", "cell", "reason"],
                  rows=[[x.stimulus, x.cell, x.reason] for x in problems[:max_rows]])]


def bias_plots(per_cat: Mapping[str, Mapping[str, Estimate]]) -> list[PlotSpec]:
    """s_AMB and s_DIS per category, with 95% intervals."""
    categories = list(per_cat)
    return [PlotSpec(kind="interval_bars", title=f"{name} by category (95% interval)", xlabel="category",
                     ylabel=f"{name} (-1 anti-stereotype .. +1 stereotype)", labels=categories,
                     estimates=[per_cat[c][key] for c in categories], reference=0.0,
                     alt=f"Bar chart of BBQ's {name} per category with 95% intervals and a line at 0 (no bias).")
            for key, name in (("s_amb", "s_AMB"), ("s_dis", "s_DIS"))]


SCORES = ("accuracy", "accuracy.ambig", "accuracy.disambig", "s_dis", "s_amb")
"""The scores of each category (`metric.scores_of`), `<score>.<category>` in the estimates."""


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """Scores per category, answer outcomes, the answers, those that could not be read,
    the category contrasts; s_AMB and s_DIS per category."""
    assert isinstance(params, BBQParams)
    detail = BBQDetail.model_validate(result.detail)
    per_cat = {o.category: {k: result.estimates[f"{k}.{o.category}"] for k in SCORES} for o in detail.outcomes}
    kinds = sorted({k for o in detail.outcomes for k in o.invalid})
    max_rows = cfg.report.max_rows
    tables = [category_table(per_cat), outcome_table(detail.outcomes, kinds), answers_table(detail.answers, max_rows),
              *problems_table(detail.unread, max_rows), *contrast_tables(detail.contrasts)]
    return tables, bias_plots(per_cat)
