"""The Python API on the embedded SmolLM2: `biasaudit.run` of a shipped spec returns
tables whose numbers are the run's summary.json (issue 18, acceptance 3, on a real model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import biasaudit
from tests.conftest import isolation, run_dirs

pytestmark = pytest.mark.slow


def test_api_run_of_a_shipped_spec_on_smollm2(workdir: Path, smollm2) -> None:  # type: ignore[no-untyped-def]
    result = biasaudit.run("crows_pairs_tp", ["+stimuli.sample.n=6", *isolation(workdir)])
    assert isinstance(result, biasaudit.RunResult)
    [run_dir] = run_dirs(workdir)
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["execution"]["calls"] == 12 and result.summary.execution.calls == 12  # 6 pairs x 2 sentences
    est = result.estimates
    pooled = est[est.cell == ""]
    for mid, m in s["metrics"].items():
        for name, e in m["estimates"].items():
            # an estimate's own row: its group column is "" or, for a per-group estimate,
            # `<field>=<group>` (the rows of its nested `groups` carry their bare names)
            own = pooled[(pooled.metric == mid) & (pooled.estimate == name) & ~pooled.group.isin(e.get("groups") or {})]
            [row] = own.itertuples()
            assert (row.value, row.ci_low, row.ci_high, row.n) == (e["value"], e["ci_low"], e["ci_high"], e["n"])
    score = s["metrics"]["bias_score"]["estimates"]["score"]
    assert 0 <= score["ci_low"] <= score["value"] <= score["ci_high"] <= 100 and score["n"] == 6
    # the score is the share of pairs whose stereotyping sentence scores higher, from the items
    items = result.items[result.items.metric == "bias_score"]
    assert len(items) == 6
    assert score["value"] == pytest.approx(100 * (items["diff"] > 0).mean())
    assert [v.verdict for v in result.verdicts] == [v["verdict"] for v in s["verdicts"]]
    assert result.overall == s["overall"] and result.report_path is not None
