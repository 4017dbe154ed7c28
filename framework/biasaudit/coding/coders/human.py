"""`human`: the labels people gave on an annotation sheet, read back as a coding layer.

A spec declares it like any layer:

    coding:
      stance: {coder: judge_panel, labels: [E, QE, N, D, R]}
      human_stance: {coder: human, sheet: review/stance.csv}
    reliability:
      - pair: [human_stance, stance]

The sheet comes from `biasaudit annotate export RUN --layer stance` and is checked when
the spec is validated (its sampling record, unit ids, labels, duplicates; human_sheet.py)
and again against the run when the layer codes (the same requests and answers). A unit
with a label is coded with it (source `human`); a sampled unit left blank and a unit not
sampled are `not_applicable` (the reason says which), so a blank is never a label. Every
code carries its sampling stratum, which the gold report's PPI estimate reads
(coding/human_review.py). The layer makes no model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from biasaudit.backends.factory import kind_of
from biasaudit.coding.base import Answers, CoderDef, CoderEnv, CodingRequest
from biasaudit.coding.human_sheet import (
    FilledSheet,
    SheetEvidence,
    check_keys,
    check_run,
    read_record,
    read_sheet,
    sheet_path,
    stratum_of,
)
from biasaudit.records.codes import Code, Unit
from biasaudit.registry import CODERS


class HumanOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    sheet: str
    """A filled annotation sheet (csv or jsonl written by `biasaudit annotate export`),
    relative to the spec file; its sampling record `<sheet>.sample.json` stays beside it."""


def _load(env: CoderEnv, options: HumanOptions) -> FilledSheet:
    path = sheet_path(options.sheet, env.spec_file, env.key("sheet"))
    return read_sheet(path, env.config.runtime.limits, key=env.key("sheet"))


HumanEvidence = SheetEvidence
"""The human coder's evidence: where the unit stands on the sheet's sample (coding/human_sheet.py)."""


class HumanCoder:
    def __init__(self, env: CoderEnv, options: HumanOptions) -> None:
        self.env = env
        self.sheet = _load(env, options)

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        return []  # people answered already

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        if kind_of(self.env.config.model).selftest_only:  # `biasaudit selftest`: nobody labelled the oracle's answers
            return [Code(unit=u.id, status="not_applicable", source="human",
                         detail=HumanEvidence(reason="the self-test's oracle answers have no human labels")) for u in units]
        check_run(self.sheet, units, inputs, self.env.config.runtime.limits.max_coding_chars)
        rec = self.sheet.record
        by = rec.stratify
        sampled = {s.id: s.stratum for s in rec.units}
        # what the gold report needs to read the sample (coding/human_review.py)
        drawn = HumanEvidence(sampled=True, sampled_from=rec.layer, stratify=by)
        if rec.selection == "chosen":  # picked in the viewer: the gold report must not read it as a random draw
            drawn = drawn.model_copy(update={"chosen": True})
        out = []
        for u in units:
            stratum = sampled.get(u.id, stratum_of(u, by))
            row = self.sheet.rows.get(u.id)
            if u.id not in sampled:
                out.append(Code(unit=u.id, status="not_applicable", source="human",
                                detail=HumanEvidence(stratum=stratum, reason="not sampled for human review")))
                continue
            # `stratify` is written even when null (unstratified): set fields are what a code's detail says
            evidence = drawn.model_copy(update={"stratum": stratum})
            if row is None or row.label is None:
                evidence = evidence.model_copy(update={"reason": "sampled, not annotated (blank label)"})
                out.append(Code(unit=u.id, status="not_applicable", source="human", detail=evidence))
            else:
                if row.note:
                    evidence = evidence.model_copy(update={"note": row.note})
                out.append(Code(unit=u.id, status="coded", label=row.label, source="human", detail=evidence))
        return out


def _labels(env: CoderEnv, options: HumanOptions) -> list[str]:
    path = sheet_path(options.sheet, env.spec_file, env.key("sheet"))
    return list(read_record(path, env.key("sheet")).labels)


def check_plan(env: CoderEnv, options: HumanOptions, keys: Mapping[str, str]) -> None:
    """The sheet sampled this plan's requests (`keys`: unit id -> request key): checked
    when the run is prepared, before any model call or folder."""
    check_keys(_load(env, options), keys)


def _check(env: CoderEnv, options: HumanOptions) -> None:
    _load(env, options)  # every row checked when the spec is validated, before any model call


HUMAN = CoderDef(options=HumanOptions, build=HumanCoder, title="Human review (annotation sheet)", evidence=HumanEvidence,
                 labels=_labels, check=_check, is_human=True, check_plan=check_plan)
CODERS.add("human", HUMAN)

__all__ = ["HUMAN", "HumanCoder", "HumanEvidence", "HumanOptions", "check_plan"]
