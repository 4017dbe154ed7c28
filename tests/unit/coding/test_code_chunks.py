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
    assert not CODERS.get("embedding").per_unit and not CODERS.get("claims").per_unit
    assert not CODERS.get("human").per_unit
    assert all(CODERS.get(n).per_unit for n in ("rules", "choice", "judge_panel", "classifier"))
