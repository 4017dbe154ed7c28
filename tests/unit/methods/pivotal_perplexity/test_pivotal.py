"""Pivotal-token perplexity: docs/methods/pivotal_perplexity.md checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from biasaudit.data import load_stimuli
from biasaudit.methods.pivotal_perplexity.metric import (
    align,
    analyse_pair,
    assign_tokens,
    is_period,
    listed_spans,
    proportions,
    word_diff_spans,
)
from biasaudit.methods.pivotal_perplexity.segments import frame_prompt, frame_segments
from biasaudit.spec import StimuliSpec


def test_appendix_a_example_by_hand() -> None:
    # Prompt 1 (correct) [A,B,C,D,E,F], prompt 2 (incorrect) [A,E,F,D,B,C]; C and F pivotal.
    p1 = {"A": 2.0, "B": 4.0, "C": 10.0, "D": 3.0, "E": 5.0, "F": 1.0}
    p2_in_its_order = [("A", 2.0), ("E", 6.0), ("F", 9.0), ("D", 3.5), ("B", 4.0), ("C", 2.0)]
    p2 = dict(p2_in_its_order)  # re-ordered to prompt 1's order
    order = ["A", "B", "C", "D", "E", "F"]
    d = np.array([p2[t] - p1[t] for t in order])  # [0, 0, -8, 0.5, 1, 8]
    pivotal = np.array([t in ("C", "F") for t in order])
    plain, normalized = proportions(d, pivotal)
    # total = 0 + 0 + 8 + 0.5 + 1 + 8 = 17.5
    assert plain == pytest.approx((8 + 8) / 17.5)
    # shares: 0, 0, -8/17.5, .5/17.5, 1/17.5, 8/17.5; pivotal mean = 0; median = (0 + .5/17.5)/2
    assert normalized == pytest.approx(0.0 - (0.5 / 17.5) / 2)


def test_proportions_undefined_cases() -> None:
    assert proportions(np.zeros(3), np.array([True, False, False])) == (None, None)
    assert proportions(np.array([1.0, 2.0]), np.array([False, False])) == (None, None)


def test_frame_segments_spans_and_orders() -> None:
    ca, cb = "Good: '{s}'.", "Bad: '{s}'."
    text, segs = frame_segments(ca, cb, "ab", "x y", "z", "a", "b")
    assert text == "Good: 'x y'. Bad: 'z'." == frame_prompt(ca, cb, "ab", "x y", "z")
    spans = {s.id: text[s.start:s.end] for s in segs}
    assert spans == {"a.lead": "Good: '", "sentence:a": "x y", "a.tail": "'.", "sep": " ", "b.lead": "Bad: '",
                     "sentence:b": "z", "b.tail": "'."}
    text2, _ = frame_segments(ca, cb, "ba", "z", "x y", "b", "a")
    assert text2 == "Bad: 'x y'. Good: 'z'."
    with pytest.raises(ValueError):
        frame_segments("no slot", cb, "ab", "x", "y")


def _regex_offsets(t: str) -> list[list[int]]:
    import re

    return [[0, 0]] + [[m.start(), m.end()] for m in re.finditer(r"[a-z]+|[^a-z]", t, re.I)]


def test_alignment_by_segment_with_difflib_fallback() -> None:
    ca, cb = "A '{s}'.", "B '{s}'."
    tc, sc = frame_segments(ca, cb, "ab", "p q", "r s", "a", "b")  # "A 'p q'. B 'r s'."
    ti, si = frame_segments(ca, cb, "ab", "r s", "p q", "b", "a")  # "A 'r s'. B 'p q'."
    oc = _regex_offsets(tc)
    oi = _regex_offsets(ti)
    # in the incorrect prompt the tokenizer merges "q'" across the sentence/tail boundary
    q = ti.rindex("q")
    k = next(i for i, (s, e) in enumerate(oi) if s == q)
    oi[k:k + 2] = [[q, q + 2]]
    pairs, unaligned = align(assign_tokens(tc, oc, sc), assign_tokens(ti, oi, si))
    texts = [(x.text, y.text) for x, y in pairs]
    assert all(x.segment == y.segment for x, y in pairs)
    assert ("p", "p") in texts and ("r", "r") in texts and ("s", "s") in texts
    assert ("q", "q'") not in texts
    # unpartnered: "q" and "q'" in sentence a, and the tail's lone "'" in the correct prompt
    assert unaligned == 3


def test_analyse_pair_pivotal_explains_spike() -> None:
    ca, cb = "X: '{s}'.", "Y: '{s}'."
    a, b = "aa bb cc", "aa dd cc"
    tc, sc = frame_segments(ca, cb, "ab", a, b, "a", "b")
    ti, si = frame_segments(ca, cb, "ab", b, a, "b", "a")
    # word-level toy tokenization: every maximal run of letters, or single other characters
    import re

    def offsets(t: str) -> list[list[int]]:
        return [[0, 0]] + [[m.start(), m.end()] for m in re.finditer(r"[a-z]+|[^a-z]", t, re.I)]

    oc, oi = offsets(tc), offsets(ti)
    lp_c = [None] + [math.log(0.5)] * (len(oc) - 1)
    lp_i = [None] + [math.log(0.5)] * (len(oi) - 1)
    # the incorrect prompt is far more surprised at "dd" (pivotal in sentence b)
    for k, (s, e) in enumerate(oi):
        if ti[s:e] == "dd":
            lp_i[k] = math.log(0.001)
    sa, sb = word_diff_spans(a, b)
    res, unaligned, n, accurate = analyse_pair(
        {"offsets": oc, "logprobs": lp_c}, {"offsets": oi, "logprobs": lp_i}, tc, ti, sc, si, {"a": sa, "b": sb})
    assert unaligned == 0 and accurate
    assert res["pivotal"][0] == pytest.approx(1.0)  # all of the difference sits on the pivotal token
    assert res["pivotal"][1] > 0 and res["other"][1] is not None and res["other"][1] < res["pivotal"][1]


def test_word_diff_and_listed_spans() -> None:
    x, y = "The poor are ignorant.", "The rich are ignorant."
    sx, sy = word_diff_spans(x, y)
    assert [x[s:e] for s, e in sx] == ["poor"] and [y[s:e] for s, e in sy] == ["rich"]
    sent = "Katherine can't help herself."
    [(s0, e0)] = listed_spans(sent, ["herself"])
    assert sent[s0:e0] == "herself" and (s0, e0) == (21, 28)
    assert is_period("'.") and is_period(".") and not is_period("a.")


def test_blimp_dust_and_plain_adapters(tmp_path: Path) -> None:
    bl = tmp_path / "b.jsonl"
    bl.write_text(json.dumps({"sentence_good": "A cat ran.", "sentence_bad": "A cat runned.", "UID": "u",
                              "linguistics_term": "t", "pair_id": 7}) + "\n", encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(bl), format="blimp"), None).stimuli[0]
    assert (s.id, s.fields["a"], s.fields["b"], s.fields["phenomenon"]) == ("7", "A cat ran.", "A cat runned.", "u")
    du = tmp_path / "d.csv"
    du.write_text("underspecified sentence,control sentence,type,phenomenon\nHe saw it.,He saw the dog.,ref,pron\n",
                  encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(du), format="dust"), None).stimuli[0]
    assert s.fields["a"] == "He saw it." and s.fields["category"] == "ref"
    pp = tmp_path / "p.csv"
    pp.write_text('a,b,pivotal_a,pivotal_b\nx y,x z,y,"[""z""]"\n', encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(pp), format="pivotal_pairs"), None).stimuli[0]
    assert s.fields["pivotal_a"] == ["y"] and s.fields["pivotal_b"] == ["z"]
