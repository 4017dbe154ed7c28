"""README's "Conformance" table is the one docs/tools/conformance_table.py makes from the
CONFORMANCE lists of tests/conformance/test_*.py, and every such file declares a
well-formed list (exactly the keys check, source, tolerance, each a non-empty string)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_table", REPO / "docs" / "tools" / "conformance_table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conformance_table", mod)
    spec.loader.exec_module(mod)
    return mod


TOOL = _tool()


def test_every_conformance_file_declares_a_well_formed_list() -> None:
    files = TOOL.conformance_files()
    assert files, "tests/conformance/ holds no test_*.py"
    rows, errors = TOOL.collect(files)
    assert errors == []
    assert {path for _, path in rows} == {f.relative_to(REPO).as_posix() for f in files}


def test_readme_table_is_up_to_date() -> None:
    rows, errors = TOOL.collect(TOOL.conformance_files())
    assert errors == []
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert TOOL.with_table(readme, TOOL.table(rows)) == readme, \
        "README.md's Conformance table is out of date: run `python docs/tools/conformance_table.py`"
    assert TOOL.main(["--check"]) == 0


@pytest.mark.parametrize(("value", "why"), [
    (None, "non-empty list"),
    ([], "non-empty list"),
    ([{"check": "x", "source": "y"}], "exactly the keys"),
    ([{"check": "x", "source": "y", "tolerance": "1e-9", "extra": "z"}], "exactly the keys"),
    (["check"], "exactly the keys"),
    ([{"check": "x", "source": " ", "tolerance": "1e-9"}], "non-empty strings"),
    ([{"check": "x", "source": "y", "tolerance": 1e-9}], "non-empty strings"),
])
def test_malformed_lists_are_named(value: object, why: str) -> None:
    found = TOOL.problems(value, "tests/conformance/test_x.py")
    assert found and why in found[0] and found[0].startswith("tests/conformance/test_x.py")


def test_a_file_without_a_list_and_a_stale_table_are_caught(tmp_path: Path) -> None:
    """The checks above can fail: a conformance file with no list is reported; a README
    whose block differs from the rendering is rewritten."""
    pkg = tmp_path / "tests" / "conformance"
    pkg.mkdir(parents=True)
    (tmp_path / "tests" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "test_zz_conformance_table_probe_a.py").write_text("X = 1\n")
    (pkg / "test_zz_conformance_table_probe_b.py").write_text(
        'CONFORMANCE = [{"check": "a | b", "source": "statsmodels", "tolerance": "1e-9"}]\n')
    saved = {k: v for k, v in sys.modules.items() if k == "tests" or k.startswith("tests.")}
    for k in saved:
        del sys.modules[k]
    try:
        rows, errors = TOOL.collect(TOOL.conformance_files(pkg), repo=tmp_path)
    finally:
        for added in (str(tmp_path), str(tmp_path / "framework")):
            while added in sys.path:
                sys.path.remove(added)
        for k in [k for k in sys.modules if k == "tests" or k.startswith("tests.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    assert errors == ["tests/conformance/test_zz_conformance_table_probe_a.py: no module-level CONFORMANCE list"]
    rendered = TOOL.table(rows)
    assert "| a \\| b | statsmodels | 1e-9 | `tests/conformance/test_zz_conformance_table_probe_b.py` |" in rendered
    stale = f"intro\n{TOOL.START}\n| old |\n{TOOL.END}\nafter\n"
    fresh = TOOL.with_table(stale, rendered)
    assert fresh != stale and "| old |" not in fresh and fresh.endswith(f"{TOOL.END}\nafter\n")
    with pytest.raises(ValueError, match="conformance:start"):
        TOOL.with_table("no markers", rendered)
