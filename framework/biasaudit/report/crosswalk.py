"""The crosswalk from threshold reference keys to the clauses they support."""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from biasaudit._util.fileio import excerpt, path_problem
from biasaudit._util.paths import conf_dir
from biasaudit.errors import SpecError


class Clause(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    framework: str
    clause: str
    title: str
    description: str


def _read(path: Path) -> dict[str, Clause]:
    from biasaudit.spec.load import read_yaml

    try:
        raw = read_yaml(path) or {}
    except SpecError as exc:
        raise SpecError(f"cannot read the crosswalk: {exc.message}", file=str(path), key="report.crosswalk",
                        hint="a YAML mapping of key -> {framework, clause, title, description}") from None
    if not isinstance(raw, dict):
        raise SpecError("the crosswalk must be a mapping", file=str(path), key="report.crosswalk",
                        hint="key -> {framework, clause, title, description}")
    out = {}
    for key, val in raw.items():
        try:
            out[str(key)] = Clause.model_validate(val)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise SpecError(f"{err['msg']} at {excerpt('.'.join(str(x) for x in err['loc']))}", file=str(path),
                            key=excerpt(str(key)), hint="each entry needs framework, clause, title and description") from None
    return out


@lru_cache(maxsize=8)
def load_crosswalk(extra: str | None = None) -> dict[str, Clause]:
    out = _read(conf_dir() / "crosswalk.yaml")
    if extra:
        p = Path(extra).expanduser()
        problem = path_problem(p)  # a regular file: nothing under /proc, /sys or /dev
        if problem:
            raise SpecError(f"crosswalk file: {problem}", file=str(p), key="report.crosswalk", hint="check the path")
        out.update(_read(p))
    return out


def check_refs(refs_by_key: list[tuple[str, str]], extra: str | None, spec_file: str | None) -> None:
    """Every `refs:` entry must be a crosswalk key, so a report never cites a clause it cannot name."""
    known = load_crosswalk(extra)
    for key_path, ref in refs_by_key:
        if ref not in known:
            close = difflib.get_close_matches(ref, list(known), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "add it to a crosswalk file given as report.crosswalk=<file>"
            raise SpecError(f"unknown clause reference {ref!r}", file=spec_file, key=key_path, hint=hint)


def clause_for(ref: str, extra: str | None = None) -> dict[str, str]:
    c = load_crosswalk(extra).get(ref)
    return {"ref": ref, **c.model_dump()} if c else {"ref": ref, "framework": "", "clause": ref, "title": "",
                                                      "description": ""}
