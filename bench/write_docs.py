"""Write what `bench/run.py` printed into docs/benchmarks.md, between the markers
`<!-- bench:begin -->` and `<!-- bench:end -->`; the hand-written text outside them is
kept as it is. `make bench` runs it after the benchmarks:

    python bench/run.py | tee bench/results/output.txt
    python bench/write_docs.py bench/results/output.txt [docs/benchmarks.md]

The block records when and where the figures were taken (date, machine, Python and the
versions of the packages that decide the timings), then the output unchanged.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
PACKAGES = ("biasaudit", "torch", "transformers", "lm_eval", "llama_cpp_python", "httpx")


def versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def machine() -> str:
    cores = os.cpu_count() or 0
    return f"{platform.system()} {platform.machine()}, {cores} CPU core{'s' if cores != 1 else ''}"


def render(output: str, *, when: datetime | None = None, where: str | None = None,
           packages: str | None = None) -> str:
    """The block between the markers (markers included)."""
    when = when or datetime.now(UTC)
    text = output.strip("\n")
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)  # longer than any backtick run in the output
    lines = [
        BEGIN,
        "<!-- written by bench/write_docs.py from `make bench`: do not edit by hand -->",
        "",
        f"Last `make bench`: {when.strftime('%Y-%m-%d %H:%M')} UTC on {where or machine()}; "
        f"Python {platform.python_version()}; {packages if packages is not None else versions()}.",
        "Timings depend on the machine and on what else runs on it: compare runs from the same machine only.",
        "",
        f"{fence}text",
        text,
        fence,
        END,
    ]
    return "\n".join(lines)


def splice(doc: str, block: str) -> str:
    """`doc` with the text between (and including) the markers replaced by `block`."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise ValueError(f"needs exactly one {BEGIN} followed by one {END}")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + block + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="what bench/run.py printed (a file, or - for stdin)")
    ap.add_argument("doc", nargs="?", default=str(REPO / "docs" / "benchmarks.md"), help="the page to update")
    args = ap.parse_args(argv)
    text = sys.stdin.read() if args.output == "-" else Path(args.output).read_text(encoding="utf-8")
    if not text.strip():
        print(f"bench/write_docs.py: {args.output} is empty; {args.doc} left as it is", file=sys.stderr)
        return 2
    doc = Path(args.doc)
    try:
        new = splice(doc.read_text(encoding="utf-8"), render(text))
    except (OSError, ValueError) as exc:
        print(f"bench/write_docs.py: {doc}: {exc}", file=sys.stderr)
        return 2
    tmp = doc.with_name(doc.name + ".tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(doc)
    print(f"figures written to {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
