"""CodeDetail: a code's evidence is its coder's own typed record (CoderDef.evidence,
resolved by the code's source), and codes.jsonl keeps the layout it had when
`detail` was a plain mapping (the viewer reads it; an evidence pack compares it byte for
byte with the codes re-computed from its responses)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from biasaudit.coding.coders.choice import ChoiceAsked, ChoiceEvidence
from biasaudit.coding.coders.claims import ClaimsEvidence
from biasaudit.coding.coders.classifier import ClassifierEvidence
from biasaudit.coding.coders.embedding import EmbeddingEvidence
from biasaudit.coding.coders.human import HumanEvidence
from biasaudit.coding.coders.judge_panel import JudgePanelEvidence
from biasaudit.coding.coders.rules import RulesEvidence
from biasaudit.methods.tfdp.evidence import TFDPVectorsEvidence
from biasaudit.records.codes import Code, CodeDetail, Truncation

# lines as the code on main before CodeDetail wrote them, one per kind of coder
OLD_LINES = [
    '{"unit": "u", "status": "coded", "label": "E", "value": null, "text": null, "source": "rules", '
    '"detail": {"span": [0, 3], "token": "Yes", "rule": 1}}',
    '{"unit": "u", "status": "coded", "label": "E", "value": null, "text": null, "source": "rules", '
    '"detail": {"rule": "otherwise"}}',
    '{"unit": "u", "status": "abstain", "label": null, "value": null, "text": null, "source": "judge_panel", '
    '"detail": {"votes": {"a": "E", "b": null}}}',
    '{"unit": "u", "status": "coded", "label": "A", "value": null, "text": null, "source": "choice", '
    '"detail": {"asked": [{"order": ["A", "B"], "choice": "A"}, {"order": ["B", "A"], "choice": "A"}], '
    '"probs": {"A": 0.75, "B": 0.25}, "flipped": false, "picked_first": [true, false], "n_options": 2, '
    '"input_truncated": {"chars": 30000, "kept": 20000}}}',
    '{"unit": "u", "status": "abstain", "label": null, "value": null, "text": null, "source": "classifier", '
    '"detail": {"top": "neutral", "probs": {"neutral": 0.5, "entailment": 0.3}}}',
    '{"unit": "u", "status": "coded", "label": null, "value": 0.5, "text": "[NAME] works.", "source": "claims", '
    '"detail": {"claims": ["[NAME] works."], "fell_back": false, "checks": {"u1": ["E", null]}, "recorded": true}}',
    '{"unit": "u", "status": "coded", "label": null, "value": 0.9, "text": null, "source": "embedding", '
    '"detail": {"similarity": {"u1": 0.9}}}',
    '{"unit": "u", "status": "coded", "label": null, "value": null, "text": null, "source": "tfdp_vectors", '
    '"detail": {"predictions": [["warm", 1.0], [null, 0.5]]}}',
    '{"unit": "u", "status": "coded", "label": "E", "value": null, "text": null, "source": "human", '
    '"detail": {"stratum": "ALL", "sampled": true, "sampled_from": "stance", "stratify": null, "note": "sure"}}',
    '{"unit": "u", "status": "not_applicable", "label": null, "value": null, "text": null, "source": "human", '
    '"detail": {"stratum": "c1", "sampled": true, "sampled_from": "stance", "stratify": "cell", '
    '"reason": "sampled, not annotated (blank label)"}}',
    '{"unit": "u", "status": "failed", "label": null, "value": null, "text": null, "source": "claims", '
    '"detail": {"reason": "the response failed"}}',
    '{"unit": "u", "status": "coded", "label": null, "value": 1.0, "text": null, "source": "embedding", "detail": {}}',
]


@pytest.mark.parametrize("line", OLD_LINES)
def test_an_old_codes_line_loads_typed_and_writes_back_byte_for_byte(line: str) -> None:
    row = json.loads(line)
    code = Code.model_validate(row)
    assert isinstance(code.detail, CodeDetail)
    assert json.dumps(code.model_dump(mode="json"), ensure_ascii=False) == line
    assert json.dumps(code.trail(), ensure_ascii=False) == line


@pytest.mark.parametrize(("line", "record"), list(zip(OLD_LINES, [
    RulesEvidence, RulesEvidence, JudgePanelEvidence, ChoiceEvidence, ClassifierEvidence, ClaimsEvidence,
    EmbeddingEvidence, TFDPVectorsEvidence, HumanEvidence, HumanEvidence, CodeDetail, CodeDetail], strict=True)))
def test_a_stored_detail_reads_into_its_coders_own_record(line: str, record: type[CodeDetail]) -> None:
    # the record is the one the coder named by `source` registered (CoderDef.evidence); a
    # detail with only the keys any code may carry (`reason`) reads into the base record
    assert type(Code.model_validate(json.loads(line)).detail) is record


def test_typed_fields_read_what_the_coders_wrote() -> None:
    rules = Code.model_validate(json.loads(OLD_LINES[0]))
    assert isinstance(rules.detail, RulesEvidence)
    assert rules.detail.span == (0, 3) and rules.detail.rule == 1 and rules.detail.matched_span() == (0, 3)
    assert rules.detail.rater_votes() is None
    choice = Code.model_validate(json.loads(OLD_LINES[3]))
    assert isinstance(choice.detail, ChoiceEvidence)
    assert choice.detail.asked == [ChoiceAsked(order=["A", "B"], choice="A"), ChoiceAsked(order=["B", "A"], choice="A")]
    assert choice.detail.input_truncated == Truncation(chars=30000, kept=20000)
    panel = Code.model_validate(json.loads(OLD_LINES[2]))
    assert panel.detail.rater_votes() == {"a": "E", "b": None} and panel.detail.matched_span() is None
    human = Code.model_validate(json.loads(OLD_LINES[8]))
    assert isinstance(human.detail, HumanEvidence)
    # a null a coder wrote is kept, and told apart from a field it did not write
    assert human.detail.stratify is None and human.detail.has("stratify") and not human.detail.has("reason")


def test_the_order_written_is_the_declared_one_whatever_order_the_coder_gave() -> None:
    d = HumanEvidence(reason="x", stratum="s", input_truncated=Truncation(chars=9, kept=3))
    assert list(d.model_dump()) == ["stratum", "reason", "input_truncated"]
    assert list(RulesEvidence(rule=2, token="A", span=(0, 1)).model_dump()) == ["span", "token", "rule"]


def test_an_unknown_key_is_refused_naming_the_file_and_key() -> None:
    # issue 40: records refuse unknown keys (older layouts are read by records/upgrade)
    from biasaudit.errors import DataError
    from biasaudit.records.upgrade import current, validated

    with pytest.raises(ValidationError, match="zeta"):
        CodeDetail.model_validate({"zeta": [1, 2], "reason": "r"})
    with pytest.raises(DataError) as err:
        validated("codes", Code, {"unit": "u", "status": "coded", "detail": {"zeta": 1}}, file="run/codes.jsonl",
                  version=current("codes"))
    assert "run/codes.jsonl: " in err.value.one_line() and "unknown key 'detail.zeta'" in err.value.one_line()


def test_a_fallbacks_code_reads_into_the_record_that_declares_its_keys() -> None:
    line = ('{"unit": "u", "status": "coded", "label": "E", "value": null, "text": null, "source": "fallback:parse", '
            '"detail": {"votes": {"a": "E"}}}')
    code = Code.model_validate(json.loads(line))
    assert type(code.detail) is JudgePanelEvidence
    assert json.dumps(code.model_dump(mode="json"), ensure_ascii=False) == line


def test_unknown_keys_are_refused() -> None:
    # a misspelt or foreign key is an error naming it, not silently kept or dropped
    with pytest.raises(ValidationError, match="zeta"):
        Code.model_validate({"unit": "u", "status": "coded", "source": "rules", "detail": {"zeta": [1, 2], "rule": 1}})
    with pytest.raises(ValidationError, match="zeta"):
        Code.model_validate({"unit": "u", "status": "coded", "source": "", "detail": {"zeta": 1}})
    with pytest.raises(ValidationError, match="votes"):  # another coder's field
        Code.model_validate({"unit": "u", "status": "coded", "source": "rules", "detail": {"votes": {"a": "E"}}})


def test_a_typed_field_of_the_wrong_kind_is_refused() -> None:
    with pytest.raises(ValidationError):
        Code.model_validate({"unit": "u", "status": "coded", "source": "rules", "detail": {"span": "0-3"}})
    with pytest.raises(ValidationError):
        RulesEvidence.model_validate({"rule": "sometimes"})  # an index, or "otherwise"


def test_vectors_stay_out_of_codes_jsonl() -> None:
    c = Code(unit="u", status="coded", source="tfdp_vectors",
             detail=TFDPVectorsEvidence(predictions=[("warm", 1.0)], vectors={"warm": [0.5, 0.25]}))
    assert isinstance(c.detail, TFDPVectorsEvidence) and c.detail.vectors == {"warm": [0.5, 0.25]}  # the metric reads them
    assert c.trail()["detail"] == {"predictions": [["warm", 1.0]]}


def test_a_copy_that_adds_a_field_writes_it() -> None:
    d = JudgePanelEvidence(votes={"a": "E"})
    flagged = d.model_copy(update={"input_truncated": Truncation(chars=5, kept=2)})
    assert flagged.model_dump(mode="json") == {"votes": {"a": "E"}, "input_truncated": {"chars": 5, "kept": 2}}
