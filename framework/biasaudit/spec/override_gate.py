"""The one gate every command-line override passes before Hydra sees it.

Hydra instantiates `_target_` import paths under `hydra.callbacks`, `hydra.job_logging`,
launchers and sweepers, so an override such as `+hydra.callbacks.x._target_=shutil.copyfile`
would run any Python callable. Every override list (the command line of every command, a
suite member's, the Python API's, a re-run read back from a manifest) goes through `gate`,
which parses each override with Hydra's own grammar (no regex: quoting, `+`/`++`/`~`,
`group@package`, sweeps, `choice()`/`range()`/`glob()` and odd spacing are read exactly as
Hydra reads them) and refuses, with one line naming the override, the reason and a fix:

- a key under `hydra.` or a `hydra/` config group that is not in `HYDRA_ALLOWED`, a
  `hydra/launcher` other than the shipped ones, a sweep or a mapping for a Hydra setting,
  a control character (a newline in a SLURM setting would be a line of the batch script);
- `_target_`, `_args_`, `_partial_`, `_convert_` or `_recursive_` as a key, anywhere;
- a `@package` (it can place a config group under `hydra`);
- interpolation resolvers and computed keys in any value (`spec/interp.py`);
and `check_conflicts` refuses a key given twice, just before Hydra composes.

It returns `GatedOverrides`, the only type the Hydra composition accepts
(`spec/compose.py`); nothing else constructs it (tests/unit/test_architecture.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from biasaudit.errors import SpecError
from biasaudit.spec.interp import check_text
from biasaudit.spec.spec_names import prepare_overrides

WHERE = "command line"

RESERVED_KEYS = frozenset({"_target_", "_args_", "_partial_", "_convert_", "_recursive_"})
"""Hydra's instantiate keys: an import path to call and how to call it."""

LAUNCHERS = ("basic", "joblib", "slurm", "ray_local", "submitit_local", "submitit_slurm")
"""`hydra/launcher=` choices: Hydra's own basic and joblib launchers, the shipped
conf/hydra/launcher/ configs and the submitit ones they build on (docs/running-at-scale.md)."""

LAUNCHER_SETTINGS = (
    # joblib
    "n_jobs", "timeout", "verbose", "prefer", "backend", "batch_size", "pre_dispatch",
    # submitit (local and SLURM)
    "partition", "timeout_min", "cpus_per_task", "gpus_per_node", "tasks_per_node", "mem_gb", "nodes",
    "array_parallelism", "qos", "account", "constraint", "comment", "exclude", "gres", "mem_per_gpu",
    "mem_per_cpu", "cpus_per_gpu", "max_num_timeout", "name", "signal_delay_s", "stderr_to_stdout",
    "submitit_folder",
    # ray (conf/hydra/launcher/ray_local.yaml: ray.init's arguments, each job's resources)
    "ray.init.address", "ray.init.num_cpus", "ray.init.num_gpus", "ray.init.include_dashboard",
    "ray.init.object_store_memory", "ray.remote.num_cpus", "ray.remote.num_gpus", "ray.remote.memory",
)
"""`hydra.launcher.<setting>` values a user may set: resources and parallelism, each a plain
value. Left out on purpose: submitit's `setup` and `srun_args` and SLURM's
`additional_parameters` (shell lines and flags), ray's `runtime_env` (installs and runs
code), and every `_target_`."""

HYDRA_ALLOWED: dict[str, str] = {
    "hydra/launcher": "a shipped launcher: " + ", ".join(LAUNCHERS),
    "hydra.searchpath": "a list of file:// or biasaudit-specs:// folders",
    "hydra.verbose": "true, or a logger name or a list of logger names (DEBUG logging into cli.log)",
    **{f"hydra.launcher.{k}": "a plain value (number, text, true/false or null)" for k in LAUNCHER_SETTINGS},
}
"""Every Hydra setting the command line may give, and what its value must be."""

ALLOWED_HINT = ("Hydra settings allowed on the command line: hydra/launcher=<" + "|".join(LAUNCHERS)
                + ">, hydra.launcher.<n_jobs, timeout, partition, cpus_per_task, ...>, hydra.searchpath, "
                  "hydra.verbose (docs/cli.md#overrides); run folders go under runtime.reports_dir, a sweep is `run -m`")

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SEARCH_PATH = re.compile(r"(file://|biasaudit-specs://)[^\s]*")


class GatedOverrides(tuple[str, ...]):
    """Overrides that passed `gate`, prepared for Hydra (spec files registered by name).
    `typed` is the same overrides as they were given (spec files by path): the command a
    user re-runs. Only `gate` makes one."""

    typed: tuple[str, ...]

    def __new__(cls, items: Iterable[str], typed: Iterable[str], *, _token: object) -> GatedOverrides:
        if _token is not _TOKEN:
            raise TypeError("GatedOverrides are made by biasaudit.spec.override_gate.gate only")
        self = super().__new__(cls, items)
        self.typed = tuple(typed)
        return self

    def plus(self, *more: str) -> GatedOverrides:
        """These overrides and `more` (the CLI's own additions), through the gate again."""
        return gate([*self.typed, *more])


_TOKEN = object()


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= 80 else raw[:77] + "...")


def _refuse(raw: str, key: str, why: str, hint: str, where: str) -> SpecError:
    return SpecError(f"override {_shown(raw)} is refused: {why}", file=where, key=key or "overrides", hint=hint)


def _parse(raw: str, where: str) -> Any:
    """The override as Hydra parses it (its own grammar, as `compose` and `@hydra.main` do)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        [ov] = OverridesParser.create().parse_overrides([raw])
    except Exception as exc:
        if not type(exc).__module__.startswith(("hydra", "omegaconf")):
            raise
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecError(f"override {_shown(raw)} cannot be parsed ({detail[:120]})", file=where, key="overrides",
                        hint="overrides are Hydra's key=value (quote a value with spaces or special characters); "
                             "see `biasaudit run --help`") from None
    return ov


def _walk(value: Any) -> Iterable[tuple[str, bool]]:
    """Every string inside a parsed value as (text, is a mapping key): lists, mappings,
    `choice()` lists, `glob()` patterns."""
    stack = [(value, False)]
    while stack:
        x, is_key = stack.pop()
        if isinstance(x, str):
            yield x, is_key
        elif isinstance(x, dict):
            stack.extend((k, True) for k in x)
            stack.extend((v, False) for v in x.values())
        elif isinstance(x, list | tuple):
            stack.extend((v, False) for v in x)
        elif hasattr(x, "list"):  # ChoiceSweep
            stack.extend((v, False) for v in x.list)
        elif hasattr(x, "include"):  # Glob
            stack.extend((v, False) for v in [*x.include, *x.exclude])


def _check_hydra(ov: Any, raw: str, where: str) -> None:
    key = ov.key_or_group
    if key not in HYDRA_ALLOWED:
        raise _refuse(raw, key, f"{key!r} is not among the Hydra settings the command line may give "
                                "(Hydra's settings can name code to run)", ALLOWED_HINT, where)
    fix = f"give {key} {HYDRA_ALLOWED[key]}"
    if ov.is_delete():
        raise _refuse(raw, key, "a Hydra setting cannot be deleted", fix, where)
    if ov.is_sweep_override():
        raise _refuse(raw, key, "a Hydra setting cannot be swept", fix, where)
    value = ov.value()
    if key == "hydra/launcher":
        ok = isinstance(value, str) and value in LAUNCHERS
    elif key == "hydra.searchpath":
        ok = isinstance(value, list) and all(isinstance(v, str) and _SEARCH_PATH.fullmatch(v) for v in value)
    elif key == "hydra.verbose":  # logging verbosity only: no path, no code
        ok = isinstance(value, bool | str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    elif key.startswith("hydra.launcher."):
        ok = value is None or isinstance(value, bool | int | float | str)
    else:  # pragma: no cover - every allowed key has its rule above
        ok = False
    if not ok:
        raise _refuse(raw, key, f"not {HYDRA_ALLOWED[key]}", fix, where)
    for text, _ in _walk(value):
        if _CONTROL.search(text):
            raise _refuse(raw, key, "a control character or line break in a Hydra setting", fix, where)


def _check_one(ov: Any, raw: str, where: str) -> None:
    key = ov.key_or_group
    parts = re.split(r"[./]", key)
    bad = sorted(RESERVED_KEYS.intersection(parts))
    if bad or "${" in key:
        why = f"{bad[0]} names code to run" if bad else "an interpolation in a key"
        raise _refuse(raw, key, why, "give plain config keys and values; `_target_` is never taken from the "
                                     "command line", where)
    if ov.package is not None:
        raise _refuse(raw, key, f"a config group placed at @{ov.package} (a package) is not allowed",
                      f"pick a config group option with {key}=<option>", where)
    if parts[0] == "hydra":
        _check_hydra(ov, raw, where)
    if ov.is_delete():
        return
    for text, is_key in _walk(ov.value()):
        if is_key and (text in RESERVED_KEYS or "${" in text):
            raise _refuse(raw, key, f"a mapping with the key {text[:40]!r} (code to run, or an interpolation)",
                          "give plain keys and values", where)
        check_text(text, file=where, key=key)


def check_conflicts(overrides: GatedOverrides, where: str = WHERE) -> None:
    """Refuse a key given twice: Hydra would keep the last silently. Checked just before
    Hydra composes (after a sweep is expanded, so a sweep's own errors come first)."""
    parsed = [_parse(raw, where) for raw in overrides]
    first: dict[tuple[str, str | None], str] = {}
    for ov, raw in zip(parsed, overrides, strict=True):
        k = (ov.key_or_group, ov.package)
        if k in first:
            name = ov.key_or_group + (f"@{ov.package}" if ov.package else "")
            raise SpecError(f"conflicting overrides {first[k]!r} and {raw!r}", file=where, key=name,
                            hint=f"give {name} once")
        first[k] = raw


def gate(overrides: Iterable[str], *, where: str = WHERE) -> GatedOverrides:
    """The overrides, checked as above and prepared for Hydra; `SpecError` (one line,
    exit code 2) on the first that is refused. Idempotent: gating gated overrides again
    returns the same list."""
    typed = list(overrides)
    for raw in typed:
        if not isinstance(raw, str):
            raise TypeError(f"an override must be a string, not {type(raw).__name__}")
    prepared = prepare_overrides(typed)
    for raw in prepared:
        _check_one(_parse(raw, where), raw, where)
    return GatedOverrides(prepared, typed, _token=_TOKEN)


def check_recorded(overrides: Iterable[str], *, where: str, strict: bool = True) -> None:
    """The gate's checks on overrides read back from a run (manifest.json's `overrides`
    and `command`), without registering spec files: a received run folder's re-run line
    and self-test may carry only what the gate allows. `spec=<path>` is a file path, not
    parsed (a path may hold characters the grammar does not take); with `strict` False an
    argument the grammar cannot read (a flag's value in `command`) is passed over, since
    Hydra could not read it either."""
    for raw in overrides:
        if not isinstance(raw, str):
            raise SpecError("an override is not text", file=where, key="overrides", hint="give a run written by biasaudit")
        if raw.partition("=")[0].lstrip("+~") == "spec":
            continue
        try:
            ov = _parse(raw, where)
        except SpecError:
            if strict:
                raise
            continue
        _check_one(ov, raw, where)


__all__ = ["HYDRA_ALLOWED", "LAUNCHERS", "LAUNCHER_SETTINGS", "RESERVED_KEYS", "GatedOverrides",
           "check_conflicts", "check_recorded", "gate"]
