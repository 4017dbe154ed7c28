"""Spec files given by path on the command line: registered under a name Hydra's override
grammar takes (`spec=/a/x.yaml` -> `spec=x`), found again by the spec config source
(`hydra_plugins.biasaudit_specs`) and by launcher workers through the environment. Used by
the override gate (`spec/override_gate.py`), which prepares every override list this way."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from biasaudit._util.fileio import path_problem, resolved
from biasaudit._util.paths import SPEC_FILES_ENV
from biasaudit.errors import SpecError


def _is_path(value: str) -> bool:
    return "/" in value or value.endswith((".yaml", ".yml"))


# The audit section's optional free-text keys, settable on the command line (`audit.auditor="Jane Doe"`)
# though the spec may not write them: Hydra overrides only keys the composed config has.
SIGNOFF_KEYS = ("audit.scope", "audit.limitations", "audit.auditor", "audit.date")
SAMPLE_KEYS = ("stimuli.sample", "stimuli.sample.n", "stimuli.sample.seed")
"""`+stimuli.sample.n=20` is written to add a sample to a spec that has none; the specs of
published benchmarks set one (a seeded sample of the full file), and Hydra refuses `+` on a
key that exists. So `+` on these keys sets the key whether the spec has it or not."""


def prepare_overrides(overrides: list[str]) -> list[str]:
    """Rewrite `spec=<file path>` into `spec=<name>`, the name registered for that file.

    Accepts sweeps (`spec=a.yaml,b`). The name is the file's stem, or the stem plus a short
    hash of the resolved path when the stem would also name another file in the same
    command (`-m spec=/a/x.yaml,/b/x.yaml` are two jobs, not one twice). Names go into
    `BIASAUDIT_SPEC_FILES` (and folders into `BIASAUDIT_SPEC_DIRS`), so launcher workers,
    which inherit the environment, find the same files.
    """
    out = []
    extra = [p for p in os.environ.get("BIASAUDIT_SPEC_DIRS", "").split(os.pathsep) if p]
    files = _spec_files()
    claimed: dict[str, str] = {}  # name -> resolved path ("" for a bare name) in this command
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if key.lstrip("+~") == "spec" and sep:
            for item in value.split(","):
                if not _is_path(item.strip()):
                    claimed[item.strip()] = ""
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if key in SIGNOFF_KEYS and sep:
            # optional sign-off text most specs leave out: set it whether the spec has it or not
            out.append(f"++{ov}")
            continue
        if sep and key.startswith("+") and not key.startswith("++") and key[1:] in SAMPLE_KEYS:
            out.append(f"+{ov}")
            continue
        if key.lstrip("+~") != "spec" or not sep:
            out.append(ov)
            continue
        names = []
        for item in value.split(","):
            item = item.strip()
            names.append(_register(item, claimed, files, extra) if _is_path(item) else item)
        out.append(f"{key}={','.join(names)}")
    os.environ["BIASAUDIT_SPEC_DIRS"] = os.pathsep.join(extra)
    os.environ[SPEC_FILES_ENV] = json.dumps(files)
    return out


def _register(item: str, claimed: dict[str, str], files: dict[str, str], extra: list[str]) -> str:
    """The name a spec file given as a path is registered under (see `prepare_overrides`)."""
    p = resolved(Path(item).expanduser(), error=SpecError, key="spec")
    problem = path_problem(p)
    if problem:
        raise SpecError(f"spec file: {problem}", file=str(p), key="spec", hint="check the path")
    name = p.stem
    if claimed.get(name, str(p)) != str(p) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        # another file of that name, or a name Hydra's override grammar cannot take
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", p.stem).strip("_.-") or "spec"
        name = f"{slug}-{hashlib.sha256(str(p).encode()).hexdigest()[:8]}"
    claimed[name] = str(p)
    files[name] = str(p)
    if str(p.parent) not in extra:
        extra.insert(0, str(p.parent))
    return name


SPEC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A spec given by name: what Hydra's override grammar takes as a plain value."""


def spec_argument(spec: str | os.PathLike[str]) -> str:
    """The Python API's `spec` argument (one spec, never a sweep) as the value of a `spec=`
    override. A path is registered as `prepare_overrides` registers one, under a name the
    override grammar takes, so any file name works (`a,b.yaml`, `x=y.yaml`, quotes,
    brackets, parentheses); a name must be a plain name."""
    value = os.fspath(spec)
    if _is_path(value) or (isinstance(spec, os.PathLike) and Path(value).is_file()):
        extra = [p for p in os.environ.get("BIASAUDIT_SPEC_DIRS", "").split(os.pathsep) if p]
        files = _spec_files()
        name = _register(value, {}, files, extra)
        os.environ["BIASAUDIT_SPEC_DIRS"] = os.pathsep.join(extra)
        os.environ[SPEC_FILES_ENV] = json.dumps(files)
        return name
    if not SPEC_NAME.fullmatch(value):
        raise SpecError(f"{value!r} is not a spec name (letters, digits, '_', '.' and '-')", key="spec",
                        hint="give a shipped spec's name (biasaudit list specs) or a path to a .yaml file")
    return value


def _spec_files() -> dict[str, str]:
    try:
        files = json.loads(os.environ.get(SPEC_FILES_ENV) or "{}")
    except ValueError:
        return {}
    return files if isinstance(files, dict) else {}
