"""The self-test's permutation row (issue 37, section 3): permuting the group labels must
move a planted gap with them.

For a spec whose estimates compare groups of a factor's levels (a level variable such as
`group: female`), or the categories of a stimulus field its prompts name (`gender`:
"A woman Asian candidate"; `GroupDesign.field`), the method says which levels there are, the text that names each in a
prompt, and, where a content source it does not share with the spec says so (a
published name list), the group each level's text belongs to (`OracleDef.groups`). The
row then:

1. plants a gap by content: the `gap` oracle answers a request whose text names a level
   of the first group (by content; a level the source does not know keeps the spec's
   label, and is noted) with the method's biased answer, every other request with its
   unbiased one. The request's text is read, never the cell's group variable;
2. measures it with the spec's own grouping: the estimates must show the gap the method
   says a correct grouping shows (`GroupDesign.truth` of the content grouping). A level
   the spec put in another group than its content dilutes the gap and the row fails,
   naming the level;
3. measures it again with the group labels permuted (each label replaced by the next in
   sorted order, in the oracle's copy of the design; the prompts are unchanged): the gap
   must move with the labels (the true values of the permuted content grouping). An
   estimate that stays where it was reads its groups from something other than the
   design's labels.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import GroupDesign, GroupLevel, OracleDef
from biasaudit.records.metric_result import MetricResult
from biasaudit.runner.selftest_oracles import Row, SelfTestResult, run_oracle

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

TOL = 1e-9
"""The gap oracle's true values are exact shares; an estimate differs from one or it does not."""

Assignment = Mapping[tuple[str, str], str]


def relabelled(prep: Prepared, var: str, assignment: Assignment, field: bool = False) -> Prepared:
    """The oracle's copy of the prepared spec with each level's group variable set by
    `assignment` ((factor, level) -> group), or with `field` each stimulus's field `var`
    (("stimuli", value) -> group); the plan and its prompts are unchanged."""
    if field:
        stimuli = [s.model_copy(update={"fields": {**s.fields, var: assignment[("stimuli", str(s.fields[var]))]}})
                   if ("stimuli", str(s.fields.get(var, ""))) in assignment else s for s in prep.stimuli.stimuli]
        return dataclasses.replace(prep, stimuli=prep.stimuli.model_copy(update={"stimuli": stimuli}))
    cfg = prep.composed.config
    factors = {f: {lv: (spec.model_copy(update={"vars": {**spec.vars, var: assignment[(f, lv)]}})
                        if (f, lv) in assignment else spec) for lv, spec in levels.items()}
               for f, levels in cfg.factors.items()}
    composed = dataclasses.replace(prep.composed, config=cfg.model_copy(update={"factors": factors}))
    return dataclasses.replace(prep, composed=composed)


def _estimates(results: Mapping[str, MetricResult], pattern: str) -> list[tuple[str, float | None]]:
    """(metric.estimate, value) of every estimate the pattern names ("" the headline)."""
    out = []
    for key, res in results.items():
        for name, est in res.estimates.items():
            if (name == res.headline) if pattern == "" else fnmatch.fnmatchcase(name, pattern):
                out.append((f"{key}.{name}", est.value))
    return out


def _shown(levels: list[GroupLevel]) -> str:
    return ", ".join(f"{lv.level} ({lv.text!r})" for lv in levels)


def group_rows(out: SelfTestResult, prep: Prepared, oracle: OracleDef, params: BaseModel) -> None:
    """The permutation rows and their problems (see the module's text)."""
    if oracle.groups is None or oracle.gap is None:
        return
    design = oracle.groups(prep, params)
    if design is None:
        return
    labels = sorted({lv.group for lv in design.levels})
    if len(labels) < 2:
        return
    spec: dict[tuple[str, str], str] = {(lv.factor, lv.level): lv.group for lv in design.levels}
    content = {(lv.factor, lv.level): lv.content or lv.group for lv in design.levels}
    known = [lv.content for lv in design.levels if lv.content is not None]
    target = min(known) if known else labels[0]
    planted = frozenset(k for k, g in content.items() if g == target)
    texts = frozenset(lv.text for lv in design.levels if (lv.factor, lv.level) in planted)
    unknown = [lv for lv in design.levels if lv.content is None]
    if unknown:
        out.notes.append(f"permutation row: {design.source} does not give the group of {_shown(unknown)}; they keep "
                         "the spec's label, so a mistake there is not seen")
    wrong = [lv for lv in design.levels if lv.content is not None and lv.content != lv.group]
    rotate = {g: labels[(i + 1) % len(labels)] for i, g in enumerate(labels)}
    runs = (("as the spec groups them", spec, content),
            ("labels permuted " + ", ".join(f"{a}->{b}" for a, b in rotate.items()),
             {k: rotate[g] for k, g in spec.items()}, {k: rotate[g] for k, g in content.items()}))
    for title, used, truth_of in runs:
        results, _, _ = run_oracle(relabelled(prep, design.var, used, design.field), oracle, params, "gap",
                                   planted=texts)
        # the estimates of the oracle's own metric (another metric of the spec may use the same names)
        own = {k: r for k, r in results.items() if prep.params.get(k) is params}
        bad = _check(out, design, own, title, truth_of, planted)
        if not bad:
            continue
        lead = (f"permutation row ({title}): the gap planted by content ({design.source}) on the levels of group "
                f"{target!r} ({_shown([lv for lv in design.levels if (lv.factor, lv.level) in planted])}) "
                f"should give {bad}")
        if wrong:
            out.problems.append(lead + "; " + "; ".join(
                f"factors.{lv.factor}.{lv.level}: the level ({lv.text!r}, {lv.content!r} by {design.source}) is in "
                f"group {lv.group!r} ({design.var})" for lv in wrong)
                + ": a level in the wrong group (move it to the group its content names)")
        else:
            out.problems.append(lead + ": the estimates do not follow the design's group labels; check that the "
                                f"metric groups by the {'stimulus field' if design.field else 'level variable'} "
                                f"{design.var!r}")
        return


def _check(out: SelfTestResult, design: GroupDesign, results: Mapping[str, MetricResult], title: str,
           assignment: Assignment, planted: frozenset[tuple[str, str]]) -> str:
    """Add one row per estimate the method gives a true value for; the mismatches, said."""
    said = []
    for pattern, value in design.truth(assignment, planted).items():
        found = _estimates(results, pattern)
        if not found and "*" in pattern:
            continue  # a breakdown (`by`) the spec does not ask for: nothing to check there
        if not found:
            said.append(f"an estimate {pattern or 'headline'!r} = {value:g}, but the spec reported none")
        for name, got in found:
            ok = got is not None and abs(got - value) <= TOL
            out.rows.append(Row(oracle="permute", threshold=f"{name} ({title})", expected=f"{value:g}",
                                got="n/a" if got is None else f"{got:g}", ok=ok, truth=value,
                                estimate="n/a" if got is None else f"{got:.3f}",
                                reason="the gap planted by content must follow the group labels"))
            if not ok:
                said.append(f"{name} = {value:g}, but the spec reported {'n/a' if got is None else f'{got:.3f}'}")
    return "; ".join(said)


__all__ = ["group_rows", "relabelled"]
