"""Validate-time checks of the `tfdp` metric's slot parameters against the probe and the
`tfdp_vectors` layer it reads: the metric looks up the embeddings of the texts it aligns
in that layer, so a slot the layer does not embed, or embeds with other fields, would
find none of them (docs/methods/tfdp.md)."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from biasaudit.coding.label_check import MetricLabelError
from biasaudit.methods.slot_check import check_slots
from biasaudit.methods.tfdp.coder import TFDPVectorsOptions
from biasaudit.methods.tfdp.metric import TFDPParams
from biasaudit.spec import AuditConfig


def check_spec(params: BaseModel, cfg: AuditConfig) -> str | tuple[str, str] | None:
    """The two slots are different input slots of the probe, and the coding layer embeds
    each slot's answers with the sentence and truth fields the metric aligns them with
    (else its vectors do not hold the texts the metric scores)."""
    assert isinstance(params, TFDPParams)
    p = params
    check_slots(cfg, {"slot": p.slot, "counter_slot": p.counter_slot})
    layer = cfg.coding.get(p.layer)
    if layer is None:  # the default layer is made from these parameters (or the missing layer is refused)
        return None
    if layer.coder != "tfdp_vectors":
        raise MetricLabelError(f"reads coding layer {p.layer!r}, a {layer.coder!r} layer, not tfdp_vectors",
                               key="layer", hint="name the spec's `coder: tfdp_vectors` layer")
    # the layer's own check reports its malformed options; these are its maps or their defaults
    opts = {k: v for k, v in (layer.model_extra or {}).items() if k in ("sentence", "truth")}
    try:
        o = TFDPVectorsOptions.model_validate(opts)
    except ValidationError:
        return None
    for key, slot, sentence, truth in (("slot", p.slot, p.sentence, p.truth),
                                       ("counter_slot", p.counter_slot, p.counter, p.counter_truth)):
        fields = ("counter", "counter_truth") if key == "counter_slot" else ("sentence", "truth")
        if slot not in o.sentence:
            raise MetricLabelError(f"names slot {slot!r}, which coding layer {p.layer!r} does not embed "
                                   f"(its `sentence` maps {', '.join(map(repr, o.sentence)) or 'no slot'})", key=key,
                                   hint=f"add `coding.{p.layer}.sentence.{slot}` and `coding.{p.layer}.truth.{slot}`, "
                                        f"or name one of the layer's slots")
        have = (o.sentence[slot], o.truth.get(slot))
        if have != (sentence, truth):
            # one field set apart from the layer is keyed by itself; both apart, by the slot that binds them
            differ = [f for f, a, b in zip(fields, have, (sentence, truth), strict=True) if a != b]
            raise MetricLabelError(
                f"aligns slot {slot!r} with fields {sentence!r} ({fields[0]}) and {truth!r} ({fields[1]}), but "
                f"coding layer {p.layer!r} embeds it with {have[0]!r} and {have[1]!r}",
                key=differ[0] if len(differ) == 1 else key,
                hint=f"set `{fields[0]}: {have[0]}` and `{fields[1]}: {have[1]}` in the metric, or map "
                     f"`coding.{p.layer}.sentence.{slot}: {sentence}` and `coding.{p.layer}.truth.{slot}: {truth}`")
    return None
