"""`biasaudit init DIR`: a new audit project (a spec, sample data in a published format,
a README stub) that runs from DIR with `biasaudit run spec=./audit.yaml`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from biasaudit._util.paths import shipped_specs_dir
from biasaudit.errors import BiasAuditError

TEMPLATES = Path(__file__).resolve().parent
SPEC_NAME = "audit.yaml"
# the shipped team-written sample in the published CrowS-Pairs format
SAMPLE = Path("data") / "crows_pairs_sample.csv"


def audit_name(folder: Path) -> str:
    """A valid `audit.name` (it names the report folder) from the folder's name."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-._")
    return name or "my-audit"


def init_project(dest: Path) -> list[Path]:
    """Write the project files into `dest` (created; it must not hold files yet)."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BiasAuditError("folder is not empty", file=str(dest),
                             hint="give a new or empty folder, e.g. `biasaudit init my-audit`")
    sample = shipped_specs_dir() / SAMPLE
    if not sample.is_file():
        raise BiasAuditError("the shipped sample data is missing", file=str(sample),
                             hint="reinstall biasaudit, or unset BIASAUDIT_SPECS")
    name = audit_name(dest)
    title = f"{name} token-probability bias audit"
    (dest / "data").mkdir(parents=True, exist_ok=True)
    written = []
    for template in (SPEC_NAME, "README.md"):
        # plain placeholder replacement: the spec itself holds Jinja `{{ ... }}` templates
        text = (TEMPLATES / template).read_text(encoding="utf-8")
        text = text.replace("{{NAME}}", name).replace("{{TITLE}}", title)
        (dest / template).write_text(text, encoding="utf-8")
        written.append(dest / template)
    shutil.copyfile(sample, dest / "data" / "pairs.csv")
    written.append(dest / "data" / "pairs.csv")
    # the JSON Schema the spec's first line points editors at (with any installed
    # plugin's metrics and coders, as this installation validates them)
    from biasaudit.spec.schema import SCHEMA_FILES, json_schema, schema_text

    (dest / SCHEMA_FILES["spec"]).write_text(schema_text(json_schema("spec")), encoding="utf-8")
    written.append(dest / SCHEMA_FILES["spec"])
    return written


__all__ = ["SPEC_NAME", "init_project"]
