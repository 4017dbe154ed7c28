"""A calibration control set with a header and no row (issue 26, low): `biasaudit
calibrate` says so in one line naming the file and `coding.<layer>.calibration.source`,
exit code 2, and records nothing. Before, it coded zero responses, stored a calibration
result with no accuracy, and died formatting it (TypeError, exit 70)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.helpers import spec_and_operator
from tests.unit.coding.test_coding_plan import JUDGE, SPEC
from tests.unit.hostile._cases import error_lines


def _calibrate(workdir: Path, cli, control: str):  # type: ignore[no-untyped-def]
    (workdir / "refusals.csv").write_bytes(control.encode("utf-8"))
    body = SPEC.replace("    otherwise: answer\n", "    otherwise: answer\n    calibration: {source: refusals.csv, "
                        "text: answer, gold: gold, map: {\"no\": refuse, \"yes\": answer}}\n")
    s, ops = spec_and_operator(workdir / "rs.yaml", body.replace("JUDGE", json.dumps(JUDGE)))
    return cli("calibrate", f"spec={s}", *ops, "--layer", "refusal", *isolation(workdir))


@pytest.mark.parametrize("control", ["statement,answer,gold\n", "statement,answer,gold", "statement,answer,gold\r\n\r\n",
                                     "\ufeffstatement,answer,gold\n\n\n"],
                         ids=["header", "header without newline", "header and blank CRLF lines", "BOM and blank lines"])
def test_a_control_set_without_rows_is_one_line(workdir: Path, cli, control: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _calibrate(workdir, cli, control)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {workdir / 'refusals.csv'}: coding.refusal.calibration.source: "), lines[0]
    assert "no rows" in lines[0] and "hint:" in lines[0] and "statement, answer, gold" in lines[0]
    assert not (workdir / "cache.sqlite").exists()  # no calibration result was recorded (nor a cache made)

def test_an_empty_control_file_is_one_line(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _calibrate(workdir, cli, "")
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "csv file is empty" in lines[0] and "hint:" in lines[0], err
