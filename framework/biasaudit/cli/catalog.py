"""`biasaudit list <what>`: the names a user can give, each with a one-line description.

Each catalog is a function returning (name, description) rows, registered in `CATALOGS`;
a new kind of named thing (e.g. coders) is one more entry here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from biasaudit._util.paths import conf_dir, list_specs

Row = tuple[str, str]


def _read_yaml(path: Path) -> object:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def _first_comment(path: Path) -> str:
    """The first sentence of a config file's leading comment."""
    lines = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    first = re.split(r"(?<=[.:])\s", " ".join(lines), maxsplit=1)[0]
    return first.rstrip(":.")


def specs() -> list[Row]:
    from biasaudit._util.paths import find_spec_file

    rows = []
    for name in list_specs():
        path = find_spec_file(name)
        data = _read_yaml(path) if path else None
        if not isinstance(data, dict):
            rows.append((name, "(unreadable)"))
        elif isinstance(data.get("suite"), dict):
            s = data["suite"]
            rows.append((name, f"suite: {s.get('title') or s.get('name', '')} ({len(s.get('members') or [])} members)"))
        else:
            audit = data["audit"] if isinstance(data.get("audit"), dict) else {}
            report = data["report"] if isinstance(data.get("report"), dict) else {}
            title = report.get("title") or audit.get("description") or ""
            rows.append((name, f"{audit.get('method', '?')}: {title}"))
    return rows


def _group(group: str) -> Callable[[], list[Row]]:
    def rows() -> list[Row]:
        return [(p.stem, _first_comment(p)) for p in sorted((conf_dir() / group).glob("*.yaml"))]

    rows.__doc__ = f"conf/{group}/ options"
    return rows


def metrics() -> list[Row]:
    from biasaudit.methods.base import method_text
    from biasaudit.registry import METRICS

    return [(name, method_text(name).name) for name in METRICS.names()]


def coders() -> list[Row]:
    from biasaudit.registry import CODERS

    return [(name, c.title) for name, c in CODERS.items()]


def formats() -> list[Row]:
    from biasaudit.data.adapters import ADAPTERS

    rows = []
    for name in ADAPTERS.names():
        a = ADAPTERS.get(name)
        cols = ", ".join(a.required) if a.required else "any columns (rename them with `stimuli.fields`)"
        rows.append((name, f"{a.reader}: {cols}"))
    return rows


CATALOGS: dict[str, tuple[str, Callable[[], list[Row]]]] = {
    "specs": ("shipped audit specs and suites (spec=<name>)", specs),
    "models": ("models under test (model=<name>)", _group("model")),
    "judges": ("judge panels (judge=<name>)", _group("judge")),
    "nli": ("NLI models (nli=<name>)", _group("nli")),
    "embedders": ("sentence embedders (embedder=<name>)", _group("embedder")),
    "metrics": ("metrics a spec can name (metrics: - name: <name>)", metrics),
    "coders": ("coders a coding layer can use (coding: <layer>: {coder: <name>})", coders),
    "formats": ("stimulus formats (stimuli.format: <name>)", formats),
}


def render(what: str) -> list[str]:
    rows = CATALOGS[what][1]()
    width = max((len(n) for n, _ in rows), default=0)
    return [f"{n:<{width}}  {d}".rstrip() for n, d in rows]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    ls = sub.add_parser("list", help="list specs, models, metrics... with one-line descriptions",
                        description="List the names a spec or an override can use, each with a one-line "
                                    "description:\n" + "\n".join(f"  {k:<10} {d}" for k, (d, _) in CATALOGS.items()),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("what", choices=list(CATALOGS), help="what to list")
    ls.set_defaults(fn=cmd_list)
    return ls


def cmd_list(args: argparse.Namespace, rest: list[str]) -> int:
    if rest:
        print(f"error: unexpected arguments {rest}", file=sys.stderr)
        return 2
    for line in render(args.what):
        print(line)
    return 0


__all__ = ["CATALOGS", "add_parser", "cmd_list", "render"]
