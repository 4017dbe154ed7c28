"""Write README.md's "Conformance" table from the conformance suite: every
tests/conformance/test_*.py declares at module level a `CONFORMANCE` list, one entry per
check, each a dict with exactly the keys `check` (what is compared), `source` (the number's
origin outside the project: a published table, a reference implementation, an exact
computation, cited) and `tolerance`. The table goes between the markers
`<!-- conformance:start -->` and `<!-- conformance:end -->` in README.md; it is never
edited by hand.

    python docs/tools/conformance_table.py            write the table into README.md
    python docs/tools/conformance_table.py --check    exit 1 if README's table is out of date
                                                      or a conformance file's list is malformed

Each test file is imported (as `tests.conformance.<name>`), so a list may be built in code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SUITE = REPO / "tests" / "conformance"
START, END = "<!-- conformance:start -->", "<!-- conformance:end -->"
KEYS = ("check", "source", "tolerance")
HEADER = ("| check | external source | tolerance | test file |\n"
          "|---|---|---|---|\n")


def conformance_files(suite: Path = SUITE) -> list[Path]:
    return sorted(suite.glob("test_*.py"))


def problems(entries: object, where: str) -> list[str]:
    """What is wrong with one file's CONFORMANCE value (empty: well formed)."""
    if not isinstance(entries, list) or not entries:
        return [f"{where}: CONFORMANCE must be a non-empty list of dicts with keys {', '.join(KEYS)}"]
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) != set(KEYS):
            got = sorted(e) if isinstance(e, dict) else type(e).__name__
            out.append(f"{where}: CONFORMANCE[{i}] must have exactly the keys {', '.join(KEYS)} (got {got})")
        elif not all(isinstance(e[k], str) and e[k].strip() for k in KEYS):
            out.append(f"{where}: CONFORMANCE[{i}]: check, source and tolerance must be non-empty strings")
    return out


def collect(files: Sequence[Path], repo: Path = REPO) -> tuple[list[tuple[dict[str, str], str]], list[str]]:
    """(rows: (entry, test file relative to the repository), problems) over `files`."""
    for p in (str(repo), str(repo / "framework")):
        if p not in sys.path:
            sys.path.insert(0, p)
    rows: list[tuple[dict[str, str], str]] = []
    errors: list[str] = []
    for f in files:
        rel = f.resolve().relative_to(repo.resolve()).as_posix()
        module = importlib.import_module(".".join(Path(rel).with_suffix("").parts))
        if not hasattr(module, "CONFORMANCE"):
            errors.append(f"{rel}: no module-level CONFORMANCE list")
            continue
        entries = module.CONFORMANCE
        found = problems(entries, rel)
        errors += found
        if not found:
            rows += [(e, rel) for e in entries]
    return rows, errors


def cell(text: str) -> str:
    """Text for one Markdown table cell (one line, pipes escaped)."""
    return " ".join(text.split()).replace("|", "\\|")


def table(rows: Sequence[tuple[dict[str, str], str]]) -> str:
    body = "".join(f"| {cell(e['check'])} | {cell(e['source'])} | {cell(e['tolerance'])} | `{path}` |\n"
                   for e, path in rows)
    return HEADER + body


def with_table(readme: str, rendered: str) -> str:
    """README text with `rendered` between the markers (both must be there, in order)."""
    i, j = readme.find(START), readme.find(END)
    if i < 0 or j < i:
        raise ValueError(f"README.md has no {START} ... {END} block")
    return readme[:i + len(START)] + "\n" + rendered + readme[j:]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if README's table is out of date")
    args = ap.parse_args(argv)
    rows, errors = collect(conformance_files())
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    old = README.read_text(encoding="utf-8")
    new = with_table(old, table(rows))
    if args.check:
        if new != old:
            print("README.md: the Conformance table is out of date; run `python docs/tools/conformance_table.py`",
                  file=sys.stderr)
            return 1
        return 0
    if new != old:
        README.write_text(new, encoding="utf-8")
    print(f"README.md: {len(rows)} conformance checks from {len(conformance_files())} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
