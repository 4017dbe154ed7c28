"""The import-linter method-independence contract (pyproject.toml) and the method list of
docs/methods.md name exactly the registered methods (issue 40, section 2): both are
written by docs/tools/method_lists.py from the registry, as README's Conformance table is
by its tool, and the committed files must equal its output. The sets are also read back
independently of the tool (the contract by tomllib, the list by its links), so a method
left out of either, or one listed that no longer exists, fails here."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("method_lists", REPO / "docs" / "tools" / "method_lists.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("method_lists", mod)
    spec.loader.exec_module(mod)
    return mod


TOOL = _tool()
LINK = re.compile(r"^- \[[^\]]+\]\(methods/(\w+)\.md\)", re.M)


def registered() -> set[str]:
    """The methods biasaudit ships, from the registry (not from the tool)."""
    from biasaudit.registry import METHODS

    return {name for name, _ in METHODS.items() if f"biasaudit.methods.{name}" in sys.modules}


def contract_modules(pyproject: str) -> list[str]:
    contracts = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
    [c] = [c for c in contracts if c["type"] == "independence"]
    return list(c["modules"])


def listed(methods_md: str) -> list[str]:
    block = methods_md[methods_md.index(TOOL.MD_START):methods_md.index(TOOL.MD_END)]
    return LINK.findall(block)


def test_the_registry_has_the_shipped_methods() -> None:
    # the packages on disk, so an empty registry cannot make the comparisons below vacuous
    on_disk = {p.parent.name for p in (REPO / "framework" / "biasaudit" / "methods").glob("*/__init__.py")}
    assert registered() == on_disk and len(on_disk) >= 9


def test_the_independence_contract_lists_exactly_the_registered_methods() -> None:
    mods = contract_modules(TOOL.PYPROJECT.read_text(encoding="utf-8"))
    assert len(mods) == len(set(mods))
    assert set(mods) == {f"biasaudit.methods.{n}" for n in registered()}


def test_methods_md_lists_exactly_the_registered_methods_with_their_pages() -> None:
    names = listed(TOOL.METHODS_MD.read_text(encoding="utf-8"))
    assert len(names) == len(set(names))
    assert set(names) == registered()
    for n in names:  # each link goes to the method's generated page
        assert (REPO / "docs" / "methods" / f"{n}.md").is_file(), n


def test_the_committed_lists_are_the_tools_output() -> None:
    old = (TOOL.METHODS_MD.read_text(encoding="utf-8"), TOOL.PYPROJECT.read_text(encoding="utf-8"))
    assert TOOL.expected(*old) == old, "run `python docs/tools/method_lists.py`"
    assert TOOL.main(["--check"]) == 0


@pytest.mark.parametrize("method", ["fisco", "token_probability"])
def test_a_method_left_out_of_either_list_is_caught(method: str) -> None:
    md = TOOL.METHODS_MD.read_text(encoding="utf-8")
    toml = TOOL.PYPROJECT.read_text(encoding="utf-8")
    md_less = "".join(ln for ln in md.splitlines(keepends=True) if f"(methods/{method}.md)" not in ln)
    toml_less = toml.replace(f'    "biasaudit.methods.{method}",\n', "")
    assert md_less != md and toml_less != toml
    # read back, each list misses the method ...
    assert method not in listed(md_less) and f"biasaudit.methods.{method}" not in contract_modules(toml_less)
    # ... and the tool puts it back (so --check reports the files as out of date)
    assert TOOL.expected(md_less, toml_less) == (md, toml)


def test_a_list_without_its_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="docs/methods.md: no <!-- method-list:start -->"):
        TOOL.expected("The methods:\n- x\n", TOOL.PYPROJECT.read_text(encoding="utf-8"))
