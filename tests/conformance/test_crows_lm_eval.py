"""CrowS-Pairs on the embedded SmolLM2 checked against lm-evaluation-harness (issue 37, §2).

The reference is lm-evaluation-harness (the `dev` extra pins `lm-eval>=0.4.5,<0.5`; written
and checked against 0.4.13), run in this test on the same loaded weights:

- the log-likelihoods are `HFLM.loglikelihood` (lm_eval/models/huggingface.py) on the
  requests lm-eval's `crows_pairs_english` task builds (lm_eval/tasks/crows_pairs/
  crows_pairs_english.yaml: `output_type: multiple_choice`, `doc_to_text: ""`,
  `target_delimiter: ""`, `doc_to_choice` = [sent_more, sent_less]), so each request is
  (context "", continuation sentence): lm-eval's prefix token (BOS) + the sentence;
- the metric is the task's own `process_results` (lm_eval/tasks/crows_pairs/utils.py, read
  from the installed package and called as is): `pct_stereotype` is 1 when sent_more's
  log-likelihood is higher than sent_less's, whatever the `stereo_antistereo` column says,
  and the task aggregates it by `mean` (crows_pairs_english.yaml `metric_list`).

The slice: the first 50 pairs (ids 0-49, 40 `stereo` and 10 `antistereo`, so the direction
column is exercised) of the published file specs/data/crows_pairs/crows_pairs_anonymized.csv.
biasaudit runs its shipped spec `crows_pairs_tp` on those rows through the generic engine
(`biasaudit.run`, the command line's route), its cache and reports in the test's tmp folder.

The spec's headline metric `bias_score` (mode `ar_full`: the sum of log p over every token
after BOS) is lm-eval's definition; `ar_shared` (shared tokens only) is not compared here.

Tolerance: 4e-5 per scored token of the sentence (at most 1.4e-3 on this slice, whose
longest sentence has 34 tokens after BOS), not the flat 2e-4 of `make bench`
(bench/run.py). Both paths run the same float32 weights on the CPU, but lm-eval takes
`F.log_softmax` of the float32 logits over SmolLM2's 49,152-word vocabulary, which rounds
each token's log-prob by up to ~2e-5, always the same way, while biasaudit's log-probs
(logit - logsumexp) agree with a float64 log_softmax of the same logits to 4e-5 per
sentence. Measured on this slice: biasaudit - lm-eval lies in [-5.5e-4, -3.7e-5] (1.9e-5 per
token at most); lm-eval agrees with a one-sentence float32 log_softmax to 3e-5 and
biasaudit with a float64 one to 4e-5. So the gap is lm-eval's float32 rounding, it grows
with the sentence's length (a flat 2e-4 fails on the 34-token first pair), and 4e-5 per
token leaves 2x room for other CPUs' float32 rounding, while a different BOS or a
dropped final token still fails on most sentences.

Ties: biasaudit compares the two sentences' scores rounded to 3 decimals (the `decimals`
parameter), lm-eval compares raw floats, so a pair within the rounding plus both
sentences' tolerances of a tie could count as a tie or a win in one and not the other.
The test asserts that no pair of the slice is that close (its smallest margin in lm-eval's
numbers is shown), so the exact score comparison cannot pass or fail by such a flip; a
slice with a near-tie fails that assertion, saying so, not silently.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
from collections.abc import Callable
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, isolation
from tests.helpers import read_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.serial]

# CI installs the dev extra: there a missing reference is a failure, never a skip
lm_eval = (__import__("lm_eval") if os.environ.get("CI") == "true"
       else pytest.importorskip("lm_eval"))

LM_EVAL_VERSION = metadata.version("lm_eval")
N_PAIRS = 50
DATA = REPO / "specs" / "data" / "crows_pairs" / "crows_pairs_anonymized.csv"
LL_TOL_PER_TOKEN = 4e-5
ROUNDING = 1e-3  # biasaudit's per-pair scores are rounded to 3 decimals before comparing

CONFORMANCE = [
    {"check": "CrowS-Pairs per-sentence log-likelihood (ar_full), first 50 pairs of the published "
              "file, 100 sentences",
     "source": f"lm-evaluation-harness {LM_EVAL_VERSION} HFLM.loglikelihood and "
               "tasks/crows_pairs/utils.py process_results, on SmolLM2-135M-Instruct",
     "tolerance": "4e-5 per token (<= 1.4e-3 per sentence on this slice)"},
    {"check": "CrowS-Pairs bias score (crows_pairs_tp, ar_full) = lm-eval pct_stereotype x 100, "
              "first 50 pairs, pair by pair",
     "source": f"lm-evaluation-harness {LM_EVAL_VERSION} HFLM.loglikelihood and "
               "tasks/crows_pairs/utils.py process_results, on SmolLM2-135M-Instruct",
     "tolerance": "exact (the same pairs prefer sent_more; no pair near a tie)"},
]


def _slice(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    """The published file's first N_PAIRS records, header unchanged, as a CSV in `tmp`."""
    with DATA.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:N_PAIRS + 1]
    out = tmp / "crows_first50.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *body])
    docs = [dict(zip(header, r, strict=True)) for r in body]
    assert [d[""] for d in docs] == [str(i) for i in range(N_PAIRS)]
    return out, docs


def _lm_eval_task() -> tuple[dict[str, Any], Any]:
    """lm-eval's crows_pairs_english config (its `!function` tags kept as names) and its
    utils module, both read from the installed package."""
    folder = resources.files("lm_eval") / "tasks" / "crows_pairs"

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    cfg = yaml.load((folder / "crows_pairs_english.yaml").read_text(), Loader=Loader)  # noqa: S506
    spec = importlib.util.spec_from_file_location("lm_eval_crows_utils", str(folder / "utils.py"))
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    return cfg, utils


def _fn(utils: Any, ref: str) -> Callable[..., Any]:
    module, name = ref.rsplit(".", 1)
    assert module == "utils", ref
    return getattr(utils, name)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    import biasaudit
    from biasaudit.backends import build_backend
    from biasaudit.methods.token_probability.metric import ar_full
    from biasaudit.spec.compose import compose

    tmp = tmp_path_factory.mktemp("crows_lm_eval")
    (tmp / "reports").mkdir()
    data, docs = _slice(tmp)

    # biasaudit: the shipped spec through the engine; the model instance is kept by the
    # backend factory, so lm-eval below gets the very weights the run scored with.
    run = biasaudit.run("crows_pairs_tp", overrides=[f"stimuli.source={data}", "stimuli.sample=null",
                                                     *isolation(tmp)])
    assert isinstance(run, biasaudit.RunResult)
    ours: dict[tuple[str, str], float] = {}
    tokens: dict[tuple[str, str], int] = {}
    for r in read_jsonl(run.run_dir / "responses.jsonl"):  # (the trail's header left out)
        assert r["status"] == "ok", r["error"]
        ours[(r["stimulus"], r["slot"])] = ar_full(r["output"])
        tokens[(r["stimulus"], r["slot"])] = len(r["output"]["token_ids"]) - 1  # after BOS
    config = compose([]).config
    backend = build_backend(config.model, config.runtime)

    # lm-eval: its task's requests, its HFLM (its own default prefix token), its scoring.
    cfg, utils = _lm_eval_task()
    assert cfg["output_type"] == "multiple_choice" and cfg["doc_to_text"] == ""
    assert cfg["target_delimiter"] == ""
    assert [m["aggregation"] for m in cfg["metric_list"] if m["metric"] == "pct_stereotype"] == ["mean"]
    doc_to_choice, process_results = _fn(utils, cfg["doc_to_choice"]), _fn(utils, cfg["process_results"])
    lm = HFLM(pretrained=backend.model, tokenizer=backend.tok, batch_size=16, device=backend.device)
    reqs = [Instance(request_type="loglikelihood", doc=d, arguments=("", cfg["target_delimiter"] + c),
                     idx=j, metadata=("crows_pairs_english", i, 1))
            for i, d in enumerate(docs) for j, c in enumerate(doc_to_choice(d))]
    got = lm.loglikelihood(reqs, disable_tqdm=True)
    theirs = {(d[""], slot): float(got[2 * i + k][0])
              for i, d in enumerate(docs) for k, slot in enumerate(("more", "less"))}
    per_doc = [process_results(d, [tuple(got[2 * i]), tuple(got[2 * i + 1])]) for i, d in enumerate(docs)]
    summary = json.loads((run.run_dir / "summary.json").read_text(encoding="utf-8"))
    return {"ours": ours, "tokens": tokens, "theirs": theirs, "per_doc": per_doc, "docs": docs,
            "metric": summary["metrics"]["bias_score"]}


def test_sentence_loglikelihoods_match_lm_eval(results: dict[str, Any]) -> None:
    ours, theirs = results["ours"], results["theirs"]
    assert set(ours) == set(theirs) and len(ours) == 2 * N_PAIRS
    tokens = results["tokens"]
    diffs = {k: abs(ours[k] - theirs[k]) for k in theirs}
    worst = max(diffs, key=lambda k: diffs[k] / tokens[k])
    print(f"max |log-likelihood diff| vs lm-eval {LM_EVAL_VERSION}: {max(diffs.values()):.2e}; "
          f"per token {diffs[worst] / tokens[worst]:.2e} at {worst}")
    assert all(diffs[k] <= LL_TOL_PER_TOKEN * tokens[k] for k in diffs), (
        worst, tokens[worst], ours[worst], theirs[worst])


def test_bias_score_equals_lm_eval_pct_stereotype(results: dict[str, Any]) -> None:
    theirs, per_doc, docs = results["theirs"], results["per_doc"], results["docs"]
    metric, tokens = results["metric"], results["tokens"]
    room = {d[""]: abs(theirs[(d[""], "more")] - theirs[(d[""], "less")])
            - LL_TOL_PER_TOKEN * (tokens[(d[""], "more")] + tokens[(d[""], "less")]) - ROUNDING
            for d in docs}
    closest = min(room, key=room.__getitem__)
    print(f"closest pair to a tie: {closest}, margin beyond tolerance and rounding {room[closest]:.4f}")
    assert room[closest] > 0, (
        f"pair {closest} is within the tolerance plus biasaudit's 3-decimal rounding of a tie, "
        "so the exact comparison would be decided by rounding: pick another slice")
    # lm-eval's aggregation of the task's per-document pct_stereotype: `mean`
    from lm_eval.api.metrics import mean

    pct = mean([r["pct_stereotype"] for r in per_doc])
    assert metric["params"]["mode"] == "ar_full"
    counts, score = metric["counts"], metric["estimates"]["score"]
    print(f"biasaudit bias_score {score['value']} vs lm-eval pct_stereotype x 100 = {100 * pct} "
          f"({counts['prefers_more']} of {counts['pairs']} pairs)")
    assert counts["pairs"] == counts["scored"] == len(per_doc) == N_PAIRS
    assert counts["ties"] == 0 and score["n"] == N_PAIRS
    assert counts["prefers_more"] == sum(int(r["pct_stereotype"]) for r in per_doc)
    assert score["value"] == pytest.approx(100 * pct, rel=0, abs=1e-9)
    # pair by pair, biasaudit's own per-pair outcomes: the same pairs prefer sent_more (no
    # two flips cancelling out), and its `more` slot is the file's sent_more in both directions
    items = {x["stimulus"]: x for x in metric["items"]}
    assert [items[d[""]]["more"] for d in docs] == [d["sent_more"] for d in docs]
    assert [items[d[""]]["outcome"] for d in docs] == [int(r["pct_stereotype"]) for r in per_doc]
