"""Check the relative links of the documentation: every `[text](target)` in README.md and
docs/**/*.md that is not a URL must name an existing file, and a `#anchor` must be a
heading of the target Markdown file (GitHub's slugs). Links inside code are ignored.

    python docs/tools/check_links.py [FILE.md ...]     exit 1 and one line per broken link
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```+|~~~+)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    out, fence = [], ""
    for no, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = ""
            continue
        if not fence:
            out.append((no, CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)))
    return out


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    found: set[str] = set()
    fence = ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            mark = m.group(1)
            fence = mark if not fence else ("" if mark[0] == fence[0] and len(mark) >= len(fence) else fence)
            continue
        if fence:
            continue
        found.update(HTML_ANCHOR.findall(line))
        h = HEADING.match(line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


def shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def check(md: Path) -> list[str]:
    problems = []
    for no, line in prose_lines(md.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            target = m.group(1)
            if not target or SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            where = f"{shown(md)}:{no}: {target}"
            if not dest.exists():
                problems.append(f"{where}: no file {shown(dest)}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: no heading #{anchor} in {shown(dest)}")
    return problems


def main(argv: list[str]) -> int:
    files = [Path(a).resolve() for a in argv] or [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print(p)
    print(f"{len(files)} files, {'no broken links' if not problems else f'{len(problems)} broken link(s)'}",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
