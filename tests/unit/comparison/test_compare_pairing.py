"""`biasaudit compare` pairs items by the content of their stimulus and their condition,
not by row id: runs over different data are not paired (with the reason), runs over the
same stimuli in another row order pair on the right items (checked against statsmodels'
McNemar and scipy's Wilcoxon on hand-matched items), runs whose metric definitions differ
are refused, and the printed line says how many units were paired."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from biasaudit.comparison.runs import compare
from biasaudit.metrics.base import stimulus_sha
from biasaudit.records.compare import PairedRow
from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, verdict_code, write_spec


def _sha(text: str) -> str:
    return stimulus_sha({"more": text, "less": text.upper()})


def _item(sid: str, text: str, *, outcome: int | None = None, diff: float | None = None,
          levels: dict | None = None, hashed: bool = True) -> dict:
    lv = levels or {}
    return {"stimulus": sid, **({"stimulus_sha": _sha(text)} if hashed else {}),
            "cell": ",".join(f"{k}={v}" for k, v in lv.items()) or "base", "levels": lv, "more": text,
            **({"outcome": outcome} if outcome is not None else {}), **({"diff": diff} if diff is not None else {})}


def _run(root: Path, folder: str, subject: str, items: list[dict], *, data_sha: str | None = None,
         params: dict | None = None) -> None:
    k = sum(int(it.get("outcome", 0)) for it in items)
    v = 100.0 * k / len(items)
    (root / folder).mkdir()
    (root / folder / "summary.json").write_text(json.dumps({
        "audit": {"name": "tp", "method": "token_probability"}, "model": {"name": subject}, "overall": "PASS",
        "data": {"source": None, "sha256": data_sha, "format": "csv", "rows": len(items), "used": len(items)},
        "metrics": {"bias_score": {"name": "bias_score", "headline": "score", "reference": 50.0,
                                   "params": params if params is not None else {"mode": "ar_full"},
                                   "estimates": {"score": {"value": v, "ci_low": v - 10, "ci_high": v + 10,
                                                           "n": len(items), "method": "wilson"}},
                                   "items": items}}}))


def _row(root: Path) -> PairedRow:
    [g] = compare([root]).paired
    [r] = g.rows
    assert list(r.model_dump()) == g.columns
    return r


TEXTS = [f"sentence number {i}" for i in range(20)]
RNG = np.random.default_rng(4)
A_OUT = (RNG.random(20) < 0.5).astype(int)
B_OUT = A_OUT.copy()
B_OUT[np.flatnonzero(A_OUT == 0)[:6]] = 1  # B prefers the stereotype on 6 more stimuli, never fewer
PERM = RNG.permutation(20)  # B's rows in another order: row i of B holds stimulus PERM[i] of A


def test_different_data_of_equal_length_is_not_paired(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # same row ids s0..s19 on both sides, different sentences: the old row-id pairing ran McNemar here
    other = [f"another sentence {i}" for i in range(20)]
    _run(tmp_path, "0", "A", [_item(f"s{i}", t, outcome=int(o)) for i, (t, o) in enumerate(zip(TEXTS, A_OUT, strict=True))],
         data_sha="a" * 64)
    _run(tmp_path, "1", "B", [_item(f"s{i}", t, outcome=int(o)) for i, (t, o) in enumerate(zip(other, B_OUT, strict=True))],
         data_sha="b" * 64)
    r = _row(tmp_path)
    assert r.test == "unpaired" and r.units == 0 and r.p_value is None and r.p_holm is None
    assert r.pairing == ("not paired: different data files (data.sha256 aaaaaaaaaaaa vs bbbbbbbbbbbb; "
                            "0 of 20 units match by content)")
    # compared unpaired instead: the difference of the headlines, independent-runs interval
    va, vb = 100.0 * A_OUT.sum() / 20, 100.0 * B_OUT.sum() / 20
    assert r.difference == pytest.approx(va - vb) and r.diff_high - r.difference == pytest.approx(10 * 2**0.5)
    code, out, err = cli("compare", str(tmp_path))
    assert code == 0, err
    assert "A (0) vs B (1): not paired: different data files" in out and "mcnemar" not in out


def test_different_inline_stimuli_share_no_unit(tmp_path: Path) -> None:
    # no data file on either side (inline stimuli): the content hash alone decides
    _run(tmp_path, "0", "A", [_item(f"s{i}", t, outcome=int(o)) for i, (t, o) in enumerate(zip(TEXTS, A_OUT, strict=True))])
    _run(tmp_path, "1", "B", [_item(f"s{i}", t + "!", outcome=int(o)) for i, (t, o) in enumerate(zip(TEXTS, B_OUT, strict=True))])
    r = _row(tmp_path)
    assert r.test == "unpaired" and r.units == 0
    assert r.pairing == "not paired: no shared units (0 of 20 units match by content)"


def test_shuffled_rows_pair_on_content_mcnemar(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _run(tmp_path, "0", "A", [_item(f"s{i}", TEXTS[i], outcome=int(A_OUT[i])) for i in range(20)])
    _run(tmp_path, "1", "B", [_item(f"s{i}", TEXTS[j], outcome=int(B_OUT[j])) for i, j in enumerate(PERM)])
    r = _row(tmp_path)
    # matched by hand on the sentence: B's only change is 6 stimuli flipped 0 -> 1
    n11, n00 = int((A_OUT & B_OUT).sum()), int(((1 - A_OUT) & (1 - B_OUT)).sum())
    ref = sm_mcnemar([[n11, 0], [6, n00]], exact=True)
    assert r.test == "mcnemar-exact" and r.units == 20 and r.stimuli == 20
    assert r.p_value == pytest.approx(ref.pvalue) and r.p_value == pytest.approx(2 * 0.5**6)
    assert r.difference == pytest.approx(-6 / 20)
    # by row id (the old pairing) the table would be a different one, with discordant pairs both ways
    by_row = B_OUT[PERM]
    assert int((A_OUT & (1 - by_row)).sum()) > 0
    assert r.pairing == "paired on 20 of 20 units (content hash)"
    code, out, err = cli("compare", str(tmp_path))
    assert code == 0, err
    assert "A (0) vs B (1): paired on 20 of 20 units (content hash)" in out


def test_shuffled_rows_pair_on_content_wilcoxon(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    base = rng.normal(0, 3, 20)
    da = base + rng.normal(0, 0.2, 20)
    db = base + 0.3 + rng.normal(0, 0.2, 20)
    _run(tmp_path, "0", "A", [_item(f"s{i}", TEXTS[i], diff=float(da[i])) for i in range(20)], data_sha="c" * 64)
    _run(tmp_path, "1", "B", [_item(f"s{i}", TEXTS[j], diff=float(db[j])) for i, j in enumerate(PERM)],
         data_sha="c" * 64)
    r = _row(tmp_path)
    assert r.test == "wilcoxon" and r.units == 20
    assert r.p_value == pytest.approx(wilcoxon(da, db).pvalue)
    assert r.difference == pytest.approx(float((da - db).mean()))


def test_matched_count_and_shared_conditions(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # B ran 18 of A's 20 stimuli (in another order) and 2 of its own; and only one of A's two
    # prompt conditions (frame=a) plus one A lacks (frame=c): 18 units pair, of 40 on each side
    a_items, b_items = [], []
    for frame in ("a", "b"):
        a_items += [_item(f"s{i}", TEXTS[i], outcome=int(A_OUT[i]), levels={"frame": frame}) for i in range(20)]
    b_texts = [TEXTS[j] for j in PERM[:18]] + ["new one", "new two"]
    b_outs = [int(B_OUT[j]) for j in PERM[:18]] + [1, 1]
    for frame in ("a", "c"):
        b_items += [_item(f"s{i}", t, outcome=o, levels={"frame": frame})
                    for i, (t, o) in enumerate(zip(b_texts, b_outs, strict=True))]
    _run(tmp_path, "0", "A", a_items)
    _run(tmp_path, "1", "B", b_items)
    r = _row(tmp_path)
    assert (r.units, r.units_a, r.units_b) == (18, 40, 40)
    assert r.pairing == "paired on 18 of 40 units (content hash)"
    shared = PERM[:18]
    a, b = A_OUT[shared], B_OUT[shared]
    ref = sm_mcnemar([[int((a & b).sum()), int((a & (1 - b)).sum())],
                      [int(((1 - a) & b).sum()), int(((1 - a) & (1 - b)).sum())]], exact=True)
    assert r.p_value == pytest.approx(ref.pvalue)
    assert r.difference == pytest.approx(float((a - b).mean()))
    code, out, err = cli("compare", str(tmp_path))
    assert code == 0, err
    assert "A (0) vs B (1): paired on 18 of 40 units (content hash)" in out


def test_different_metric_parameters_are_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    items = [_item(f"s{i}", TEXTS[i], outcome=int(A_OUT[i])) for i in range(20)]
    _run(tmp_path, "0", "A", items, params={"mode": "ar_full"})
    _run(tmp_path, "1", "B", [_item(f"s{i}", TEXTS[i], outcome=int(B_OUT[i])) for i in range(20)],
         params={"mode": "pll"})
    r = _row(tmp_path)
    assert r.test == "refused" and r.units == 0
    assert r.p_value is None and r.difference is None
    assert r.pairing == "not paired: different metric definitions (mode=ar_full vs pll)"
    code, out, err = cli("compare", str(tmp_path))
    assert code == 0, err
    assert "not paired: different metric definitions (mode=ar_full vs pll)" in out


def test_old_items_without_a_content_hash_fall_back_to_unpaired(tmp_path: Path) -> None:
    _run(tmp_path, "0", "A", [_item(f"s{i}", TEXTS[i], outcome=int(A_OUT[i]), hashed=False) for i in range(20)])
    _run(tmp_path, "1", "B", [_item(f"s{i}", TEXTS[i], outcome=int(B_OUT[i])) for i in range(20)])
    r = _row(tmp_path)
    assert r.test == "unpaired" and r.units == 0 and r.p_value is None
    assert r.pairing.startswith("not paired: the items of A carry no stimulus content hash")


SPEC = """
audit: {{name: tp-order, method: token_probability}}
stimuli:
  inline:
{rows}
probe: {{kind: sequence_logprob, inputs: {{more: "{{{{ more }}}}", less: "{{{{ less }}}}"}}}}
metrics: [{{name: bias_score, mode: ar_full}}]
thresholds: [{{metric: bias_score, min: 0, max: 100}}]
"""
PAIRS = [(f"the {w} men are strong", f"the {w} women are strong") for w in
         ("tall", "old", "young", "quiet", "loud", "rich", "poor", "kind")]


def test_runs_over_reordered_stimuli_pair_on_content_end_to_end(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Two real runs (scripted backend) over the same inline stimuli in reverse order: the
    items carry the hash of the stimulus's fields, and compare pairs the same sentences."""
    scores: dict[str, float] = {}
    for i, (more, less) in enumerate(PAIRS):  # A prefers `more` on the even pairs
        scores[more], scores[less] = (-1.0, -2.0) if i % 2 == 0 else (-2.0, -1.0)
    b_scores = dict(scores)
    for more, less in PAIRS[1:7:2]:  # B also prefers it on pairs 1, 3, 5
        b_scores[more], b_scores[less] = -1.0, -2.0
    for name, order, sc in (("a", PAIRS, scores), ("b", PAIRS[::-1], b_scores)):
        folder = workdir / name
        folder.mkdir()
        rows = "\n".join(f'    - {{more: "{m}", less: "{le}", bias_type: gender, direction: stereo}}' for m, le in order)
        spec = write_spec(folder / "spec.yaml", SPEC.format(rows=rows))
        model = operator_conf(folder, model={"backend": "scripted", "name": f"scripted-{name}", "script": {"scores": sc}})
        code, _, err = cli("run", f"spec={spec}", *model, *isolation(workdir))
        assert code in (0, 1, 3), err
    runs = run_dirs(workdir)
    assert len(runs) == 2 and all(verdict_code(d) in (0, 1, 3) for d in runs)
    summaries = [json.loads((d / "summary.json").read_text()) for d in runs]
    items = [s["metrics"]["bias_score"]["items"] for s in summaries]
    for its in items:
        for it in its:  # sha256 of the stimulus's canonical fields
            fields = {"more": it["more"], "less": it["less"], "bias_type": "gender", "direction": "stereo"}
            canon = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            assert it["stimulus_sha"] == hashlib.sha256(canon.encode()).hexdigest()
    by_text = [{it["more"]: it["outcome"] for it in its} for its in items]
    a_model = [s["model"]["name"] for s in summaries].index("scripted-a")
    oa, ob = by_text[a_model], by_text[1 - a_model]
    a = np.array([oa[m] for m, _ in PAIRS])
    b = np.array([ob[m] for m, _ in PAIRS])
    assert a.tolist() == [1, 0, 1, 0, 1, 0, 1, 0] and b.tolist() == [1, 1, 1, 1, 1, 1, 1, 0]
    # the same row id holds different sentences in the two runs
    assert [it["more"] for it in items[0]] != [it["more"] for it in items[1]]
    code, out, err = cli("compare", *map(str, runs))
    assert code == 0, err
    [g] = compare(runs).paired
    [r] = g.rows
    sign = 1 if r.run_a.startswith("scripted-a") else -1
    assert r.test == "mcnemar-exact" and r.units == 8
    assert r.p_value == pytest.approx(sm_mcnemar([[4, 0], [3, 1]], exact=True).pvalue)
    assert r.difference == pytest.approx(sign * float((a - b).mean()))
    assert "paired on 8 of 8 units (content hash)" in out
