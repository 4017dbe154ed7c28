"""Write the two lists of biasaudit's methods that used to be kept by hand, from the method
registry (issue 40, section 2):

- the method list of docs/methods.md, between `<!-- method-list:start -->` and
  `<!-- method-list:end -->`: one line per method, linking its generated page
  docs/methods/<name>.md (docs/tools/method_pages.py) with its metrics;
- the `modules` of the import-linter contract "a method's package does not import another
  method's" in pyproject.toml, between `# method-list:start` and `# method-list:end`
  inside that array: one `"biasaudit.methods.<name>",` per method.

The methods are the registered ones whose package is biasaudit's own
(biasaudit.methods.<name>), as for the method pages: a plugin installed beside biasaudit
changes neither list. Neither list is edited by hand.

    python docs/tools/method_lists.py            write both lists
    python docs/tools/method_lists.py --check    exit 1 if either list differs from the registry
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "framework"))

from biasaudit.methods.base import MethodDef  # noqa: E402
from biasaudit.registry import METHODS  # noqa: E402

METHODS_MD = REPO / "docs" / "methods.md"
PYPROJECT = REPO / "pyproject.toml"
MD_START, MD_END = "<!-- method-list:start -->", "<!-- method-list:end -->"
TOML_START, TOML_END = "# method-list:start", "# method-list:end"
CONTRACT = 'name = "a method\'s package does not import another method\'s"'


def shipped() -> list[tuple[str, MethodDef]]:
    """The registered methods whose package is one of biasaudit's own, by name."""
    items = METHODS.items()  # imports every provider once
    return sorted((name, m) for name, m in items if f"biasaudit.methods.{name}" in sys.modules)


def markdown_list(methods: Sequence[tuple[str, MethodDef]]) -> str:
    lines = []
    for name, m in methods:
        metrics = ", ".join(f"`{x}`" for x in m.metrics)
        label = "metric" if len(m.metrics) == 1 else "metrics"
        lines.append(f"- [{m.text.name}](methods/{name}.md) (method `{name}`; {label} {metrics})\n")
    return "".join(lines)


def toml_list(methods: Sequence[tuple[str, MethodDef]]) -> str:
    return "".join(f'    "biasaudit.methods.{name}",\n' for name, _ in methods)


def between(text: str, start: str, end: str, rendered: str, where: str, after: str = "") -> str:
    """`text` with `rendered` as the whole lines between the marker lines `start` and `end`
    (the first pair after `after`, when given)."""
    base = text.find(after) if after else 0
    if base < 0:
        raise ValueError(f"{where}: no {after!r}")
    i = text.find(start, base)
    j = text.find(end, i + 1) if i >= 0 else -1
    if i < 0 or j < 0:
        raise ValueError(f"{where}: no {start} ... {end} block")
    head = text.index("\n", i) + 1  # the rest of the start marker's line stays
    tail = text.rfind("\n", 0, j) + 1  # so does the end marker's indentation
    return text[:head] + rendered + text[tail:]


def expected(methods_md: str, pyproject: str) -> tuple[str, str]:
    """(docs/methods.md, pyproject.toml) as they should be."""
    methods = shipped()
    return (between(methods_md, MD_START, MD_END, markdown_list(methods), "docs/methods.md"),
            between(pyproject, TOML_START, TOML_END, toml_list(methods), "pyproject.toml", after=CONTRACT))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a list differs from the registry")
    args = ap.parse_args(argv)
    files = (METHODS_MD, PYPROJECT)
    old = [f.read_text(encoding="utf-8") for f in files]
    new = expected(*old)
    bad = [f for f, a, b in zip(files, old, new, strict=True) if a != b]
    if args.check:
        for f in bad:
            print(f"{f.relative_to(REPO)}: the method list differs from the registry; "
                  "run `python docs/tools/method_lists.py`", file=sys.stderr)
        return 1 if bad else 0
    for f, text in zip(files, new, strict=True):
        if f in bad:
            f.write_text(text, encoding="utf-8")
            print(f"wrote {f.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
