"""Packed prefix-tree scoring: the tree layout by hand, and log-probs equal to a plain
forward pass of each sequence on small random models (Llama-style; Gemma-3-style with
sliding-window layers and logit soft-capping)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biasaudit.backends.packed_scoring import (
    _tensors,
    pack_rows,
    row_batches,
    score_rows,
    token_order_batches,
)


def test_shared_prefixes_are_one_node() -> None:
    seqs = [[1, 2, 3, 4], [1, 2, 3, 5], [1, 6], [1, 2, 3, 4]]
    (row,) = pack_rows(seqs, 100)
    # 1-2-3 shared, 4 and 5 branch from 3, 6 from 1; the duplicate adds nothing
    assert row.tokens == [1, 2, 3, 4, 5, 6]
    assert row.parents == [-1, 0, 1, 2, 2, 0]
    assert row.depths == [0, 1, 2, 3, 3, 1]
    members = dict(row.members)
    assert members[0] == [0, 1, 2, 3] and members[1] == [0, 1, 2, 4] and members[2] == [0, 5]
    assert members[3] == members[0]


def test_rows_split_at_the_node_limit_and_batches_respect_the_budget() -> None:
    seqs = [[1, 2, 3], [1, 2, 4], [1, 5, 6], [1, 7, 8]]
    rows = pack_rows(seqs, 5)
    # sorted: [1,2,3] [1,2,4] share 1-2 (4 nodes); [1,5,6] would make 6 > 5 -> new row
    assert [r.tokens for r in rows] == [[1, 2, 3, 4], [1, 5, 6, 7, 8]]
    assert sum(len(r.members) for r in rows) == 4
    assert [len(b) for b in row_batches(rows, 9)] == [1, 1]  # 2 rows x 5 padded nodes = 10 > 9
    assert [len(b) for b in row_batches(rows, 10)] == [2]


def test_balanced_rows_are_even_and_keep_the_row_count() -> None:
    seqs = [[1, 2, 3, 4], [1, 5, 6, 7], [1, 8, 9, 10], [1, 11]]
    # greedy at 10 nodes: 1-2-3-4, 5-6-7, 8-9-10 fill the first row (10), [1, 11] alone (2)
    assert [len(r.tokens) for r in pack_rows(seqs, 10)] == [10, 2]
    # the smallest limit that still gives two rows is 7: 1..7 and 1-8-9-10 + 11
    rows = pack_rows(seqs, 10, balance=True)
    assert [r.tokens for r in rows] == [[1, 2, 3, 4, 5, 6, 7], [1, 8, 9, 10, 11]]
    assert sorted(i for r in rows for i, _ in r.members) == [0, 1, 2, 3]


@pytest.mark.parametrize("seed", range(20))
def test_balanced_rows_never_add_rows_or_widen_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    seqs = [[1, *rng.integers(2, 6, size=int(rng.integers(1, 9))).tolist()] for _ in range(int(rng.integers(2, 40)))]
    cap = int(rng.integers(4, 30))
    greedy, even = pack_rows(seqs, cap), pack_rows(seqs, cap, balance=True)
    assert len(even) == len(greedy)
    assert max(len(r.tokens) for r in even) <= max(len(r.tokens) for r in greedy)
    assert sorted(i for r in even for i, _ in r.members) == list(range(len(seqs)))
    for r in even:  # every member's nodes spell its sequence
        for i, nodes in r.members:
            assert [r.tokens[n] for n in nodes] == seqs[i]


def test_batches_follow_token_order_and_the_budget() -> None:
    # a pair (a, d) of different lengths: token order puts it side by side, where a
    # length sort would put b and c between them
    ids = [[5, 6, 7, 8, 9, 10], [1, 2], [3, 4, 5], [5, 6, 7, 1]]
    items = ["a", "b", "c", "d"]
    # tokens + BOS: b 3, c 4, d 5, a 7 = 19
    assert token_order_batches(items, ids, budget=19) == [["b", "c", "d", "a"]]
    assert token_order_batches(items, ids, budget=18) == [["b", "c", "d"], ["a"]]
    assert token_order_batches(items, ids, budget=1) == [["b"], ["c"], ["d"], ["a"]]  # one each, never none


def test_mask_is_ancestors_and_leaves_are_not_fed() -> None:
    (row,) = pack_rows([[1, 2, 3, 4], [1, 2, 3, 5], [1, 6, 7]], 100)
    ids, pos, mask, cols = _tensors([row], pad_id=0)
    # fed nodes: those with children: 1, 2, 3, 6 (4, 5, 7 are last tokens)
    assert ids[0].tolist() == [1, 2, 3, 6]
    assert pos[0].tolist() == [0, 1, 2, 1]
    expected = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 1]], dtype=bool)
    assert (mask[0, 0].numpy() == expected).all()
    assert cols[0] == {0: 0, 1: 1, 2: 2, 5: 3}


@pytest.mark.parametrize("share", [True, False])
def test_mask_rows_are_exactly_each_nodes_ancestors(share: bool) -> None:
    # random tries, several per row when not sharing: brute-force ancestor sets per node
    rng = np.random.default_rng(7)
    seqs = [[1, *rng.integers(2, 5, size=int(rng.integers(1, 7))).tolist()] for _ in range(30)]
    rows = pack_rows(seqs, 25, share=share)
    ids, pos, mask, cols = _tensors(rows, pad_id=0)
    for b, r in enumerate(rows):
        fed = sorted(cols[b], key=cols[b].__getitem__)
        for node in fed:
            want, a = set(), node
            while a >= 0:
                want.add(cols[b][a])
                a = r.parents[a]
            got = set(np.nonzero(mask[b, 0, cols[b][node]].numpy())[0].tolist())
            assert got == want
            assert int(pos[b, cols[b][node]]) == r.depths[node]
        for k in range(len(fed), ids.shape[1]):  # padding: itself only
            assert np.nonzero(mask[b, 0, k].numpy())[0].tolist() == [k]


def _reference(model: torch.nn.Module, seq: list[int]) -> list[float]:
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([seq])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[t - 1, seq[t]]) for t in range(1, len(seq))]


def _tiny(kind: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        return LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2)).eval()
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=64,
                           layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=5.0)
    return Gemma3ForCausalLM(cfg).eval()


@pytest.mark.parametrize("kind,share,vocab_slice", [("llama", True, 4096), ("gemma3", True, 4096),
                                                   ("llama", False, 4096), ("llama", True, 10),
                                                   ("gemma3", True, 13)])
def test_packed_logprobs_equal_a_plain_forward_pass(kind: str, share: bool, vocab_slice: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a slice narrower than the 97-token vocabulary: the head runs in 10 (8) slices, the
    # last one partial, and the soft-capped Gemma head caps each slice
    from biasaudit.backends import packed_scoring

    monkeypatch.setitem(packed_scoring.VOCAB_SLICE, "cpu", vocab_slice)
    model = _tiny(kind)
    rng = np.random.default_rng(1)
    base = [2, *rng.integers(4, 97, size=9).tolist()]
    seqs = [base, [*base[:6], 50, *base[7:]], [*base[:3], 60, 61], [2, 70, 71, 72, 73], [2, 5], base[:4]]
    rows = pack_rows(seqs, 12 if share else 20, share=share, balance=True)
    if not share:  # plain packing: every sequence's tokens are its own nodes
        assert sum(len(r.tokens) for r in rows) == sum(len(q) for q in seqs)
    assert len(rows) >= 2  # the limit splits the batch, so padding columns are exercised too
    got: dict[int, list[float]] = {}
    for batch in row_batches(rows, 64):
        got.update(score_rows(model, batch, pad_id=0, device="cpu"))
    for i, seq in enumerate(seqs):
        assert got[i] == pytest.approx(_reference(model, seq), abs=1e-5)


def test_sliced_head_equals_the_full_head_and_leaves_unknown_tokens_nan(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit.backends import packed_scoring

    monkeypatch.setitem(packed_scoring.VOCAB_SLICE, "cpu", 16)  # 97 tokens: 7 slices, the last of 1
    model = _tiny("gemma3")  # soft-capped head
    torch.manual_seed(3)
    h = torch.randn(5, 32)
    pred = torch.tensor([0, 0, 2, 4, 1])
    tok = torch.tensor([0, 96, 15, 16, 97])  # slice edges, and one id past the head
    lse, target = packed_scoring._head_logsumexp(model, h, pred, tok)
    with torch.inference_mode():
        full = model.get_output_embeddings()(h).double()
    cap = model.config.final_logit_softcapping
    full = torch.tanh(full / cap) * cap
    assert lse.double().tolist() == pytest.approx(torch.logsumexp(full, -1).tolist(), abs=1e-5)
    assert target[:4].double().tolist() == pytest.approx(full[pred[:4], tok[:4]].tolist(), abs=1e-5)
    assert torch.isnan(target[4])
