"""Sweep expansion shared by `run -m`, `plan -m` and suites (kept apart from the CLI so
that suites do not import it)."""

from __future__ import annotations

import itertools
from typing import Any

from biasaudit.errors import SpecError

MAX_SWEEP_JOBS = 10_000


def _hydra(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("hydra", "omegaconf"))


def _listed(key: str) -> str:
    """How to list a key's values instead of a function Hydra's sweeper would need its
    config loader for."""
    from biasaudit._util.paths import conf_dir, list_specs

    group = key.lstrip("+~")
    if group == "spec":
        return f"list the specs, e.g. spec=a,b (biasaudit list specs): {', '.join(list_specs()[:12])}"
    folder = conf_dir() / group
    if folder.is_dir():
        options = sorted(p.stem for p in folder.glob("*.yaml"))
        return f"list the configs, e.g. {group}=a,b (biasaudit list): {', '.join(options[:12])}"
    return f"list the values, e.g. {group}=1,2,3, or use range(start, stop, step)"


def _axis(ov: Any, raw: str) -> list[str]:
    """One sweep's values, as `key=value` overrides; a function that cannot list its
    values, or lists none, is a one-line error naming the override."""
    from hydra.core.override_parser.types import Glob, IntervalSweep

    key = ov.get_key_element()
    value = ov.value()
    if isinstance(value, Glob):
        raise SpecError(f"{raw!r}: glob() cannot choose the values of a sweep", file="command line",
                        key=ov.key_or_group, hint=_listed(ov.key_or_group))
    if isinstance(value, IntervalSweep):
        raise SpecError(f"{raw!r}: interval() is a range of real numbers, which a sweep cannot list",
                        file="command line", key=ov.key_or_group,
                        hint="list the values (e.g. x=0.1,0.5) or use range(start, stop, step)")
    try:
        # counted as it expands: a range sweep of a billion values is refused, not listed
        values = [f"{key}={v}" for v in itertools.islice(ov.sweep_string_iterator(), MAX_SWEEP_JOBS + 1)]
    except (ValueError, TypeError) as exc:  # e.g. range(1, 3, 0)
        raise SpecError(f"{raw!r}: {str(exc).splitlines()[0][:200]}", file="command line", key=ov.key_or_group,
                        hint="check the sweep's values (a=1,2 / choice(1,2) / range(start, stop, step))") from None
    except Exception as exc:
        if not _hydra(exc):
            raise
        raise SpecError(f"{raw!r}: {str(exc).splitlines()[0][:200]}", file="command line", key=ov.key_or_group,
                        hint=_listed(ov.key_or_group)) from None
    if not values:
        raise SpecError(f"{raw!r}: the sweep has no values", file="command line", key=ov.key_or_group,
                        hint="check the range's start, stop and step (range(3, 1) is empty)")
    return values


def sweep_combinations(overrides: list[str]) -> list[list[str]]:
    """Expand `a=1,2 b=x,y` into every combination, as Hydra's basic sweeper would."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as exc:  # the override grammar: one line, not Hydra's multi-line report
        if not _hydra(exc):
            raise
        raise SpecError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                        file="command line", key="overrides",
                        hint="overrides are Hydra's key=value; sweeps: a=1,2, choice(1,2), range(1,5)") from None
    axes: list[list[str]] = []
    n = 1
    for ov, raw in zip(parsed, overrides, strict=True):
        axes.append(_axis(ov, raw) if ov.is_sweep_override() else [raw])
        n *= len(axes[-1])
        if n > MAX_SWEEP_JOBS:
            raise SpecError(f"the sweep has more than {MAX_SWEEP_JOBS} jobs", file="command line", key=ov.key_or_group,
                            hint="sweep fewer values, or split the sweep into several commands")
    return [list(c) for c in itertools.product(*axes)]
