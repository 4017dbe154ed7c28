"""Recorded decisions (`model=recorded`, issue 43 section 4): a CSV an application
exported is matched to the spec's stimuli by its key columns, and anything but one row
per stimulus is refused before the run, in one line naming the file and the row (exit
2): a missing column, two rows for one key, a row for no stimulus, a stimulus without a
row, a row without a decision, a key column that is no stimulus field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.helpers import REPO

SHIPPED = REPO / "tests" / "fixtures" / "screening_service" / "decisions.csv"


def _variant(tmp: Path, name: str, edit: str) -> Path:
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    if edit == "duplicate":
        lines.append(lines[2])
    elif edit == "missing":
        lines = lines[:-1]
    elif edit == "unmatched":
        lines.append("zz-9,p9,cook,none,man,Asian,invite")
    elif edit == "no decision column":
        lines[0] = lines[0].replace(",decision", ",verdict")
    elif edit == "empty decision":
        lines[5] = lines[5].rsplit(",", 1)[0] + ","
    path = tmp / f"{name}.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("edit", "key", "says"), [
    ("duplicate", "model.key", "line 50 repeats the key id='p1-woman-black' of line 3"),
    ("missing", "model.path", "no row for stimulus 'p6-man-white'"),
    ("unmatched", "model.path", "line 50 (id='zz-9') matches no stimulus"),
    ("no decision column", "model.decision", "no column 'decision'"),
    ("empty decision", "model.decision", "line 6 (id='p1-man-asian') has no decision"),
])
def test_a_csv_that_is_not_one_row_per_stimulus_is_refused(workdir: Path, cli, edit: str, key: str,  # type: ignore[no-untyped-def]
                                                         says: str) -> None:
    path = _variant(workdir, edit.replace(" ", "_"), edit)
    for command in ("validate", "run"):
        code, out, err = cli(command, "spec=hiring_impact", "model=recorded", f"model.path={path}", *isolation(workdir))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"error: {path}: {key}: {says}") and "Traceback" not in err, err
    assert not list((workdir / "reports").iterdir())  # refused before anything is written


def test_a_key_column_must_be_a_stimulus_field(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("validate", "spec=hiring_impact", "model=recorded", f"model.path={SHIPPED}",
                         "model.key=[decision]", *isolation(workdir))
    assert code == 2 and "model.key column 'decision' is not a stimulus field" in err


def test_the_shipped_decisions_validate_and_key_by_several_columns(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("validate", "spec=hiring_impact", "model=recorded", f"model.path={SHIPPED}",
                         "model.key=[profile,gender,race]", *isolation(workdir))
    assert code == 0, err
