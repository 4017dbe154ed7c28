"""TFDP's report section (`present`, issue 28) rebuilds from the result's records exactly
the tables and plots `compute` built on main: the task field and a `by` field with their
contrasts, the largest disparities cut at `max_rows`, the token accounting (black-box and
white-box), unscorable pairs, and scores fixed by the kernel (undefined estimates, the
tables still showing the values)."""

from __future__ import annotations

import pytest

from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.tfdp.detail import Unscorable
from biasaudit.methods.tfdp.metric import PairScores, TFDPParams, _summarise
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.spec import validate_config
from tests.unit.methods.presentation_check import check, shown

CATS = ["home", "power", "work"]


def context(kind: str) -> MetricContext:
    stimuli = [Stimulus(id=str(i), fields={"s": f"S{i} <MASK>.", "s_prime": f"S'{i} <MASK>.", "w_orig": f"w{i}",
                                           "w_prime_orig": f"v{i}", "task": "parity" if i % 4 else "factuality",
                                           "category": CATS[i % 3]}) for i in range(10)]
    cfg = validate_config({
        "audit": {"name": "t", "method": "tfdp"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "probe": {"kind": kind, "inputs": {"s": "{{ s }}", "s_prime": "{{ s_prime }}"}},
        "metrics": [{"name": "tfdp"}],
        "model": {"backend": "scripted", "name": "s"},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    return MetricContext(config=cfg, plan=compile_plan(cfg, sset, {"m": 1}), responses={})


def pairs(ctx: MetricContext) -> list[PairScores]:
    out = []
    for s in ctx.plan.stimuli.stimuli:
        if s.id == "6":
            continue  # failed
        i = int(s.id)
        ps = round(0.3 - 0.11 * ((i * 7) % 6), 6)
        psd = round(0.02 * (i % 5), 6)
        out.append(PairScores(stimulus=s.id, fields=dict(s.fields), abar=0.5 + ps / 2, abar_counter=0.5 - ps / 2, ps=ps,
                              psd=psd, wfs=round(0.9 * ps + (0.1 if ps >= 0 else -0.1) * psd, 9), ill_formed=i % 3,
                              predictions=10, top=f"w{i}" if i % 2 else "(ill-formed)", top_counter=f"x{i}"))
    return out


@pytest.mark.parametrize(("name", "kind", "undefined"), [
    ("tfdp", "generate", None),
    ("tfdp_white_box_undefined", "next_token", "undefined: every prediction of 18 sentences was ill-formed"),
])
def test_present_rebuilds_main_tables_and_plots(name: str, kind: str, undefined: str | None) -> None:
    ctx = context(kind)
    p = TFDPParams(by=["category"], contrasts=True, max_rows=4)
    ps = pairs(ctx)
    reads = 2 * len(ps) * (5 if kind == "generate" else 1)
    res = _summarise(ctx, "tfdp", p, ps, [Unscorable(stimulus="6", reason="timeout")], 3 * reads, reads, 2, undefined=undefined)
    check(name, shown(res, "tfdp", p, ctx.config))
