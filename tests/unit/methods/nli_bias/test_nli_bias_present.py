"""The NLI bias scores' report section (`present`, issue 28) rebuilds from the result's
records exactly the tables and plots `compute` built on main: two prompt conditions,
three groups of a `by` field with their M6 and M9 contrasts, a failed request."""

from __future__ import annotations

from biasaudit.backends import Response
from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.nli_bias.metric import NLIBiasParams, compute
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.spec import validate_config
from tests.unit.methods.presentation_check import check, shown

CATS = ["x", "y", "z"]


def _probs(i: int, stereo: bool, quoted: bool) -> tuple[float, float, float]:
    e = (0.15 + 0.07 * ((i * 5) % 9) + (0.1 if stereo else 0.0) - (0.05 if quoted else 0.0))
    n = 0.2 + 0.03 * (i % 4)
    return e, n, round(1.0 - e - n, 6)


def context() -> MetricContext:
    stimuli = [Stimulus(id=f"t{i}", fields={"stereo_premise": f"s{i}", "counter_premise": f"c{i}", "hypothesis": "h",
                                            "cat": CATS[i % 3]}) for i in range(12)]
    cfg = validate_config({
        "audit": {"name": "n", "method": "nli_bias"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "factors": {"frame": {"plain": {"vars": {"lead": ""}}, "quoted": {"vars": {"lead": "Q: "}}}},
        "probe": {"kind": "classify_nli", "inputs": {"stereo": "{{ lead }}{{ stereo_premise }}",
                                                     "counter": "{{ lead }}{{ counter_premise }}"},
                  "hypothesis": "{{ hypothesis }}"},
        "metrics": [{"name": "nli_bias"}],
        "model": {"backend": "scripted", "name": "s"},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    plan = compile_plan(cfg, sset, {"m": 1})
    responses = {}
    for k, r in plan.requests.items():
        text = r.text or ""
        quoted = text.startswith("Q: ")
        bare = text.removeprefix("Q: ")
        probs = _probs(int(bare[1:]), bare.startswith("s"), quoted)
        responses[k] = Response(key=k, status="ok", output={"probs": dict(zip(("entailment", "neutral", "contradiction"),
                                                                             probs, strict=True))})
    failed = next(it.key for it in plan.items if it.stimulus == "t4" and it.slot == "counter")
    responses[failed] = Response(key=failed, status="failed", error="refused")
    return MetricContext(config=cfg, plan=plan, responses=responses)


def test_present_rebuilds_main_tables_and_plots() -> None:
    ctx = context()
    p = NLIBiasParams(by=["cat"], contrasts=True)
    got = shown(compute(ctx, "nli_bias", p), "nli_bias", p, ctx.config)
    check("nli_bias", got)
