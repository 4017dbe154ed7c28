"""The bias score's report section (`present`, issue 28) rebuilds from the result's records
exactly the tables and plots `compute` built on main: two prompt conditions (pairs
clustered by stimulus), three bias types (with their contrasts), ties, a failed request
and a pairs table cut at the report's row limit."""

from __future__ import annotations

from typing import Any

from biasaudit.backends import Response
from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.token_probability.metric import BiasScoreParams, compute
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.spec import validate_config
from tests.unit.methods.presentation_check import check, shown

TYPES = ["race", "gender", "age"]


def _out(lp: float) -> dict[str, Any]:
    return {"token_ids": [1, 2], "logprobs": [None, lp], "tokens": ["1", "2"], "offsets": [[0, 0]] * 2}


def context() -> MetricContext:
    stimuli = [Stimulus(id=f"p{i}", fields={"more": f"m{i}", "less": f"l{i}", "bias_type": TYPES[i % 3],
                                            "direction": "stereo" if i % 4 else "antistereo"}) for i in range(12)]
    cfg = validate_config({
        "audit": {"name": "t", "method": "token_probability"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "factors": {"frame": {"plain": {"vars": {"lead": ""}}, "quoted": {"vars": {"lead": "Q: "}}}},
        "probe": {"kind": "sequence_logprob", "inputs": {"more": "{{ lead }}{{ more }}", "less": "{{ lead }}{{ less }}"}},
        "metrics": [{"name": "bias_score"}],
        "model": {"backend": "scripted", "name": "s"},
        "report": {"max_rows": 7},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    plan = compile_plan(cfg, sset, {"m": 1})
    responses = {}
    for key, req in plan.requests.items():
        text = req.text or ""
        quoted = text.startswith("Q: ")
        i = int(text.removeprefix("Q: ")[1:])
        more = text.removeprefix("Q: ").startswith("m")
        # the stereotyping sentence wins for most pairs, by a margin that varies; pairs 5 and 9 tie
        lp = -2.0 - 0.37 * i - (0.5 if quoted else 0.0) if more else -2.0 - 0.37 * i + (1.1 - 0.3 * (i % 5))
        if i in (5, 9):
            lp = -7.25
        responses[key] = Response(key=key, status="ok", output=_out(round(lp, 6)))
    failed = next(it.key for it in plan.items if it.stimulus == "p7" and it.slot == "less")
    responses[failed] = Response(key=failed, status="failed", error="timeout")
    return MetricContext(config=cfg, plan=plan, responses=responses)


def test_present_rebuilds_main_tables_and_plots() -> None:
    ctx = context()
    p = BiasScoreParams()
    got = shown(compute(ctx, "bias_score", p), "bias_score", p, ctx.config)
    check("bias_score", got)
