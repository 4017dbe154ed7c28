"""Pivotal perplexity's report section (`present`, issue 28) rebuilds from the result's
records exactly the tables and plots `compute` built on main: two prompt conditions, a
`by` field with its accuracy contrasts, proportions undefined for some pairs, a group
whose every pair ties, unscorable prompt pairs."""

from __future__ import annotations

from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.pivotal_perplexity.detail import Unscorable
from biasaudit.methods.pivotal_perplexity.metric import (
    CLASSES,
    PairResult,
    PivotalParams,
    _summarise,
)
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.spec import validate_config
from tests.unit.methods.presentation_check import check, shown

CATS = ["agreement", "tense", "ties"]


def context() -> MetricContext:
    stimuli = [Stimulus(id=f"s{i}", fields={"a": f"a{i}", "b": f"b{i}", "category": CATS[i % 3]}) for i in range(9)]
    cfg = validate_config({
        "audit": {"name": "p", "method": "pivotal_perplexity"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "factors": {"order": {"ab": {"vars": {"order": "ab"}}, "ba": {"vars": {"order": "ba"}}}},
        "probe": {"kind": "sequence_logprob", "inputs": {"correct": "{{ order }} {{ a }}", "incorrect": "{{ order }} {{ b }}"}},
        "metrics": [{"name": "pivotal_perplexity"}],
        "model": {"backend": "scripted", "name": "s"},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    return MetricContext(config=cfg, plan=compile_plan(cfg, sset, {"m": 1}), responses={})


def results(ctx: MetricContext) -> tuple[list[PairResult], list[Unscorable]]:
    out = []
    for c, cell in enumerate(ctx.plan.cells):
        for s in ctx.plan.stimuli.stimuli:
            i = int(s.id[1:])
            if (i, c) == (4, 1):
                continue
            tied = s.fields["category"] == "ties"
            norm: dict[str, float | None] = {cls: round(0.05 * ((i + 2 * c + k) % 7) - 0.1, 6)
                                             for k, cls in enumerate(CLASSES)}
            plain: dict[str, float | None] = {cls: round(0.1 * ((i + k) % 4) + 0.05, 6) for k, cls in enumerate(CLASSES)}
            if i == 3:
                norm["period"] = plain["period"] = None
            if (i, c) == (6, 0):
                norm["pivotal"] = plain["pivotal"] = None
            out.append(PairResult(stimulus=s.id, cell=cell.id, fields=dict(s.fields), accurate=not tied and (i + c) % 3 != 2,
                                  plain=plain, normalized=norm, unaligned=i % 2, aligned=10 + i, tied=tied))
    return out, [Unscorable(stimulus="s4", cell=ctx.plan.cells[1].id, reason="timeout"),
                Unscorable(stimulus="s8", cell=ctx.plan.cells[0].id, reason="not framed")]


def test_present_rebuilds_main_tables_and_plots() -> None:
    ctx = context()
    p = PivotalParams(by=["category"], contrasts=True, n_resamples=200)
    rs, skipped = results(ctx)
    got = shown(_summarise(ctx, "pivotal_perplexity", p, rs, skipped), "pivotal_perplexity", p, ctx.config)
    check("pivotal_perplexity", got)
