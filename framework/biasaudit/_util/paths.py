"""Where the shipped configuration and specs live.

An installed wheel carries them as package data, `biasaudit/shipped/{conf,specs}` (copied
there at build time: framework/_biasaudit_build.py). A development (editable) install
reads the repository's own `conf/` and `specs/`, beside `framework/`.
`BIASAUDIT_CONF` and `BIASAUDIT_SPECS` override both.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = PACKAGE_DIR.parents[1]
SHIPPED_DIR = PACKAGE_DIR / "shipped"


def _shipped(name: str) -> Path:
    """The wheel's copy when there is one, else the checkout's folder."""
    packaged = SHIPPED_DIR / name
    return packaged if packaged.is_dir() else REPO_ROOT / name


SPEC_FILES_ENV = "BIASAUDIT_SPEC_FILES"
"""JSON object: spec name -> file, for specs given as paths (set by the CLI)."""


def conf_dir() -> Path:
    return Path(os.environ.get("BIASAUDIT_CONF") or _shipped("conf")).resolve()


def shipped_specs_dir() -> Path:
    return Path(os.environ.get("BIASAUDIT_SPECS") or _shipped("specs")).resolve()


def specs_dirs() -> list[Path]:
    """Directories searched for `spec=<name>`, first match wins.

    `BIASAUDIT_SPEC_DIRS` (os.pathsep separated) is set by the CLI for specs given as
    file paths, so the same lookup works inside Hydra and in parallel launcher workers.
    """
    dirs: list[Path] = []
    extra = os.environ.get("BIASAUDIT_SPEC_DIRS", "")
    dirs += [Path(p).resolve() for p in extra.split(os.pathsep) if p]
    dirs.append(shipped_specs_dir())
    return dirs


@contextlib.contextmanager
def spec_lookup_scope() -> Iterator[None]:
    """Spec files given as paths are registered in the environment for the command that
    names them (and the launcher workers it starts); this scope takes them back when the
    command (a CLI call, a Python API call) ends. Without it, in one process (a notebook,
    a test session) a later `spec=<name>` would find the folder of an earlier spec given
    as a path first, and run someone's copy of a shipped spec under the shipped name."""
    saved = {k: os.environ.get(k) for k in ("BIASAUDIT_SPEC_DIRS", SPEC_FILES_ENV)}
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def find_spec_file(name: str) -> Path | None:
    try:
        named = json.loads(os.environ.get(SPEC_FILES_ENV) or "{}")
    except ValueError:
        named = {}
    if isinstance(named, dict) and isinstance(named.get(name), str) and Path(named[name]).is_file():
        return Path(named[name])
    for d in specs_dirs():
        for cand in (d / f"{name}.yaml", d / f"{name}.yml"):
            if cand.is_file():
                return cand
    return None


def list_specs() -> list[str]:
    names: set[str] = set()
    for d in specs_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.y*ml"))
    return sorted(names)
