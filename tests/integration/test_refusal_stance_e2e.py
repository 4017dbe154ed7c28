"""The refusal / stance audit end to end on SmolLM2 (issue 16, acceptance 2): two coding
layers, their label distributions per prompt condition and their reliability pair with
an interval in the report; `biasaudit plan` counts subject and coding calls apart,
before the run (bounds) and after it (exact, all cached)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import expected_exit, read_jsonl
from tests.report_checks import check_in_browser, check_report

pytestmark = pytest.mark.slow
QUICK = ("spec=refusal_stance", "+stimuli.sample.n=2", "probe.max_tokens=24")


def test_refusal_stance_end_to_end(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("plan", *QUICK, *isolation(workdir))
    assert code == 0, err
    assert re.search(r"subject calls needed\s+8\n", out)
    assert re.search(r"refusal \(rules\)\s+0\n", out) and re.search(r"stance \(judge_panel\)\s+at most 24 ", out)
    assert re.search(r"coding calls needed\s+at most 24\n", out)

    code, _, err = cli("run", *QUICK, *isolation(workdir))
    assert code == expected_exit(workdir), err
    [d] = run_dirs(workdir)
    s = check_report(d)
    check_in_browser(d)
    cells = s["design"]["cells"]
    assert len(cells) == 4
    layers = {x["name"]: x for x in s["coding"]["layers"]}
    assert set(layers) == {"refusal", "stance"}
    for name, labels in (("refusal", ["refuse", "answer"]), ("stance", ["E", "QE", "N", "D", "R"])):
        lay = layers[name]
        assert lay["labels"] == labels and [c["cell"] for c in lay["cells"]] == cells
        for c in lay["cells"]:  # every answer coded on both layers: shares add up to one per condition
            assert c["n"] == sum(c["counts"].values()) and sum(c["shares"].values()) == pytest.approx(1.0)
        assert set(lay["pooled"]) == set(labels)
    assert sum(c["n"] for c in layers["refusal"]["cells"]) == 8  # `otherwise: answer`: nothing abstains
    [pair] = s["coding"]["pairs"]
    assert (pair["a"], pair["b"]) == ("refusal", "stance")
    pooled = pair["pooled"]
    assert pooled["n"] >= 1 and pooled["percent"]["ci_low"] is not None and pooled["percent"]["ci_high"] is not None
    assert pooled["percent"]["ci_low"] <= pooled["percent"]["value"] <= pooled["percent"]["ci_high"]
    assert set(pair["cells"]) <= set(cells)
    [panel] = s["coding"]["panels"]
    assert panel["judges"] == ["stance", "reader", "auditor"]
    html = (d / "report.html").read_text()
    assert 'id="coding"' in html and "Reliability pairs" in html and "<code>refusal</code> vs <code>stance</code>" in html
    assert {v["metric"] for v in s["verdicts"]} == {"refusal_rate", "endorsement_rate"}
    assert s["metrics"]["endorsement_rate"]["cells"]["rate"].keys() <= set(cells)
    # the rates are the layer's label shares: recomputed from codes.jsonl
    codes = read_jsonl(d / "codes.jsonl")
    refusals = [c for c in codes if c["layer"] == "refusal" and c["status"] == "coded"]
    rate = sum(c["label"] == "refuse" for c in refusals) / len(refusals)
    assert s["metrics"]["refusal_rate"]["estimates"]["rate"]["value"] == pytest.approx(rate)

    code, out, err = cli("plan", *QUICK, *isolation(workdir))
    assert code == 0, err
    assert re.search(r"subject calls needed\s+0\n", out) and "exact, from the cached responses" in out
    stance_requests = layers["stance"]["calls"]["requests"]
    assert re.search(rf"stance \(judge_panel\)\s+{stance_requests} requests, {stance_requests} cached, 0 calls needed", out)
    assert re.search(r"coding calls needed\s+0\n", out)
