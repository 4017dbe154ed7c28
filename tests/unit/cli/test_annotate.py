"""`biasaudit annotate export` on bad arguments: one error line naming what is wrong and
the fix, exit code 2, nothing written (the run itself is exercised end to end in
tests/integration/test_human_review_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(("args", "says"), [
    (["--n", "0"], "--n must be 1 or more"),
    (["-o", "{tmp}/sheet.xlsx"], "unknown sheet format '.xlsx'"),
    (["-o", "{tmp}/folder.csv"], "the sheet path is a directory"),
    (["-o", "{tmp}/null.csv"], "is a symbolic link"),  # a link to /dev/null: never followed
    ([], "no manifest.json here"),
])
def test_bad_arguments_are_one_error_line(cli, tmp_path: Path, args: list[str], says: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "null.csv").symlink_to("/dev/null")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out" / "sheet.csv")]
    code, out, err = cli("annotate", "export", str(tmp_path / "no-run"), "--layer", "stance", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err and "hint:" in err
    assert not (tmp_path / "out").exists()


def test_an_existing_sheet_is_not_replaced(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("unit_id,label\nu1,E\n", encoding="utf-8")
    code, _, err = cli("annotate", "export", str(tmp_path), "--layer", "stance", "-o", str(sheet))
    assert code == 2 and "the sheet exists already" in err and "--force" in err
    assert sheet.read_text(encoding="utf-8") == "unit_id,label\nu1,E\n"


def test_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    from biasaudit.cli.app import main

    with pytest.raises(SystemExit):
        main(["annotate", "export", "--help"])
    out = capsys.readouterr().out
    assert "--stratify FIELD" in out and "--with-codes" in out and "coder: human" in out and "PPI" in out
