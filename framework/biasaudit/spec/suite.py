"""The suite file: members, subjects and overrides, loaded and checked (running a suite is run/suite.py)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from biasaudit._util.paths import find_spec_file
from biasaudit.errors import SpecError
from biasaudit.spec.errors_format import describe
from biasaudit.spec.load import read_yaml
from biasaudit.spec.models import SignOff


class SuiteMember(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, strict=True)
    spec: str
    """A shipped spec name or a path to a spec file."""
    label: str | None = None
    """Short name in the combined report (default: the spec name)."""
    overrides: list[str] = Field(default_factory=list)
    """Hydra overrides for this member only, e.g. `stimuli.sample.n=20`; the same key given on
    the command line replaces the member's."""
    metric: str | None = None
    """`<metric id>` or `<metric id>.<estimate>` used for triangulation (default: the first metric's headline)."""
    subjects: list[str] | None = None
    """Only these of the suite's subjects (e.g. chat methods on the chat models); default: all."""
    sanity: bool = False
    """A sanity check of the subjects (a task whose answer is known), not a bias method: its
    verdicts are reported per subject as the check passed or failed, and it is left out of
    the overall verdict and of triangulation."""


class SuiteSpec(SignOff):
    """A suite file; `scope`, `limitations`, `auditor` and `date` sign the combined report."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, strict=True)
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Short identifier; names the suite's report folder."""
    title: str | None = None
    """Title of the combined report (default: the name)."""
    description: str = ""
    """What the suite audits, shown in the combined report."""
    members: list[SuiteMember] = Field(min_length=1)
    """The specs the suite runs, each against every subject (or its own `subjects`)."""
    subjects: list[str] = Field(default_factory=list)
    """Model configs (conf/model/) to run every member against; `model=...` on the command line replaces them."""

    @field_validator("subjects")
    @classmethod
    def _config_names(cls, v: list[str]) -> list[str]:
        for s in v:
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", s):
                raise ValueError(f"{s[:60]!r} is not a config name (conf/model/<name>.yaml)")
        return v

    @field_validator("members")
    @classmethod
    def _unique(cls, v: list[SuiteMember]) -> list[SuiteMember]:
        seen: set[str] = set()
        for m in v:
            key = m.label or Path(m.spec).stem
            if key in seen:
                raise ValueError(f"two members are called {key!r}; give one a `label`")
            seen.add(key)
        return v


def spec_override(overrides: list[str]) -> str | None:
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if key.lstrip("+~") == "spec" and sep:
            return value
    return None


def load_suite(overrides: list[str]) -> tuple[SuiteSpec, Path] | None:
    """The suite named by `spec=...`, or None when the spec is an ordinary audit spec."""
    value = spec_override(overrides)
    if value is None or "," in value:
        return None
    path = Path(value).expanduser() if ("/" in value or value.endswith((".yaml", ".yml"))) else find_spec_file(value)
    if path is None or not path.is_file():
        return None
    try:
        raw = read_yaml(path)
    except SpecError:
        return None  # not readable as a suite: the ordinary spec checks report it
    if not isinstance(raw, dict) or "suite" not in raw:
        return None
    from biasaudit.spec.source import check_yaml11_words

    check_yaml11_words(path)  # `sanity: yes` is not silently true
    extra = sorted(set(raw) - {"suite"})
    if extra:
        raise SpecError(f"a suite file holds only `suite:`; found {', '.join(extra)}", file=str(path), key=extra[0],
                        hint="put audit settings in the member specs, or in a member's `overrides`")
    try:
        suite = SuiteSpec.model_validate(raw["suite"])
    except ValidationError as exc:
        where, msg, hint = describe(exc, SuiteSpec)[0]
        raise SpecError(msg, file=str(path), key=f"suite.{where}", hint=hint) from None
    _check_member_overrides(suite, path)
    for i, m in enumerate(suite.members):
        unknown = sorted(set(m.subjects or []) - set(suite.subjects))
        if unknown:
            raise SpecError(f"member subjects {', '.join(unknown)} are not among the suite's subjects", file=str(path),
                            key=f"suite.members[{i}].subjects", hint=f"subjects: {', '.join(suite.subjects) or 'none'}")
        p = Path(m.spec).expanduser()
        if not ((p.suffix in (".yaml", ".yml") and (path.parent / p).is_file()) or find_spec_file(m.spec)):
            raise SpecError(f"unknown member spec {m.spec!r}", file=str(path), key=f"suite.members[{i}].spec",
                            hint="a shipped spec name (biasaudit validate spec=<name>) or a path relative to the suite")
    return suite, path


def _check_member_overrides(suite: SuiteSpec, path: Path) -> None:
    """A suite is a spec file: its members' overrides may change the audit, never the
    operator's groups (model, judges, runtime paths and limits) or Hydra, and hold no
    resolver."""
    from biasaudit.spec.interp import check_text
    from biasaudit.spec.source import OPERATOR_GROUPS, TOP_LEVEL_REFUSED

    for i, m in enumerate(suite.members):
        for j, ov in enumerate(m.overrides):
            where = f"suite.members[{i}].overrides[{j}]"
            key, _, value = ov.partition("=")
            top = re.split(r"[./@]", key.lstrip("+~"), maxsplit=1)[0]
            if top in OPERATOR_GROUPS or top in TOP_LEVEL_REFUSED or top == "spec":
                raise SpecError(f"a suite member cannot override {key.lstrip('+~')!r}", file=str(path), key=where,
                                hint=OPERATOR_GROUPS.get(top, "members change the audit only (stimuli, probe, "
                                                              "metrics, thresholds, report)"))
            check_text(value, file=str(path), key=where)


def member_spec_ref(member: SuiteMember, suite_file: Path) -> str:
    p = Path(member.spec).expanduser()
    if p.suffix in (".yaml", ".yml"):
        return str((suite_file.parent / p).resolve())
    return member.spec
