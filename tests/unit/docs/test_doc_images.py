"""Every picture the docs show exists, is in the repository, and is made by a `make` target
(issue 41, acceptance 5: "screenshots in docs refreshed by `make screenshots`").

A picture under docs/img/ must be one that docs/tools/screenshots.py writes (its `SHOTS`,
which the `screenshots` target runs into docs/img/), and each of `SHOTS` must be shown
somewhere; a picture elsewhere (reports/example-report.png) must be named by the Makefile
target that makes it. The pictures stay small: they are committed, not generated at build.
`tests/integration/test_screenshots.py` runs the tool and checks what it writes."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
IMG = REPO / "docs" / "img"
MAX_BYTES = 400_000
"""Most bytes of one committed picture (the example report, a full-colour 1200 x 2400 page,
is 325 kB)."""
MAX_IMG_BYTES = 150_000
"""Most bytes of one picture in docs/img (the tool writes palette PNGs of 10-70 kB)."""

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE = re.compile(r"`[^`\n]*`")
MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.I)


def shown(text: str) -> list[str]:
    """The picture paths a Markdown text shows, outside code blocks and code spans (a
    hostile `<img>` quoted in a code block is an example, not a picture)."""
    prose = INLINE.sub("", FENCE.sub("", text))
    return MD_IMAGE.findall(prose) + HTML_IMAGE.findall(prose)


def pictures() -> dict[Path, list[str]]:
    """Each picture a doc shows (resolved) -> the docs that show it."""
    out: dict[Path, list[str]] = {}
    for doc in DOCS:
        for target in shown(doc.read_text(encoding="utf-8")):
            path = target if "://" in target else (doc.parent / target.split("#")[0]).resolve()
            out.setdefault(Path(path), []).append(str(doc.relative_to(REPO)))
    return out


def shots() -> tuple[str, ...]:
    """docs/tools/screenshots.py's `SHOTS`, read without running the tool."""
    tree = ast.parse((REPO / "docs/tools/screenshots.py").read_text(encoding="utf-8"))
    [value] = [n.value for n in tree.body if isinstance(n, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "SHOTS" for t in n.targets)]
    names = ast.literal_eval(value)
    assert isinstance(names, tuple) and all(isinstance(n, str) for n in names)
    return names


def make_recipe(target: str) -> str:
    """The recipe lines of a Makefile target."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    m = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert m, f"the Makefile has no {target!r} target"
    return m.group(1)


def test_the_parser_sees_pictures_and_skips_code() -> None:
    text = ("![a](img/a.png) and <img alt=x src='img/b.png'>\n`![c](img/c.png)`\n"
            "```html\n<img src=\"img/d.png\">\n![e](img/e.png)\n```\n![f](<img/f one.png>)\n")
    assert shown(text) == ["img/a.png", "img/b.png"]


def test_every_picture_the_docs_show_exists_and_is_committed() -> None:
    found = pictures()
    assert len(found) >= 8  # seven from `make screenshots`, the example report
    missing = [f"{p} (shown in {', '.join(d)})" for p, d in found.items() if not Path(p).is_file()]
    assert missing == [], "pictures the docs show that do not exist"
    if (REPO / ".git").exists():
        tracked = set(subprocess.run(["git", "ls-files", "-z", "--", *map(str, found)], cwd=REPO, check=True,
                                     capture_output=True, text=True).stdout.split("\0"))
        untracked = [str(p) for p in found if str(Path(p).relative_to(REPO)) not in tracked]
        assert untracked == [], "pictures the docs show that are not committed (ignored?)"
    big = [f"{p}: {Path(p).stat().st_size} bytes" for p in found
           if Path(p).stat().st_size > (MAX_IMG_BYTES if Path(p).parent == IMG else MAX_BYTES)]
    assert big == []


def test_make_screenshots_makes_every_picture_in_docs_img() -> None:
    names = shots()
    assert len(names) == len(set(names)) >= 7
    assert "docs/tools/screenshots.py docs/img" in make_recipe("screenshots")
    found = pictures()
    in_img = {p.name for p in found if p.parent == IMG}
    assert in_img == set(names), "docs/img pictures the docs show vs those `make screenshots` writes"
    on_disk = {p.name for p in IMG.iterdir()}
    assert on_disk == set(names), "docs/img holds a picture no tool writes, or misses one"
    for p in found:
        if p.parent != IMG:  # another target makes it: its recipe names the file
            rel = str(p.relative_to(REPO))
            assert any(rel in make_recipe(t) for t in ("example-report",)), f"no make target writes {rel}"
