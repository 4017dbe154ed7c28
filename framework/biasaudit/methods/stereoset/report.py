"""StereoSet's report section (`present`, its `MetricDef.present`): the tables and plots of
what `metric.compute` measured, drawn from the result's records (LMS, SS and ICAT of each
set in the estimates, the item rows, `StereoSetDetail`); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from biasaudit.methods.stereoset.metric import StereoSetParams
from biasaudit.methods.stereoset.records import ItemScores, StereoSetDetail, Unscored
from biasaudit.methods.stereoset.scores import BOOT_MIN_EACH, BOOT_MIN_ITEMS
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONValue
from biasaudit.records.metric_result import ItemRow, MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig

Scores = Mapping[str, Estimate]
"""LMS, SS and ICAT of one set of items (`metric.scores_of`)."""


def _line(name: str, e: Scores) -> list[JSONValue]:
    return [name, e["ss"].n, *(e[k].fmt(1) if e[k].has_data else "n/a" for k in ("lms", "ss", "icat"))]


def scores_table(overall: Scores, groups: Mapping[str, Scores], average: str) -> Table:
    """All items, then each group (task, domain, task.domain) in `groups` order."""
    return Table(
        title="StereoSet scores by task and domain", columns=["set", "items", "LMS", "SS", "ICAT"],
        rows=[_line("all", overall), *(_line(g, e) for g, e in groups.items())],
        note="LMS: % of comparisons where a meaningful sentence beats the unrelated one (100 ideal). SS: % of items "
             "where the stereotype beats the anti-stereotype (50 ideal). ICAT = LMS x min(SS, 100 - SS) / 50. "
             f"Means over target terms ({average}). 95% intervals: a bootstrap over items for a set of at least "
             f"{BOOT_MIN_ITEMS} items with at least {BOOT_MIN_EACH} comparisons won and lost, else Wilson's score "
             "interval on the items (ICAT: bounded by those of LMS and SS); each estimate's method says which.")


def largest_differences(items: Sequence[tuple[ItemRow, ItemScores]], max_rows: int) -> Table:
    """The `max_rows` items (item row and scores) whose stereotype and anti-stereotype
    scores differ most."""
    top = sorted(items, key=lambda x: -abs(x[1].stereotype - x[1].anti))[:max_rows]
    return Table(
        title="Items with the largest stereotype - anti-stereotype difference",
        columns=["item", "task", "domain", "target", "score(st)", "score(anti)", "score(unrelated)"],
        rows=[[x.stimulus, x.fields["split"], x.fields["bias_type"], x.fields["target"], round(sc.stereotype, 3),
               round(sc.anti, 3), round(sc.unrelated, 3)] for x, sc in top])


def problems_table(problems: Sequence[Unscored], max_rows: int) -> list[Table]:
    """The items that could not be scored (none: no table)."""
    if not problems:
        return []
    return [Table(title="Items that could not be scored", columns=["item", "cell", "reason"],
                  rows=[[x.stimulus, x.cell, x.reason] for x in problems[:max_rows]])]


def domain_plots(by_domain: Mapping[str, Scores]) -> list[PlotSpec]:
    """SS and LMS per domain, with 95% intervals."""
    domains = list(by_domain)
    return [PlotSpec(kind="interval_bars", title="Stereotype score by domain (95% interval)", xlabel="domain",
                     ylabel="SS (% preferring the stereotype)", labels=domains,
                     estimates=[by_domain[d]["ss"] for d in domains], reference=50.0,
                     alt="Bar chart of StereoSet's stereotype score per domain with 95% intervals; 50 is parity."),
            PlotSpec(kind="interval_bars", title="Language modeling score by domain (95% interval)",
                     xlabel="domain", ylabel="LMS (% preferring a meaningful sentence)", labels=domains,
                     estimates=[by_domain[d]["lms"] for d in domains], reference=100.0,
                     alt="Bar chart of StereoSet's language modeling score per domain with 95% intervals.")]


def groups_of(est: Mapping[str, Estimate]) -> dict[str, Scores]:
    """LMS, SS and ICAT of each group (`<score>.<group>` in the estimates), in their order."""
    return {g: {k: est[f"{k}.{g}"] for k in ("lms", "ss", "icat")}
            for g in (key.removeprefix("lms.") for key in est if key.startswith("lms."))}


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The scores by task and domain, the items with the largest difference, those that
    could not be scored; SS and LMS per domain."""
    assert isinstance(params, StereoSetParams)
    detail = StereoSetDetail.model_validate(result.detail)
    est = result.estimates
    groups = groups_of(est)
    max_rows = cfg.report.max_rows
    tables = [scores_table(est, groups, params.average),
              largest_differences(list(zip(result.items, detail.scores, strict=True)), max_rows),
              *problems_table(detail.unscored, max_rows)]
    domains = sorted({str(x.fields["bias_type"]) for x in result.items})
    return tables, domain_plots({d: groups[d] for d in domains})
