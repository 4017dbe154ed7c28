"""A method's report section checked against the tables and plots `compute` made before
`MetricDef.present` existed (issue 28).

Each case is a shipped spec answered by its self-test oracle (`runner.selftest.run_oracle`:
the scripted responses and perfect-judge codes the method's self-test already uses), run
through `pipeline.measure` (compute, then present). The tables and plots of every metric
are compared with `tests/fixtures/presentation/<case>.json`, recorded from main as it was
before the methods moved their tables out of `compute` (4481472), where `compute` made them
itself. Then `present` is called again on each result read back from its summary.json form
with no tables or plots: the report section draws on the records alone.

Regenerate only for a change that is MEANT to change a report's tables, and say so:
    BIASAUDIT_UPDATE_PRESENTATION=1 .venv/bin/python -m pytest tests/unit/methods -k presentation
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from biasaudit.records.metric_result import MetricResult
from biasaudit.registry import METRICS
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "presentation"


def shown(tables: list[Any], plots: list[Any]) -> dict[str, Any]:
    """Tables and plots as summary.json holds them."""
    return json.loads(json.dumps({"tables": [t.model_dump(mode="json") for t in tables],
                                  "plots": [p.model_dump(mode="json") for p in plots]}))


def _same(got: Any, want: Any) -> bool:
    """Equal, floats to 1e-12 relative: the last binary digit of a float can move with the
    numpy / scipy build (a log-ratio interval gave 2.2258791163586875 vs ...687), and a
    report shows four significant digits."""
    if isinstance(got, int | float) and isinstance(want, int | float) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15) or (got != got and want != want)
    if isinstance(got, dict) and isinstance(want, dict):
        return list(got) == list(want) and all(_same(got[k], want[k]) for k in want)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want, strict=True))
    return type(got) is type(want) and bool(got == want)


def check_case(case: str, overrides: list[str], kind: str, workdir: Path) -> dict[str, MetricResult]:
    """The metrics of spec `overrides` under oracle `kind` show the recorded tables and
    plots, and each metric's `present` makes them from its records alone."""
    prep = prepare(compose([*overrides, *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    results = run_oracle(prep, oracle, params, kind)[0]
    got = {key: shown(r.tables, r.plots) for key, r in results.items()}
    path = FIXTURES / f"{case}.json"
    if os.environ.get("BIASAUDIT_UPDATE_PRESENTATION"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, allow_nan=False) + "\n")
        return results
    expected = json.loads(path.read_text())
    assert list(got) == list(expected)
    for key, want in expected.items():
        assert [t["title"] for t in got[key]["tables"]] == [t["title"] for t in want["tables"]], key
        assert _same(got[key]["tables"], want["tables"]), key
        assert _same(got[key]["plots"], want["plots"]), key
        section = METRICS.get(results[key].name).present
        assert section is not None, f"{results[key].name} has no report section (MetricDef.present)"
        # summary.json's form of the result, without what the report section made
        bare = results[key].model_copy(update={"tables": [], "plots": []})
        read = MetricResult.model_validate_json(json.dumps(bare.model_dump(mode="json"), allow_nan=False))
        again = section(read, prep.params[key], prep.composed.config)
        assert _same(shown(*again), want), key
    return results


__all__ = ["FIXTURES", "check_case", "shown"]
