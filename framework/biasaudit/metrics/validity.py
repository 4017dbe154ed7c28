"""Validity guards: what makes a measurement too weak to decide.

A metric can be exact and still say nothing: every answer refused, every pair tied, a
coder that gives one label to everything, judges no better than chance, most requests
failed. Such a result is never turned into PASS or FAIL. A guard is a `ValidityFlag` on
the `MetricResult`; a blocking flag makes every verdict on the estimates it names
INCONCLUSIVE with its message as the reason, and the report shows it beside them.

Flags come from three places: the metric itself (`valid_share`: the share of its units
that gave a usable answer), the coding layers it reads (`layer_flags`: degenerate coders,
abstaining panels, judges that failed calibration) and the run (`failure_flag`: the
share of model requests that failed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from biasaudit.records.metric_result import ValidityFlag

if TYPE_CHECKING:
    from biasaudit.coding.layers import CodingPlan, Layer
    from biasaudit.records.codes import Code, Unit
    from biasaudit.spec import ValiditySpec




def valid_share(valid: int, total: int, what: str, min_share: float, *,
                invalid: Mapping[str, int] | None = None) -> ValidityFlag | None:
    """A blocking flag when fewer than `min_share` of `total` units gave a usable answer.

    `invalid` names the reasons of the rest (refused: 12, tied: 3...) for the message."""
    if total <= 0:
        return ValidityFlag(kind="valid_share", message=f"no {what} to measure")
    share = valid / total
    if share >= min_share:
        return None
    why = ", ".join(f"{k}: {v}" for k, v in (invalid or {}).items() if v)
    return ValidityFlag(
        kind="valid_share",
        message=f"only {valid}/{total} {what} ({100 * share:.0f}%) gave a usable answer, below the "
                f"{100 * min_share:.0f}% bound (validity.min_valid_share){f'; {why}' if why else ''}")


def counts_flag(counts: Mapping[str, int], min_share: float) -> ValidityFlag | None:
    """`valid_share` from a result's counts, for metrics that report `scored` and
    `unscorable` units (or `responses` and `unparsed`) and set no flag of their own."""
    if "scored" in counts and "unscorable" in counts:
        return valid_share(counts["scored"], counts["scored"] + counts["unscorable"], "units", min_share,
                           invalid={"unscorable": counts["unscorable"]})
    if "responses" in counts and "unparsed" in counts:
        return valid_share(counts["responses"] - counts["unparsed"], counts["responses"], "responses", min_share,
                           invalid={"unparsed": counts["unparsed"]})
    return None


def failure_flag(failed: int, total: int, reasons: Iterable[str | tuple[str | None, str | None]],
                 max_share: float) -> ValidityFlag | None:
    """A blocking flag when more than `max_share` of the run's model requests failed.

    `reasons` holds each failed request's kind, or its (kind, error message): the top kinds
    are named with their counts and one message each ("server_error 84 (HTTP 500)"),
    since a kind alone does not say which status, host or limit to look at."""
    if total <= 0 or failed / total <= max_share:
        return None
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in reasons:
        kind, msg = (r, None) if isinstance(r, str) else r
        kind = kind or "other"  # as the run's execution counts call a failure with no kind
        counts[kind] += 1
        if msg and msg != kind:
            example.setdefault(kind, msg)
    top = counts.most_common(3)
    tops = "; ".join(f"{k[:80]} {n}" + (f" ({example[k][:80]})" if k in example else "") for k, n in top)
    if len(counts) > len(top):
        tops += f"; {len(counts) - len(top)} other kind(s) ({sum(counts.values()) - sum(n for _, n in top)})"
    return ValidityFlag(kind="failed_requests",
                        message=f"{failed}/{total} requests failed ({100 * failed / total:.0f}%, above the "
                                f"{100 * max_share:.0f}% bound validity.max_failed_share){f': {tops}' if tops else ''}")


def depends_on(plan: CodingPlan, roots: Iterable[str]) -> list[str]:
    """The layers `roots` read, directly or through inputs, strips and fallbacks."""
    seen: list[str] = []
    todo = [r for r in roots if r in plan.layers]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        lay = plan.layers[name]
        todo += [d for d in [*lay.depends, lay.spec.fallback or ""] if d and d in plan.layers]
    return seen


class _CodesOf(Sequence["Code"]):
    """The codes of some units of a layer, read from its table as they are used (issue 42:
    a list of them held every unit's full record while the flags were computed)."""

    def __init__(self, codes: Mapping[str, Code], ids: list[str]) -> None:
        self.codes, self.ids = codes, ids

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self.codes[u] for u in self.ids[i]]
        return self.codes[self.ids[i]]

    def __iter__(self) -> Iterator[Code]:
        return (self.codes[u] for u in self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _layer_flags(lay: Layer, units: Sequence[Unit], codes: Mapping[str, Code], v: ValiditySpec) -> list[ValidityFlag]:
    # one code at a time: only the coded units' ids and labels are kept
    n_applicable = 0
    coded_ids: list[str] = []
    labels: Counter[str | None] = Counter()
    for u in units:
        c = codes.get(u.id)
        if c is None or c.status == "not_applicable":
            continue
        n_applicable += 1
        if c.coded:
            coded_ids.append(u.id)
            labels[c.label] += 1
    coded = _CodesOf(codes, coded_ids)
    out: list[ValidityFlag] = []
    if not n_applicable or lay.fallback_of is not None:
        return out  # a fallback's codes are judged as part of its primary's
    abstained = n_applicable - len(coded)
    if abstained / n_applicable > v.max_abstain_share:
        out.append(ValidityFlag(
            kind="abstain_share", layer=lay.name,
            message=f"layer {lay.name!r} could not code {abstained}/{n_applicable} units "
                    f"({100 * abstained / n_applicable:.0f}%, above validity.max_abstain_share "
                    f"{100 * v.max_abstain_share:.0f}%): abstained, failed or no label"))
    if lay.value_type == "label" and len(coded) >= 2 and lay.labels and len(lay.labels) > 1:
        counts = labels
        top, k = counts.most_common(1)[0]
        if k / len(coded) >= v.dominant_share:
            out.append(ValidityFlag(
                kind="dominant_label", layer=lay.name, blocking=not lay.spec.expect_dominant,
                message=f"layer {lay.name!r} gave {top!r} to {k}/{len(coded)} coded units "
                        f"({100 * k / len(coded):.0f}%): it does not discriminate"
                        + (" (accepted: expect_dominant)" if lay.spec.expect_dominant else
                           "; if that is expected, set coding." + lay.name + ".expect_dominant: true")))
    if lay.coder_def.validity is not None:  # flags only the coder can raise (the rules' `otherwise` share)
        out += lay.coder_def.validity(lay.env, lay.options, coded, v)
    return out


def layer_flags(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]],
                v: ValiditySpec, calibration: Mapping[str, ValidityFlag] | None = None) -> dict[str, list[ValidityFlag]]:
    """Layer -> its data-quality flags (degenerate label use, abstentions, `otherwise`
    share) and, from `calibration`, the flag of its judges' stored calibration."""
    out: dict[str, list[ValidityFlag]] = {}
    for name, lay in plan.layers.items():
        flags = _layer_flags(lay, units, codes.get(name, {}), v)
        if calibration and name in calibration:
            flags.append(calibration[name])
        if flags:
            out[name] = flags
    return out


def blocking_reason(flags: Sequence[ValidityFlag], estimate: str) -> str | None:
    """The reason a verdict on `estimate` cannot be decided, or None."""
    why = [f.message for f in flags if f.blocking and f.affects(estimate)]
    return "; ".join(dict.fromkeys(why)) if why else None


__all__ = ["ValidityFlag", "blocking_reason", "counts_flag", "depends_on", "failure_flag", "layer_flags", "valid_share"]
