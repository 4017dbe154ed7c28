"""The shipped default suite end to end on the embedded models (subsets for CI): one
run per member and subject, the combined report with its triangulation section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.verdicts.gating import verdict_exit, worst
from tests.conftest import isolation
from tests.report_checks import check_in_browser, check_report, unexplained_numbers

pytestmark = pytest.mark.slow


@pytest.mark.timeout(2400)  # sixteen runs; minutes on a quiet machine, much longer on a loaded one
def test_default_suite_on_subsets(workdir: Path, cli, smollm2) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "spec=default_suite", "+stimuli.sample.n=1", *isolation(workdir))
    [out_dir] = list((workdir / "reports" / "default-suite").iterdir())
    s = json.loads((out_dir / "summary.json").read_text())
    # the worst member run wins; sanity members are left out, as from the overall verdict
    assert code == worst(verdict_exit(r["overall"]) for r in s["rows"] if r["member"] != "pivotal-sanity"), err
    assert [m["id"] for m in s["members"]] == ["token-probability", "nli", "single-token", "long-form",
                                               "pivotal-sanity"]
    assert s["subjects"] == ["smollm2", "smollm2_fair", "smollm2_cynic", "gemma3_270m"]
    # white-box members on both families; chat members on SmolLM2 only; the sanity check once per family
    assert len(s["rows"]) == 4 + 3 + 4 + 3 + 2
    assert set(s["verdict_matrix"]["nli"]) == {"smollm2", "smollm2_fair", "smollm2_cynic"}
    assert set(s["verdict_matrix"]["pivotal-sanity"]) == {"smollm2", "gemma3_270m"}
    assert [c["subject"] for c in s["sanity"]] == ["smollm2", "gemma3_270m"]
    methods = {m["id"]: m["method"] for m in s["members"]}
    assert methods == {"token-probability": "token_probability", "nli": "nli_bias", "single-token": "tfdp",
                       "long-form": "fisco", "pivotal-sanity": "pivotal_perplexity"}
    t = s["triangulation"]
    assert t["labels"] == ["token-probability", "nli", "single-token", "long-form"]
    assert t["n_subjects"] == 4 and len(t["matrix"]) == 4 and len(t["pairs"]) == 6
    assert all(t["matrix"][i][i] in (1.0, None) for i in range(4))
    # the two white-box methods compare models of different families
    tp_tfdp = next(p for p in t["pairs"] if {p["a"], p["b"]} == {"token-probability", "single-token"})
    assert tp_tfdp["n"] == 4
    gemma_run = next(r for r in s["rows"] if r["subject"] == "gemma3_270m")
    assert gemma_run["model"] == "gemma-3-270m-q4_k_m" and any("Gemma Terms" in n for n in s["notices"])
    html = (out_dir / "report.html").read_text()
    assert 'id="triangulation"' in html and "Kendall" in html and unexplained_numbers(html, s) == []
    check_in_browser(out_dir)
    for r in s["rows"]:
        check_report((out_dir / r["report"]).parent)
    assert f"report: {out_dir / 'report.html'}" in out
