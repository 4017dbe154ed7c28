"""`biasaudit init DIR [--template KIND]`: a new audit project (a spec, a small synthetic
sample in the published format its method reads, a README, the editor schema) that runs
from DIR with `biasaudit run spec=./audit.yaml`.

One template per method kind, each a folder beside this module holding `audit.yaml`,
`README.md` and `data/`; every one validates and passes `biasaudit selftest` as written
(tests/unit/cli/test_init_templates.py)."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from biasaudit._util.fileio import publish, write_output_file
from biasaudit.errors import BiasAuditError

HERE = Path(__file__).resolve().parent
SPEC_NAME = "audit.yaml"
# files whose `{{NAME}}` / `{{TITLE}}` placeholders are filled (the spec keeps its own
# Jinja `{{ ... }}` templates, so plain replacement, not a template engine)
_FILLED = (SPEC_NAME, "README.md")


_META = "template.yaml"  # a template's title, summary and order; not copied


@dataclass(frozen=True)
class Template:
    title: str  # the report title, after the project's name
    summary: str  # one line for `--list-templates` and --help
    order: int
    default: bool


def _templates() -> dict[str, Template]:
    """The templates, one folder each beside this module (named after the method kind it
    scaffolds: the names live in the folders, not in code, as no module outside a method
    package names a method)."""
    import yaml

    found: dict[str, Template] = {}
    for meta in sorted(HERE.glob(f"*/{_META}")):
        raw = yaml.safe_load(meta.read_text(encoding="utf-8"))
        found[meta.parent.name] = Template(title=str(raw["title"]), summary=str(raw["summary"]),
                                           order=int(raw["order"]), default=bool(raw.get("default", False)))
    return dict(sorted(found.items(), key=lambda kv: kv[1].order))


TEMPLATES: dict[str, Template] = _templates()
DEFAULT = next(name for name, t in TEMPLATES.items() if t.default)


def template_lines() -> list[str]:
    """One line per template, the default marked."""
    return [f"{name:<18} {t.summary}{' (default)' if name == DEFAULT else ''}" for name, t in TEMPLATES.items()]


def audit_name(folder: Path) -> str:
    """A valid `audit.name` (it names the report folder) from the folder's name."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-._")
    return name or "my-audit"


def _check_dest(dest: Path, force: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise BiasAuditError("is a file, not a folder", file=str(dest), hint="give a new or empty folder")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise BiasAuditError("folder is not empty", file=str(dest),
                             hint="give a new or empty folder, e.g. `biasaudit init my-audit`, or add --force "
                                  "to write the project's files over it")


def _write_into(tmp: Path, source: Path, name: str, title: str) -> None:
    for src in sorted(p for p in source.rglob("*") if p.is_file() and p.suffix != ".pyc"):
        rel = src.relative_to(source)
        if str(rel) == _META:
            continue
        out = tmp / rel
        if str(rel) in _FILLED:
            text = src.read_text(encoding="utf-8")
            data: str | bytes = text.replace("{{NAME}}", name).replace("{{TITLE}}", title)
        else:
            data = src.read_bytes()
        write_output_file(out, data, key="init", what="project file", streams=False)
    # the JSON Schema the spec's first line points editors at (with any installed
    # plugin's metrics and coders, as this installation validates them)
    from biasaudit.spec.schema import SCHEMA_FILES, json_schema, schema_text

    write_output_file(tmp / SCHEMA_FILES["spec"], schema_text(json_schema("spec")), key="init", what="project file",
                      streams=False)


def init_project(dest: Path, template: str = DEFAULT, force: bool = False) -> list[Path]:
    """Write the project of `template` into `dest` (created; it must be new or empty unless
    `force`, which writes the project's files over those of the same name). Everything is
    written into a scratch folder beside `dest` first and moved in at the end, so a failure
    leaves nothing half-written."""
    if template not in TEMPLATES:
        from difflib import get_close_matches

        near = get_close_matches(template, TEMPLATES, n=1)
        raise BiasAuditError(f"unknown template {template!r}", key="--template",
                             hint=(f"did you mean {near[0]!r}? " if near else "")
                             + f"one of: {', '.join(TEMPLATES)} (`biasaudit init --list-templates`)")
    source = HERE / template
    if not (source / SPEC_NAME).is_file():
        raise BiasAuditError("the template's files are missing", file=str(source),
                             hint="reinstall biasaudit")
    _check_dest(dest, force)
    name = audit_name(dest)
    title = f"{name} {TEMPLATES[template].title}"
    parent = dest.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.init-", dir=parent))
    except OSError as exc:
        raise BiasAuditError(f"cannot create the folder ({exc.strerror})", file=str(dest),
                             hint="give a folder you can write to") from exc
    try:
        _write_into(tmp, source, name, title)
        written = sorted(p.relative_to(tmp) for p in tmp.rglob("*") if p.is_file())
        # moved in by the one writer: a link at a file's place is refused (with --force
        # the link itself is replaced, never its target)
        if not dest.exists():
            publish(tmp, dest, key="init", what="project folder", ours=False)
        else:  # an empty folder, or --force: move the files over, the folder stays
            for rel in written:
                publish(tmp / rel, dest / rel, key="init", what="project file", force=force, ours=False)
    except OSError as exc:
        raise BiasAuditError(f"cannot write the project ({exc.strerror})", file=str(dest),
                             hint="give a folder you can write to") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [dest / rel for rel in written]


__all__ = ["DEFAULT", "SPEC_NAME", "TEMPLATES", "init_project", "template_lines"]
