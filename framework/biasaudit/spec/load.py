"""Validate a composed configuration dict into an `AuditConfig`, with errors that name
the file and key path that caused them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from biasaudit.errors import SpecError
from biasaudit.spec.errors_format import describe
from biasaudit.spec.models import AuditConfig

# Top-level keys that come from Hydra config groups rather than from the spec file (a
# spec cannot set them: `source.OPERATOR_GROUPS`).
GROUP_KEYS = ("model", "judge", "nli", "embedder", "runtime")


class ConfigErrors(SpecError):
    """Several validation errors at once; `lines` holds one line each."""

    def __init__(self, errors: list[SpecError]) -> None:
        self.errors = errors
        first = errors[0]
        super().__init__(first.message, file=first.file, key=first.key, hint=first.hint)

    def lines(self) -> list[str]:
        return [e.one_line() for e in self.errors]


def source_file(key: str, spec_file: str | None, choices: dict[str, str] | None) -> str | None:
    top = key.split(".")[0].split("[")[0]
    if top in GROUP_KEYS and choices and choices.get(top):
        return f"conf/{top}/{choices[top]}.yaml"
    return spec_file


def validate_config(
    data: dict[str, Any], *, spec_file: str | None, choices: dict[str, str] | None = None
) -> AuditConfig:
    try:
        return AuditConfig.model_validate(data)
    except ValidationError as exc:
        errors = [
            SpecError(msg, file=source_file(path, spec_file, choices), key=path, hint=hint)
            for path, msg, hint in describe(exc, AuditConfig)
        ]
        raise ConfigErrors(errors) from None


def read_yaml(path: Path) -> Any:
    """Load YAML within the spec bounds (size, nesting, alias expansion), with a one-line
    error naming line and column on a syntax error."""
    from biasaudit._util.fileio import read_capped
    from biasaudit.spec.yaml_bounds import MAX_BYTES
    from biasaudit.spec.yaml_bounds import load as load_bounded

    raw = read_capped(path, MAX_BYTES, what="YAML file", error=SpecError,
                      size_hint="keep the YAML file under the limit (large data belongs in data files)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not UTF-8 text (byte {exc.start})", file=str(path), hint="save it as UTF-8"
        ) from None
    return load_bounded(text, str(path))
