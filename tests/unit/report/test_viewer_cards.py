"""Issue 41, section 1 ("readable outputs"): a token-probability response card in
`biasaudit view` shows both sentences of the pair with their total log-probability, which
one won, and the per-token detail decoded to text (no byte-level `Ġ`), instead of raw JSON.

The expected totals are computed here from responses.jsonl as written (raw JSON): the sum
of each sentence's log-probs after the first token (`ar_full`, docs/methods/
token_probability.md), rounded as the metric's `decimals` says; the winner is the sentence
with the larger sum. They are also checked against the metric's own item difference in
summary.json. The browser half is `test_scoring_cards_render_in_chromium`."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import SCRIPT_BREAK, page_data, read_jsonl, tp_spec, verdict_code

HOSTILE_MORE = f"The {SCRIPT_BREAK} people are lazy."


def _byte_level(obj: dict[str, Any]) -> dict[str, Any]:
    """A scripted output rewritten as a byte-level BPE tokenizer (GPT-2, Llama 3) names
    its tokens: a word after a space is `Ġword`; no character offsets (HTTP scorers and
    older outputs have none), so the page must decode the token strings themselves."""
    out = dict(obj["output"])
    toks = out["tokens"]
    out["tokens"] = [toks[0], toks[1], *("\u0120" + t for t in toks[2:])]
    out.pop("offsets")
    return {**obj, "output": out}


def scored_run(workdir: Path, cli, n: int = 4) -> Path:  # type: ignore[no-untyped-def]
    """A scripted token-probability run (ar_full) whose first `more` sentence holds a
    `<script>` element and whose odd-numbered responses carry byte-level tokens."""
    spec = tp_spec(workdir, n)
    data = workdir / "pairs.csv"
    with data.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[1][1] = HOSTILE_MORE
    with data.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    trail = read_jsonl(run / "responses.jsonl")
    trail = [_byte_level(o) if i % 2 else o for i, o in enumerate(trail)]
    (run / "responses.jsonl").write_text("".join(json.dumps(o) + "\n" for o in trail), encoding="utf-8")
    return run


@pytest.mark.slow  # a run of its own
def test_token_probability_cards_show_sentences_totals_and_the_winner(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = scored_run(workdir, cli)
    trail = read_jsonl(run / "responses.jsonl")
    want: dict[tuple[str, str], dict[str, tuple[str, float]]] = {}
    for o in trail:
        lps = o["output"]["logprobs"]
        assert lps[0] is None and all(isinstance(x, float) for x in lps[1:])
        want.setdefault((o["cell"], o["stimulus"]), {})[o["slot"]] = (o["request"]["text"], math.fsum(lps[1:]))
    items = json.loads((run / "summary.json").read_text())["metrics"]["bias_score"]["items"]
    diffs = {(i["cell"], i["stimulus"]): i["diff"] for i in items}
    assert any("\u0120" in t for o in trail for t in o["output"]["tokens"])  # the file has byte-level tokens

    code, _, err = cli("view", str(run))
    assert code == 0, err
    html = (run / "viewer.html").read_text(encoding="utf-8")
    data = page_data(html)
    assert len(data["rows"]) == 2 * len(want) == 8
    for row in data["rows"]:
        pair = want[(row["cell"], row["stimulus"])]
        sc = row["scoring"]
        assert row["output"] == ""  # no raw JSON
        assert sc["rule"].startswith("bias_score (ar_full)")
        assert [s["slot"] for s in sc["sentences"]] == ["more", "less"]
        for s in sc["sentences"]:
            text, total = pair[s["slot"]]
            assert s["text"] == text
            assert s["total"] == pytest.approx(total, abs=0.5e-3 + 1e-9)  # the metric rounds to 3 decimals
            # each token readable: they spell the sentence, BOS uncounted, every other counted
            assert "".join(t["text"] for t in s["tokens"][1:]) == text
            assert not any("\u0120" in t["text"] for t in s["tokens"])
            assert [t["counted"] for t in s["tokens"]] == [False] + [True] * (len(s["tokens"]) - 1)
        more, less = pair["more"][1], pair["less"][1]
        assert abs(more - less) > 1e-3  # no tie in this sample: a winner to mark
        assert sc["winner"] == ("more" if more > less else "less")
        got = {s["slot"]: s["total"] for s in sc["sentences"]}
        assert got["more"] - got["less"] == pytest.approx(diffs[(row["cell"], row["stimulus"])], abs=1e-9)
    # the hostile sentence is data, as every other text: it cannot close the data element
    assert any(s["text"] == HOSTILE_MORE for r in data["rows"] for s in r["scoring"]["sentences"])
    assert html.count("<script") == 2 and "<script>alert" not in html
    assert "\u0120" not in json.dumps(data, ensure_ascii=False)


def test_token_strings_decode_to_text() -> None:
    from biasaudit.metrics.card import decode_token, token_texts
    from biasaudit.records.responses import ScoredTokens

    # byte-level BPE (GPT-2): `Ġ` a space, `Ċ` a newline, `Ã©` the two UTF-8 bytes of é
    assert [decode_token(t) for t in ["Ġcaf", "Ã©", "Ċ", "Hello"]] == [" caf", "é", "\n", "Hello"]
    assert [decode_token(t) for t in ["\u2581The", "##ing", "[CLS]", "<s>"]] == [" The", "ing", "[CLS]", "<s>"]
    out = ScoredTokens(tokens=["<s>", "A", "Ġcat"], logprobs=[None, -1.0, -2.0], offsets=[[0, 0], [0, 1], [2, 5]])
    assert token_texts(out, "A cat") == ["<s>", "A", " cat"]  # offsets: the text's own characters
    assert token_texts(out.model_copy(update={"offsets": []}), "A cat") == ["<s>", "A", " cat"]


def test_distributions_show_their_options_most_probable_first() -> None:
    from biasaudit.report.viewer.scoring import options

    got = options("next_token", {"top": [["ĠNo", -1.2], ["ĠYes", -0.5]]})
    assert [(o.option, o.prob) for o in got] == [(" Yes", pytest.approx(math.exp(-0.5))),
                                                  (" No", pytest.approx(math.exp(-1.2)))]
    got = options("choice", {"probs": {"A": 0.2, "B": 0.8}, "choice": "B"})
    assert [(o.option, o.prob) for o in got] == [("B", 0.8), ("A", 0.2)]
    assert options("next_token", {"top": "not a list"}) == []


@pytest.mark.slow  # a run of its own
def test_stereoset_cards_show_each_candidates_score(tmp_path: Path) -> None:
    """StereoSet (the shipped spec, answered by its self-test oracle): each card shows the
    three candidates with the mean log-prob of the candidate sentence's tokens (computed
    here from responses.jsonl: the tokens whose character span overlaps the candidate
    where it last occurs in the scored text, as Nadeem et al. score it), the stereotype or
    the anti-stereotype marked as the winner, and stereotype - anti = the metric's item
    difference."""
    from biasaudit.report.viewer import load_view
    from tests.unit.report.test_viewer_links import oracle_run

    run = oracle_run("stereoset", tmp_path)
    trail = read_jsonl(run / "responses.jsonl")
    items = json.loads((run / "summary.json").read_text())["metrics"]["stereoset"]["items"]
    diffs = {i["stimulus"]: i["diff"] for i in items}  # one cell: an item per stimulus
    data = load_view(run).model_dump(mode="json")
    fields = {r["stimulus"]: r["fields"] for r in data["rows"]}

    def mean_of(o: dict[str, Any]) -> float:
        text, cand = o["request"]["text"], fields[o["stimulus"]][o["slot"]]
        start = text.rfind(cand)
        assert start >= 0
        lps = [lp for (s, e), lp in zip(o["output"]["offsets"], o["output"]["logprobs"], strict=True)
               if lp is not None and e > s and s < start + len(cand) and e > start]
        return math.fsum(lps) / len(lps)

    want = {(o["cell"], o["stimulus"], o["slot"]): mean_of(o) for o in trail}
    assert len(data["rows"]) == len(trail) == 3 * len(diffs)
    winners = set()
    for row in data["rows"]:
        sc = row["scoring"]
        assert sc["measure"] == "mean log-prob per token" and row["output"] == ""
        got = {s["slot"]: s["total"] for s in sc["sentences"]}
        assert list(got) == ["stereotype", "anti_stereotype", "unrelated"]
        for slot, total in got.items():
            assert total == pytest.approx(want[(row["cell"], row["stimulus"], slot)], abs=1e-12)
        st, anti = got["stereotype"], got["anti_stereotype"]
        assert st - anti == pytest.approx(diffs[row["stimulus"]], abs=1e-12)
        assert sc["winner"] == ("stereotype" if st > anti else "anti_stereotype" if anti > st else "")
        winners.add(sc["winner"])
    assert winners == {"stereotype"}  # the planted oracle prefers every stereotype


def test_damaged_pairs_are_not_scored_and_say_why() -> None:
    from biasaudit.metrics.card import ScoredText
    from biasaudit.records.metric_result import MetricResult
    from biasaudit.records.responses import ScoredTokens
    from biasaudit.report.viewer.scoring import Scored, card_metrics, scorings

    def pair(more: list[float | None], less: list[float | None]) -> list[Scored]:
        return [Scored(row=i, unit=("c", "s", 0, 0), sentence=ScoredText(
                    slot=slot, text="a b", out=ScoredTokens(tokens=["<s>", "a", "b"], token_ids=[0, 1, 2], logprobs=lps)))
                for i, (slot, lps) in enumerate((("more", more), ("less", less)))]

    # the card comes from the metric's registry entry (the method's hook), found by the result's name
    rule = card_metrics({"bias_score": MetricResult(name="bias_score", headline="", estimates={},
                                                   params={"mode": "ar_full"})})
    assert [(mid, type(p).__name__) for mid, p, _ in rule] == [("bias_score", "BiasScoreParams")]
    got = scorings(pair([None, -1.0, None], [None, -1.0, -2.0]), rule, {})[0]
    assert [s.total for s in got.sentences] == [None, None] and got.winner == ""
    assert got.note.startswith("not scorable: a scored token has no log-prob")
    got = scorings(pair([None, -1.0, float("nan")], [None, -1.0, -2.0]), rule, {})[1]
    assert [s.total for s in got.sentences] == [None, None] and got.note == "not scorable: a total is not a finite number"
    got = scorings(pair([None, -1.0, -2.0], [None, -1.0, -2.0]), rule, {})[0]
    assert [s.total for s in got.sentences] == [-3.0, -3.0] and got.winner == "" and "tie" in got.note
    got = scorings(pair([None, -1.0, -2.0], [None, -1.0, -2.0])[:1], rule, {})[0]  # its other sentence not embedded
    assert got.sentences[0].total == -3.0 and "'less' sentence of this group is not embedded" in got.note


def test_a_metric_without_a_card_gets_the_generic_sum() -> None:
    """Pivotal perplexity registers no card (its perplexities compare aligned tokens, not
    sentence totals), and a metric whose package is not installed has none: its scored
    responses get the generic card, the sum over every token with a finite log-prob."""
    from biasaudit.metrics.card import ScoredText
    from biasaudit.records.metric_result import MetricResult
    from biasaudit.records.responses import ScoredTokens
    from biasaudit.registry import METRICS
    from biasaudit.report.viewer.scoring import Scored, card_metrics, scorings

    assert "pivotal_perplexity" in METRICS and METRICS.get("pivotal_perplexity").card is None
    res = {m: MetricResult(name=m, headline="", estimates={}) for m in ("pivotal_perplexity", "not_installed")}
    assert card_metrics(res) == []
    out = ScoredTokens(tokens=["<s>", "a", "b", "c"], logprobs=[None, -0.25, float("nan"), -1.5])
    got = scorings([Scored(row=0, unit=("c", "s", 0, 0), sentence=ScoredText(slot="x", text="a b c", out=out))], [], {})
    [sent] = got[0].sentences
    assert sent.total == -1.75 and got[0].winner == "" and got[0].rule.startswith("sum of every token")
    assert [t.counted for t in sent.tokens] == [False, True, False, True]  # BOS and the NaN are not summed
