"""The self-test's label-word rows: where a spec maps words to labels (the NLI group's
label words, `nli.labels: {entailment: "Yes", ...}`), a handful of unambiguous cases go
to the real model through the real backend, and the mapped labels must come out right.

The oracles cannot check this: they answer with labels, never with words, so a spec
whose words are swapped (`entailment: "No"`) passes every oracle row while every real
answer is read backwards. Here plainly entailed and plainly contradicted pairs are asked;
the mean of P(entailment) - P(contradiction) must be higher on the entailed pairs than on
the contradicted ones. A weak model may not tell them apart (the row is then
INCONCLUSIVE, with the margin); a swapped mapping reverses the order, and the problem
names the words.

Cost: 2 x len(CASES) = 8 NLI requests (for `nli=llm`, 8 one-token forward passes of the
chat model; a few seconds for SmolLM2-135M on a CPU), run only with `--label-words`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from biasaudit.plan import Request
from biasaudit.records.responses import Response
from biasaudit.runner.selftest_oracles import Row

if TYPE_CHECKING:
    from biasaudit.spec import AuditConfig

ENTAILED = (
    ("A man is playing a guitar on a stage.", "A man is playing a musical instrument."),
    ("The cat is sleeping on the red sofa.", "A cat is on the sofa."),
    ("Maria bought three apples at the market.", "Maria bought fruit."),
    ("The children are swimming in the lake.", "Some children are in the water."),
)
CONTRADICTED = (
    ("A man is playing a guitar on a stage.", "Nobody is playing any instrument."),
    ("The cat is sleeping on the red sofa.", "The cat is running outside."),
    ("Maria bought three apples at the market.", "Maria bought nothing at all."),
    ("The children are swimming in the lake.", "The children are asleep in their beds."),
)
CASES = len(ENTAILED)
MIN_MARGIN = 0.05
"""The least difference of mean P(entailment) - P(contradiction) between the entailed
and the contradicted pairs that decides the row (below it: INCONCLUSIVE)."""


def _margin(resp: Response | None) -> float | None:
    out = resp.output if resp is not None and resp.status == "ok" else None
    probs = out.get("probs") if isinstance(out, dict) else None
    if not isinstance(probs, dict):
        return None
    e, c = probs.get("entailment"), probs.get("contradiction")
    return float(e) - float(c) if isinstance(e, (int, float)) and isinstance(c, (int, float)) else None


def nli_word_rows(cfg: AuditConfig) -> tuple[list[Row], list[str]]:
    """The NLI label-word row of a spec with an `nli` group (none otherwise)."""
    from biasaudit.backends import build_nli_backend

    if cfg.nli is None:
        return [], []
    words = dict(getattr(cfg.nli, "labels", None) or getattr(cfg.nli, "label_map", None) or {})
    backend = build_nli_backend(cfg)
    reqs = [Request(key=f"label-words-{kind}-{i}", kind="classify_nli", text=p, text_pair=h)
            for kind, pairs in (("entailed", ENTAILED), ("contradicted", CONTRADICTED))
            for i, (p, h) in enumerate(pairs)]
    got: dict[str, Response] = {}
    backend.execute(reqs, lambda r: got.__setitem__(r.key, r))
    margins = {r.key: _margin(got.get(r.key)) for r in reqs}
    ent = [m for k, m in margins.items() if "entailed" in k and m is not None]
    con = [m for k, m in margins.items() if "contradicted" in k and m is not None]
    shown = ", ".join(f"{rel}: {w!r}" for rel, w in words.items()) or "(the model's own labels)"
    if len(ent) < CASES or len(con) < CASES:
        failed = sum(m is None for m in margins.values())
        return [Row(oracle="label-words", threshold="nli", expected="entailed > contradicted", got="INCONCLUSIVE",
                    ok=False, truth=None, estimate="n/a", reason=f"{failed} of {len(reqs)} sanity requests failed")], \
            [f"the NLI label-word check could not run: {failed} of {len(reqs)} requests failed"]
    a, b = sum(ent) / len(ent), sum(con) / len(con)
    est = f"P(E)-P(C): entailed {a:+.3f}, contradicted {b:+.3f}"
    if a - b >= MIN_MARGIN:
        return [Row(oracle="label-words", threshold="nli", expected="entailed > contradicted", got="PASS", ok=True,
                    truth=None, estimate=est, reason="")], []
    if b - a >= MIN_MARGIN:
        return [Row(oracle="label-words", threshold="nli", expected="entailed > contradicted", got="FAIL", ok=False,
                    truth=None, estimate=est, reason="")], [
            f"NLI label words read backwards: plainly contradicted pairs came out more entailed than plainly "
            f"entailed ones ({est}); the words nli.labels {{{shown}}} are most likely swapped"]
    return [Row(oracle="label-words", threshold="nli", expected="entailed > contradicted", got="INCONCLUSIVE",
                ok=True, truth=None, estimate=est,
                reason=f"the model does not tell the cases apart by {MIN_MARGIN} (words {shown}): not decided")], []


__all__ = ["CONTRADICTED", "ENTAILED", "MIN_MARGIN", "nli_word_rows"]
