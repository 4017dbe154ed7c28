"""Review sheets say what each label means (issue 41, section 2): a coding layer's
`label_meanings` print beside the labels in the sheet's `allowed_labels` cell, every
label of a shipped spec's layer has a meaning, a meaning of no label is a one-line spec
error, and the filled sheet still imports with the bare label."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from tests.conftest import isolation, run_dirs
from tests.helpers import REPO, spec_and_operator
from tests.integration.test_human_review_e2e import SPEC

MEANT = SPEC.replace("""    labels: [refuse, answer]
    otherwise: answer""", """    labels: [refuse, answer]
    label_meanings: {refuse: declines to answer, answer: answers}
    otherwise: answer""")


def _labelled() -> list[str]:
    """The shipped specs with a coding layer that declares its labels."""
    out = []
    for p in sorted((REPO / "specs").glob("*.yaml")):
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        if any(isinstance(v, dict) and v.get("labels") for v in (doc.get("coding") or {}).values()):
            out.append(p.stem)
    return out


LABELLED = _labelled()


def test_the_shipped_specs_have_labelled_layers() -> None:
    assert {"biaxis_oat", "biaxis_factorial", "refusal_stance", "hiring_impact"} <= set(LABELLED)


@pytest.mark.parametrize("name", LABELLED)
def test_every_label_of_a_shipped_layer_has_a_meaning(name: str) -> None:
    doc = yaml.safe_load((REPO / "specs" / f"{name}.yaml").read_text(encoding="utf-8"))
    for layer, spec in (doc.get("coding") or {}).items():
        if isinstance(spec, dict) and spec.get("labels"):
            meanings = spec.get("label_meanings") or {}
            missing = [lab for lab in spec["labels"] if not meanings.get(lab)]
            assert not missing, f"{name}: layer {layer} has no meaning for {missing}"


def test_the_sheet_gives_each_label_its_meaning(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert MEANT != SPEC
    spec, ops = spec_and_operator(workdir / "review.yaml", MEANT)
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    [run] = run_dirs(workdir)
    sheet = workdir / "review.csv"
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4", "-o", str(sheet))
    assert code == 0, err
    with sheet.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["allowed_labels"] == "refuse = declines to answer | answer = answers" for r in rows)


def test_a_meaning_of_no_label_is_one_error_line(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec, ops = spec_and_operator(workdir / "bad.yaml", MEANT.replace("refuse: declines", "refused: declines"))
    code, _, err = cli("validate", f"spec={spec}", *ops)
    assert code == 2 and err.count("\n") == 1, err
    assert "label_meanings" in err and "refused" in err
