"""Packed prefix-tree scoring for causal LMs: many sequences in a few rows, no padding
inside a row, and each shared prefix computed once.

A batch of token sequences (all starting with BOS) is sorted, so sequences that share a
prefix are neighbours, and laid into rows as prefix trees: a token shared by several
sequences (BOS, a minimal pair's common start, a shared frame) is one node, every
other token its own node. Each node attends to itself and its ancestors (a 4D mask)
and sits at its depth (position ids), so the model computes for every node exactly what
it computes for that token in the sequence alone. A node predicts each of its
children's tokens: one log-normaliser per node, one gathered logit per edge, and the
vocabulary projection only for nodes that predict something (leaves predict nothing),
in slices of the vocabulary (see `VOCAB_SLICE`).

Why by hand: transformers packs sequences (position ids reset) but does not share
prefixes between them, and lm-evaluation-harness pads. On CrowS-Pairs-style pairs the
tree holds about a quarter fewer tokens than the sequences; see `make bench`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Row:
    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    children: list[dict[int, int]] = field(default_factory=list)
    """node -> {token id: child node}: the trie, to find the shared prefix of a new sequence."""
    members: list[tuple[int, list[int]]] = field(default_factory=list)
    """(sequence index, node of each of its tokens)."""
    share: bool = True
    """False: every sequence gets nodes of its own (plain packing; `make bench` compares)."""

    def cost(self, seq: Sequence[int]) -> int:
        """New nodes `seq` would add to this row."""
        return len(seq) - self._shared(seq)[0]

    def _shared(self, seq: Sequence[int]) -> tuple[int, list[int]]:
        nodes: list[int] = []
        if not self.share or not self.tokens or not seq or self.tokens[0] != seq[0]:
            return 0, nodes  # a new root (a row may hold several trees)
        node = 0
        nodes.append(0)
        for tok in seq[1:]:
            nxt = self.children[node].get(tok)
            if nxt is None:
                break
            node = nxt
            nodes.append(node)
        return len(nodes), nodes

    def add(self, index: int, seq: Sequence[int]) -> None:
        n, nodes = self._shared(seq)
        parent = nodes[-1] if nodes else -1
        for tok in seq[n:]:
            node = len(self.tokens)
            self.tokens.append(tok)
            self.parents.append(parent)
            self.depths.append(self.depths[parent] + 1 if parent >= 0 else 0)
            self.children.append({})
            if parent >= 0:
                self.children[parent][tok] = node
            nodes.append(node)
            parent = node
        self.members.append((index, nodes))


# Beyond this many rows a short last row wastes under 1/32 of a pass, less than the
# re-packings cost on a GPU (where a pass holds thousands of rows): rows stay greedy.
BALANCE_MAX_ROWS = 32


def pack_rows(seqs: Sequence[Sequence[int]], row_tokens: int, *, share: bool = True,
              balance: bool = False) -> list[Row]:
    """Sequences laid into prefix-tree rows of at most `row_tokens` nodes (a longer
    sequence gets a row of its own). Sorted by token ids first, so the sequences that
    share a prefix land in the same row, next to each other.

    With `balance`, the rows are as even as the same number of rows allows: the rows of
    one forward pass are padded to the longest, and greedy filling leaves a short last
    row (on the CrowS-Pairs sample: six rows of ~110 nodes and one of 22, all padded to
    114, 17% of the pass wasted). The smallest limit that still gives that many rows
    is found by bisection (a few re-packings of at most a batch's tokens: microseconds
    next to the forward pass)."""
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    rows = _fill(seqs, order, row_tokens, share)
    if not balance or not 2 <= len(rows) <= BALANCE_MAX_ROWS:
        return rows
    lo, hi = -(-sum(len(r.tokens) for r in rows) // len(rows)), row_tokens
    best = rows
    while lo < hi:
        mid = (lo + hi) // 2
        trial = _fill(seqs, order, mid, share)
        if len(trial) <= len(rows):
            best, hi = trial, mid
        else:
            lo = mid + 1
    return best


def _fill(seqs: Sequence[Sequence[int]], order: list[int], row_tokens: int, share: bool) -> list[Row]:
    """Rows filled in `order`, a new row when the next sequence would pass `row_tokens` nodes."""
    rows: list[Row] = []
    row = Row(share=share)
    for i in order:
        if row.tokens and len(row.tokens) + row.cost(seqs[i]) > row_tokens:
            rows.append(row)
            row = Row(share=share)
        row.add(i, seqs[i])
    if row.tokens:
        rows.append(row)
    return rows


def token_order_batches(items: Sequence[T], ids: Sequence[Sequence[int]], budget: int) -> list[list[T]]:
    """Batches for packed scoring: items in the order of their token ids (so texts that
    share a prefix, like the two sentences of a minimal pair, fall in one batch and one
    prefix tree), cut before `budget` tokens (BOS counted); the trees need fewer."""
    order = sorted(range(len(items)), key=lambda i: list(ids[i]))
    out: list[list[T]] = []
    batch: list[T] = []
    used = 0
    for i in order:
        n = len(ids[i]) + 1
        if batch and used + n > budget:
            out.append(batch)
            batch, used = [], 0
        batch.append(items[i])
        used += n
    if batch:
        out.append(batch)
    return out


def row_batches(rows: list[Row], batch_tokens: int) -> list[list[Row]]:
    """Rows grouped into forward passes of at most `batch_tokens` padded nodes (rows are
    padded to the longest of their pass); rows sorted by size so neighbours match."""
    rows = sorted(rows, key=lambda r: len(r.tokens))
    out: list[list[Row]] = []
    cur: list[Row] = []
    for r in rows:
        if cur and (len(cur) + 1) * len(r.tokens) > batch_tokens:
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    return out


def _fed(row: Row) -> tuple[list[int], dict[int, int]]:
    """The nodes a forward pass needs: those with children. A childless node (the last
    token of a sequence) predicts nothing and nothing attends to it, so it is not fed,
    as the padded path does not feed each row's last token either."""
    fed = [i for i, ch in enumerate(row.children) if ch]
    return fed, {node: k for k, node in enumerate(fed)}


def _tensors(rows: list[Row], pad_id: int) -> tuple[Any, Any, Any, list[dict[int, int]]]:
    """input ids [R, L], position ids [R, L] and the boolean ancestor mask [R, 1, L, L]
    (True: may attend) over each row's fed nodes, and each row's node -> column map. A
    padding column attends only to itself (no fully masked row)."""
    import numpy as np
    import torch

    feds = [_fed(r) for r in rows]
    width = max(1, max(len(f) for f, _ in feds))
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    pos = np.zeros((len(rows), width), dtype=np.int64)
    parent = np.full((len(rows), width), -1, dtype=np.int64)  # column of each fed node's parent
    for b, (r, (fed, col)) in enumerate(zip(rows, feds, strict=True)):
        n = len(fed)
        ids[b, :n] = [r.tokens[i] for i in fed]
        pos[b, :n] = [r.depths[i] for i in fed]
        parent[b, :n] = [col[r.parents[i]] if r.parents[i] >= 0 else -1 for i in fed]
    # A node's mask row is its parent's plus itself. Filled one depth at a time for all
    # rows at once (a parent sits one level up, so its row is complete): as many numpy
    # steps as the longest sequence, not one per node (a GPU pass holds ~10^5 nodes).
    mask = np.zeros((len(rows), width, width), dtype=bool)
    diag = np.arange(width)
    mask[:, diag, diag] = True  # padding columns too: no fully masked row
    real = np.arange(width)[None, :] < np.array([len(f) for f, _ in feds])[:, None]
    for depth in range(1, int(pos.max()) + 1):
        rb, k = np.nonzero((pos == depth) & real & (parent >= 0))
        if rb.size:
            mask[rb, k] = mask[rb, parent[rb, k]]
            mask[rb, k, k] = True
    return torch.from_numpy(ids), torch.from_numpy(pos), torch.from_numpy(mask).unsqueeze(1), [c for _, c in feds]


def score_rows(model: Any, rows: list[Row], pad_id: int, device: str) -> dict[int, list[float]]:
    """log p(token_t | tokens_<t) for t >= 1 of every sequence in `rows`, by sequence index."""
    import torch

    ids, pos, mask, cols = _tensors(rows, pad_id)
    width = ids.shape[1]
    # edges: (flat column of the predicting node, target token); each sequence's slice of them
    edge_pred: list[int] = []
    edge_tok: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for b, r in enumerate(rows):
        for index, nodes in r.members:
            start = len(edge_pred)
            for prev, node in zip(nodes[:-1], nodes[1:], strict=True):
                edge_pred.append(b * width + cols[b][prev])
                edge_tok.append(r.tokens[node])
            spans.append((index, start, len(edge_pred)))
    if not edge_pred:
        return {index: [] for index, _s, _e in spans}
    # only real (fed) columns go through the vocabulary projection
    real = sorted({e for e in edge_pred})
    where = {flat: k for k, flat in enumerate(real)}
    with torch.inference_mode():
        body = model.get_decoder()
        hidden = body(input_ids=ids.to(device), position_ids=pos.to(device),
                      attention_mask=mask.to(device), use_cache=False).last_hidden_state
        h = hidden.reshape(-1, hidden.shape[-1])[torch.tensor(real, device=hidden.device)]
        pred = torch.tensor([where[e] for e in edge_pred], dtype=torch.long, device=h.device)
        tok = torch.tensor(edge_tok, dtype=torch.long, device=h.device)
        lse, target = _head_logsumexp(model, h, pred, tok)
        lp = (target - lse[pred]).double().cpu().tolist()
    return {index: lp[s:e] for index, s, e in spans}


# Vocabulary rows per slice of the output head. On a CPU a [nodes, 4096] slice of logits
# stays in cache while its log-normaliser is taken; the whole [nodes, vocabulary] matrix
# (134 MB for 686 nodes of SmolLM2's 49k vocabulary) goes out to memory and back, and
# slicing made the head ~25% faster (`make bench`). A GPU takes wide slices, which also
# bound the memory of Gemma's 262k-token head.
VOCAB_SLICE = {"cpu": 4096, "cuda": 65536}


def _head_logsumexp(model: Any, h: Any, pred: Any, tok: Any) -> tuple[Any, Any]:
    """The output head over `h` [nodes, hidden] in vocabulary slices: each node's log
    normaliser (a log-sum-exp over the slices' log-sum-exps) and each edge's target
    logit (node `pred[e]`, token `tok[e]`), in float32, soft-capped as the model does.
    The same logits as the full projection, never all in memory at once."""
    import torch

    head = model.get_output_embeddings()
    weight, bias = head.weight, getattr(head, "bias", None)
    cap = getattr(model.config, "final_logit_softcapping", None)
    step = VOCAB_SLICE.get(h.device.type, VOCAB_SLICE["cpu"])
    parts = []
    # NaN until a slice fills it: a token outside the head would end as a non-finite
    # log-prob, which the backend refuses, never as whatever memory held
    target = torch.full((tok.shape[0],), float("nan"), dtype=torch.float32, device=h.device)
    for start in range(0, weight.shape[0], step):
        end = min(start + step, weight.shape[0])
        logits = torch.nn.functional.linear(h, weight[start:end], None if bias is None else bias[start:end]).float()
        if cap:
            logits = torch.tanh(logits / cap) * cap
        parts.append(torch.logsumexp(logits, dim=-1))
        hit = (tok >= start) & (tok < end)
        if bool(hit.any()):
            target[hit] = logits[pred[hit], tok[hit] - start]
    return torch.logsumexp(torch.stack(parts, dim=-1), dim=-1), target
