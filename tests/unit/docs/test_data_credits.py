"""README's data credits are generated from the shipped provenance files
(docs/tools/data_credits.py) and kept in sync (issue 37, section 1)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.data._fixtures import COMMIT, crows_csv, file_entry, provenance, write_folder

REPO = Path(__file__).resolve().parents[3]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("data_credits", REPO / "docs" / "tools" / "data_credits.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["data_credits"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_readme_credits_are_in_sync_with_the_shipped_provenance() -> None:
    """Fails when a provenance.json under specs/data changed and the README was not
    regenerated: run `python docs/tools/data_credits.py`."""
    tool = _tool()
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert tool.replace_block(text, tool.render()) == text


def test_a_benchmark_row_and_its_citation(tmp_path: Path) -> None:
    tool = _tool()
    data = tmp_path / "specs" / "data"
    a, b = crows_csv(5), crows_csv(7, "b")
    write_folder(data / "toy", {"a.csv": a, "b.csv": b},
                 doc=provenance(files=[file_entry("a.csv", a, 5), file_entry("b.csv", b, 1500)],
                                unobtained=[{"source_path": "data/big.csv", "url": "https://example.org/big.csv",
                                             "sha256": "c" * 64}]))
    block = tool.render(data, tmp_path)
    assert ("| Toy-Pairs (`toy_pairs`) | [specs/data/toy](specs/data/toy/) | 2 shipped, 1 to fetch | 1,505 | "
            "[CC BY-SA 4.0](https://creativecommons.org/licenses/by-sa/4.0/) | "
            f"[example-org/toy-pairs@{COMMIT[:7]}](https://github.com/example-org/toy-pairs/tree/{COMMIT}) |") in block
    assert "- Toy-Pairs: Doe, J. (2020). Toy pairs." in block
    assert block.startswith(tool.START) and block.endswith(tool.END)


def test_provenance_text_cannot_inject_markdown(tmp_path: Path) -> None:
    tool = _tool()
    data = tmp_path / "specs" / "data"
    write_folder(data / "toy", {}, doc=provenance(title="A | B [x](javascript:alert(1)) <img>",
                                                  licence="MIT | <b>", licence_url=""))
    block = tool.render(data, tmp_path)
    assert "A \\| B \\[x\\](javascript:alert(1)) &lt;img>" in block and "MIT \\| &lt;b>" in block


def test_no_shipped_data_and_missing_markers(tmp_path: Path) -> None:
    tool = _tool()
    assert "No published benchmark files are shipped yet." in tool.render(tmp_path / "none", tmp_path)
    with pytest.raises(SystemExit, match="markers"):
        tool.replace_block("# README without markers\n", tool.render(tmp_path / "none", tmp_path))
