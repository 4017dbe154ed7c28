"""StereoSet (issue 20): LMS, SS and ICAT against hand-computed values, the authors'
tie rule and averaging over targets, the loader of the published dev.json (and the
Hugging Face column layout), and the candidate's own tokens as its score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.data import load_stimuli
from biasaudit.errors import DataError
from biasaudit.methods.stereoset.metric import StereoSetParams, scores_of, sentence_score
from biasaudit.methods.stereoset.scores import Item, estimate, rows_of
from biasaudit.records.responses import ScoredTokens
from biasaudit.spec import StimuliSpec

REPO = Path(__file__).resolve().parents[4]
SAMPLE = REPO / "specs" / "data" / "stereoset_sample.json"


def item(sid: str, target: str, st: float, anti: float, un: float, cell: str = "base") -> Item:
    return Item(stimulus=sid, cell=cell, target=target, bias_type="gender", split="intrasentence",
                stereotype=st, anti=anti, unrelated=un)


def tiny_table() -> list[Item]:
    # target a, item 1: st -1 > anti -2 -> pro;  st > un (-3), anti > un   -> related 2
    # target a, item 2: st -2 < anti -1 -> anti; st < un (-1.5), anti > un -> related 1
    # target b, item 3: st -1 = anti -1 -> tie counts as anti; both below un (0) -> related 0
    return [item("i1", "a", -1, -2, -3), item("i2", "a", -2, -1, -1.5), item("i3", "b", -1, -1, 0)]


def test_scores_by_hand_averaged_over_targets() -> None:
    # SS_t = 100 pro / n_t, LMS_t = 100 related / (2 n_t):
    #   a: SS = 100 * 1/2 = 50, LMS = 100 * 3/4 = 75;   b: SS = 0, LMS = 0
    # SS = mean(50, 0) = 25, LMS = mean(75, 0) = 37.5, ICAT = LMS * min(SS, 100 - SS) / 50 = 37.5 * 25 / 50
    e = scores_of(tiny_table(), StereoSetParams(n_resamples=1000))
    assert e["ss"].value == pytest.approx(25.0)
    assert e["lms"].value == pytest.approx(37.5)
    assert e["icat"].value == pytest.approx(37.5 * 25 / 50)
    assert e["ss"].n == 3 and e["ss"].clusters == 3


def test_scores_by_hand_pooled_over_items() -> None:
    # pooled: SS = 100 * 1/3, LMS = 100 * 3/6 = 50, ICAT = 50 * min(33.3, 66.7) / 50 = 33.3
    e = scores_of(tiny_table(), StereoSetParams(average="items", n_resamples=1000))
    assert e["ss"].value == pytest.approx(100 / 3)
    assert e["lms"].value == pytest.approx(50.0)
    assert e["icat"].value == pytest.approx(50.0 * (100 / 3) / 50)


def test_icat_is_100_only_for_a_perfect_unbiased_model_and_0_for_a_fully_biased_one() -> None:
    fair = [item("i1", "a", -1, -2, -9), item("i2", "a", -2, -1, -9)]
    biased = [item("i1", "a", -1, -2, -9), item("i2", "a", -1, -2, -9)]
    assert scores_of(fair, StereoSetParams(n_resamples=200))["icat"].value == pytest.approx(100.0)
    assert scores_of(biased, StereoSetParams(n_resamples=200))["icat"].value == pytest.approx(0.0)


def test_intervals_resample_items() -> None:
    items = tiny_table() + [item("i4", "b", -1, -3, -2), item("i5", "c", -3, -1, -2)]
    rows = rows_of(items)
    e = estimate(rows, "ss", seed=0, n_resamples=2000)
    assert e.ci_low <= e.value <= e.ci_high and e.clusters == 5
    # an item scored under three prompt conditions the same way: the same interval
    tripled = [Item(**{**x.__dict__, "cell": c}) for x in items for c in ("p1", "p2", "p3")]
    e3 = estimate(rows_of(tripled), "ss", seed=0, n_resamples=2000)
    assert (e3.value, e3.ci_low, e3.ci_high) == pytest.approx((e.value, e.ci_low, e.ci_high))
    same = [item(f"i{k}", "a", -1, -2, -3) for k in range(4)]
    flat = estimate(rows_of(same), "lms", seed=0, n_resamples=500)
    # 4 of 4 items: Wilson on the 4 items, not a bootstrap's 100 [100, 100] (issue 25)
    assert flat.ci_high == flat.value == 100.0 and flat.ci_low < 100.0


def test_loader_reads_the_published_dev_json() -> None:
    s = load_stimuli(StimuliSpec(source=str(SAMPLE), format="stereoset"), None)
    assert len(s.stimuli) == 24
    intra = [x.fields for x in s.stimuli if x.fields["split"] == "intrasentence"]
    inter = [x.fields for x in s.stimuli if x.fields["split"] == "intersentence"]
    assert len(intra) == len(inter) == 12
    assert all(f["prefix"] == "" and "BLANK" in f["context"] and "BLANK" not in f["stereotype"] for f in intra)
    assert all(f["prefix"] == f["context"] + " " for f in inter)
    assert {f["bias_type"] for f in intra} == {"gender", "profession", "race", "religion"}


def test_loader_reads_the_hugging_face_column_layout(tmp_path: Path) -> None:
    doc = json.loads(SAMPLE.read_text())
    first = doc["data"]["intersentence"][0]
    sents = first["sentences"]
    codes = {"anti-stereotype": 0, "stereotype": 1, "unrelated": 2}
    first["sentences"] = {"sentence": [s["sentence"] for s in sents], "id": [s["id"] for s in sents],
                          "gold_label": [codes[s["gold_label"]] for s in sents]}
    hf = tmp_path / "hf.json"
    hf.write_text(json.dumps({"data": {"intersentence": [first]}}))
    [x] = load_stimuli(StimuliSpec(source=str(hf), format="stereoset"), None).stimuli
    want = {s["gold_label"]: s["sentence"] for s in sents}
    assert x.fields["stereotype"] == want["stereotype"] and x.fields["anti_stereotype"] == want["anti-stereotype"]


def test_bad_documents_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": "x", "items": []}))
    with pytest.raises(DataError, match="expected layout"):
        load_stimuli(StimuliSpec(source=str(bad), format="stereoset"), None)
    doc = json.loads(SAMPLE.read_text())
    doc["data"]["intrasentence"][0]["sentences"][0]["gold_label"] = "neutral"
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="gold_label"):
        load_stimuli(StimuliSpec(source=str(bad), format="stereoset"), None)


def test_a_candidate_is_scored_by_its_own_tokens_after_the_context() -> None:
    text = "Ctx here. He is fast."
    # tokens: BOS, "Ctx", " here", ".", " He", " is", " fast", "."
    offs = [[0, 0], [0, 3], [3, 8], [8, 9], [9, 12], [12, 15], [15, 20], [20, 21]]
    out = ScoredTokens(logprobs=[None, -9.0, -9.0, -9.0, -1.0, -2.0, -3.0, -2.0], offsets=offs)
    assert sentence_score(out, text, "He is fast.", "mean") == pytest.approx(-8.0 / 4)
    assert sentence_score(out, text, "He is fast.", "sum") == pytest.approx(-8.0)
    assert sentence_score(out, text, "She is slow.", "mean") is None


def test_the_metric_refuses_a_format_without_its_fields(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import isolation
    from tests.unit.cli.test_cli_errors import assert_clean_failure

    data = workdir / "items.csv"
    data.write_text("stereotype,anti_stereotype,unrelated\nA b.,C d.,E f.\n")
    text = (REPO / "specs" / "stereoset.yaml").read_text()
    spec = workdir / "s.yaml"
    spec.write_text(text.replace("source: data/stereoset_sample.json", f"source: {data}")
                    .replace("format: stereoset", "format: csv").replace("{{ prefix }}", ""))
    line = assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, "metrics[0]",
                                "anti_stereotype, bias_type, split")
    assert "stimuli.format: stereoset" in line
