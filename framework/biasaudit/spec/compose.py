"""Hydra composition: overrides -> plain dict -> validated `AuditConfig`.

Hydra composes (defaults list, config groups, command-line overrides); Pydantic types.
The spec is the `spec` group, served from `specs/` by the config source in
`hydra_plugins.biasaudit_specs` and merged at the root, so `stimuli.source=...` works.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from biasaudit._util.fileio import atomic_write
from biasaudit._util.paths import (
    conf_dir,
    find_spec_file,
    list_specs,
    shipped_specs_dir,
)
from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.records.json import JSONObject
from biasaudit.spec import AuditConfig, validate_config
from biasaudit.spec.interp import check_tree
from biasaudit.spec.load import source_file
from biasaudit.spec.override_gate import GatedOverrides, check_conflicts, gate
from biasaudit.spec.spec_names import (
    SAMPLE_KEYS,
    SIGNOFF_KEYS,
    SPEC_NAME,
    prepare_overrides,
    spec_argument,
)


@dataclass
class Composed:
    config: AuditConfig
    data: JSONObject
    """The composed configuration as plain JSON, before validation (kept in the manifest)."""
    spec_file: Path
    choices: dict[str, str]
    overrides: list[str] = field(default_factory=list)


def _ours(exc: BaseException) -> BiasAuditError | None:
    """Our own error, if Hydra wrapped one (e.g. raised by the spec config source)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, BiasAuditError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _hydra_error(exc: Exception) -> BiasAuditError:
    if (ours := _ours(exc)) is not None:
        return ours
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    m = re.search(r"In '[^']*': Could not find '([^/']+)/([^']+)'", str(exc)) or re.search(
        r"Could not find '([^/']+)/([^']+)'", str(exc)
    )
    if m:
        group, name = m.group(1), m.group(2)
        if group == "spec":
            return SpecError(
                f"unknown spec {name!r}",
                file="specs/",
                key="spec",
                hint=f"known specs: {', '.join(list_specs())}; or give a path to a spec file",
            )
        options = sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))
        return SpecError(
            f"unknown {group} config {name!r}",
            file=f"conf/{group}/",
            key=group,
            hint=f"available: {', '.join(options)}",
        )
    m = re.search(r"Could not load 'hydra/launcher/([^']+)'", str(exc))
    if m:
        plugin = {"submitit_slurm": "hydra-submitit-launcher", "submitit_local": "hydra-submitit-launcher",
                  "ray": "hydra-ray-launcher"}.get(m.group(1), f"the Hydra launcher plugin providing {m.group(1)!r}")
        return SpecError(f"launcher {m.group(1)!r} is not installed", key="hydra/launcher",
                         hint=f"pip install {plugin} (joblib is built in)")
    m = re.match(r"In 'spec/([^']+)': \w+ raised while composing config:\s*(.*)", str(exc), re.S)
    if m:  # the spec does not merge with the defaults (e.g. `report: [1]`, a list where a mapping is)
        found = find_spec_file(m.group(1))
        detail = m.group(2).strip().splitlines()[0] if m.group(2).strip() else "it cannot be merged"
        if re.match(r"Cannot merge (DictConfig with ListConfig|ListConfig with DictConfig)", detail):
            detail = "a list stands where a mapping belongs, or a mapping where a list belongs"
        full_key = re.search(r"full_key: (\S+)", m.group(2))
        return SpecError(detail, file=str(found) if found else f"spec {m.group(1)}",
                         key=full_key.group(1) if full_key else "(file)",
                         hint="a section or key has the wrong kind; `biasaudit schema` shows the type of each")
    m = re.search(r"(?:Sweep parameters|Ambiguous value for argument) '([^']+)'", str(exc))
    if m:  # a sweep, or shuffle()/sort() of several values, without -m
        key = m.group(1).partition("=")[0].lstrip("+~")
        hint = "run one job per value with `biasaudit run -m` or `biasaudit plan -m`, or give one value"
        if "glob(" in m.group(1):
            hint = f"glob() cannot choose a sweep's values: list them, e.g. {key}=a,b (biasaudit list)"
        elif "interval(" in m.group(1):
            hint = f"interval() cannot be listed: give values (e.g. {key}=0.1,0.5) or range(start, stop, step)"
        return SpecError(f"{m.group(1)!r} is a sweep (one run per value)", key="overrides", hint=hint)
    m = re.search(r"Could not override '([^']+)'", str(exc))
    if m:
        return SpecError(
            f"cannot override {m.group(1)!r}: no such key in the composed config",
            key=m.group(1),
            hint=f"check the spelling, or use '+{m.group(1)}=...' to add a new key",
        )
    return SpecError(msg, key="overrides", hint="see 'biasaudit run --help' for override syntax")


def compose_dict(overrides: GatedOverrides, *, check: bool = True) -> tuple[DictConfig, dict[str, str]]:
    """Hydra's composition of overrides that passed the gate (spec/override_gate.py); the
    only call of Hydra's compose API."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if not isinstance(overrides, GatedOverrides):  # untyped callers too: nothing reaches Hydra ungated
        raise TypeError("compose_dict takes the gate's output: biasaudit.spec.override_gate.gate(overrides)")
    check_conflicts(overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    except Exception as exc:  # Hydra raises several exception types for bad overrides
        raise _hydra_error(exc) from None
    finally:
        GlobalHydra.instance().clear()
    if check:  # off only for the shipped baseline the check compares with
        check_hydra_settings(cfg)
    choices = {k: str(v) for k, v in cfg.hydra.runtime.choices.items() if v is not None}
    return cfg, choices


# Hydra settings that name code to run or places to write: a config file on the search
# path (`hydra.searchpath=[file://...]`, a `# @package _global_` model config) could set
# them even though the command line cannot, so the composed values must be the shipped ones.
FIXED_HYDRA_SETTINGS = ("callbacks", "job_logging", "hydra_logging", "sweeper", "job.env_set", "job.env_copy",
                        "job.chdir", "job.name", "output_subdir", "run", "sweep")
SHIPPED_LAUNCHERS = frozenset({
    "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
    "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
    "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher",
})
_LAUNCHER_CODE_KEYS = ("setup", "srun_args", "additional_parameters", "runtime_env")


@lru_cache(maxsize=1)
def _shipped_hydra() -> dict[str, object]:
    # no spec (`~spec`): the Hydra settings are conf/config.yaml's whatever the spec
    cfg, _ = compose_dict(gate(["~spec"]), check=False)
    return {k: _plain(OmegaConf.select(cfg.hydra, k)) for k in FIXED_HYDRA_SETTINGS}


def _plain(value: object) -> object:
    return OmegaConf.to_container(value, resolve=False) if OmegaConf.is_config(value) else value


def check_hydra_settings(cfg: DictConfig) -> None:
    """The composed Hydra settings that can run code or choose where files go are the
    shipped ones, whatever config files the search path added (one line, exit 2)."""
    shipped = _shipped_hydra()
    for key in FIXED_HYDRA_SETTINGS:
        got = _plain(OmegaConf.select(cfg.hydra, key))
        if got != shipped[key] and not (got in (None, {}, []) and shipped[key] in (None, {}, [])):
            raise SpecError(f"a config file on the search path sets hydra.{key}, which only biasaudit's own "
                            "configuration may set (Hydra's settings can name code to run or where files go)",
                            key=f"hydra.{key}", hint="remove `hydra:` settings (and `@package _global_` "
                            "placements) from your config files; see docs/threat-model.md")
    launcher = cfg.hydra.get("launcher") or {}
    target = launcher.get("_target_")
    if target not in SHIPPED_LAUNCHERS:
        raise SpecError(f"the launcher {target!r} is not one biasaudit ships", key="hydra.launcher._target_",
                        hint="choose a shipped launcher: hydra/launcher=basic|joblib|slurm|ray_local|submitit_*")
    for k in _LAUNCHER_CODE_KEYS:
        if launcher.get(k) not in (None, [], {}, ""):
            raise SpecError(f"a config file sets hydra.launcher.{k}, which runs commands on the workers",
                            key=f"hydra.launcher.{k}", hint="set up the workers' environment outside biasaudit")


def to_audit_config(cfg: DictConfig, choices: dict[str, str], overrides: GatedOverrides) -> Composed:
    """The composed configuration validated; its `overrides` (for the manifest, the re-run
    line and `.hydra/overrides.yaml`) are the gate's output."""
    spec_name = choices.get("spec", "")
    spec_file = find_spec_file(spec_name)
    if spec_file is None:
        raise SpecError(f"unknown spec {spec_name!r}", key="spec", hint="known: " + ", ".join(list_specs()))
    cfg = cfg.copy()
    with open_dict(cfg), read_write(cfg):
        cfg.pop("hydra", None)
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(raw, dict)
    raw.pop("hydra", None)
    # before anything resolves (`missing_keys` below does): no resolver, no computed key
    check_tree(raw, "", lambda key: source_file(key, str(spec_file), choices))
    try:
        missing = sorted(OmegaConf.missing_keys(cfg))  # resolves interpolations on the way
    except Exception as exc:  # OmegaConf's interpolation errors (a key that is not there, a cycle)
        if not type(exc).__module__.startswith("omegaconf"):
            raise
        raise SpecError(f"cannot resolve interpolation: {str(exc).splitlines()[0]}", file=str(spec_file),
                        hint="check ${...} references") from None
    if missing:
        key = missing[0]
        top = key.split(".")[0]
        where = f"conf/{top}/{choices[top]}.yaml" if top in choices else str(spec_file)
        raise SpecError("a required value is not set (???)", file=where, key=key,
                        hint=f"give it on the command line: {key}=...")
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:
        raise SpecError(
            f"cannot resolve interpolation: {str(exc).splitlines()[0]}",
            file=str(spec_file),
            hint="check ${...} references",
        ) from None
    assert isinstance(resolved, dict)
    data: JSONObject = {str(k): v for k, v in resolved.items() if k != "hydra"}
    config = validate_config(data, spec_file=str(spec_file), choices=choices)
    return Composed(
        config=config, data=data, spec_file=spec_file, choices=choices,
        overrides=reproducible_overrides(overrides, spec_file),
    )


def reproducible_overrides(overrides: GatedOverrides, spec_file: Path) -> list[str]:
    """The overrides with `spec=` naming the file that ran, so that the manifest, the
    report's re-run command and `.hydra/overrides.yaml` work from any folder: a shipped
    spec keeps its name; any other spec (given by path, which the CLI passes to Hydra as
    its stem plus a search folder only this process knows) becomes its absolute path."""
    out = []
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if key.lstrip("+~") == "spec" and sep:
            shipped = spec_file.parent == shipped_specs_dir() and value == spec_file.stem
            ov = ov if shipped else f"{key}={spec_file.resolve()}"
        out.append(ov)
    return out


def record_hydra_overrides(output_dir: Path, overrides: list[str]) -> None:
    """Rewrite Hydra's `.hydra/overrides.yaml` of a run with its reproducible overrides
    (Hydra wrote the spec's bare stem there, which only this process can resolve)."""
    import yaml

    path = output_dir / ".hydra" / "overrides.yaml"
    if path.is_file():
        atomic_write(path, yaml.safe_dump(list(overrides), default_flow_style=False), key="hydra",
                     what="Hydra overrides record")


def compose(overrides: Sequence[str]) -> Composed:
    """The audit config of `overrides` (through the gate first, whoever calls)."""
    return compose_with_hydra(overrides)[0]


def compose_with_hydra(overrides: Sequence[str]) -> tuple[Composed, DictConfig]:
    """`compose`, and the composed configuration with its `hydra` node (the run folder,
    the logging, the overrides): what a single command-line run needs to make its run
    folder as Hydra would, without composing a second time (runner/jobs.py)."""
    gated = gate(overrides)
    cfg, choices = compose_dict(gated)
    return to_audit_config(cfg, choices, gated), cfg


def _value_override(ov: Any) -> bool:
    """A plain value set on a dotted key outside `hydra.` (`runtime.seed=3`): what Hydra
    applies to the composed config after composing, never a config group or a search path."""
    key = ov.key_or_group
    return (ov.package is None and "." in key and not key.startswith("hydra") and not ov.is_sweep_override()
            and "/" not in key)


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _shared_sweep(combos: list[GatedOverrides]) -> tuple[list[int], list[list[Any]]] | None:
    """The positions that vary across the jobs and each job's parsed values there, when
    the jobs can share one composition; None when every job must be composed."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    varying = [i for i in range(len(combos[0])) if len({c[i] for c in combos}) > 1]
    parser = OverridesParser.create()
    try:
        fixed = parser.parse_overrides([ov for i, ov in enumerate(combos[0]) if i not in varying])
        values = [parser.parse_overrides([c[i] for i in varying]) for c in combos]
    except Exception as exc:  # grammar errors: `compose` reports them, job by job
        if type(exc).__module__.startswith(("hydra", "omegaconf")):
            return None
        raise
    keys = {ov.key_or_group for ovs in values for ov in ovs}
    if not all(_value_override(ov) for ovs in values for ov in ovs) or any(
            _overlaps(k, f.key_or_group) for k in keys for f in fixed):
        return None
    return varying, values


def _compose_shared(combos: list[GatedOverrides], varying: list[int], values: list[list[Any]]) -> list[Composed]:
    """One composition without the varying values, then each job's values set on a copy."""
    import copy

    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    base, choices = compose_dict(gate([ov for i, ov in enumerate(combos[0]) if i not in varying]))
    out = []
    for combo, ovs in zip(combos, values, strict=True):
        check_conflicts(combo)
        cfg = copy.deepcopy(base)
        try:
            ConfigLoaderImpl._apply_overrides_to_config(ovs, cfg)
        except Exception as exc:  # Hydra's error for a key that is not there, a value that does not fit
            raise _hydra_error(exc) from None
        out.append(to_audit_config(cfg, choices, combo))
    return out


def compose_many(combos: Sequence[Sequence[str]]) -> list[Composed]:
    """`compose` for every job of a sweep (`plan -m`, `run -m`'s checks before launching).

    Hydra's composition (defaults list, config groups, files) costs about a quarter of a
    second a job. Jobs that differ only in plain values (`runtime.seed=range(0,50)`,
    `report.max_rows=...`: dotted keys outside `hydra.`, on keys no other override
    touches) share one composition, made without those values; each job's values are
    then set on a copy of it exactly as Hydra sets command-line values once it has
    composed (`_apply_overrides_to_config`). Any other sweep composes every job."""
    gated = [gate(c) for c in combos]  # every job through the gate before any composes
    if len(gated) < 2 or len({len(c) for c in gated}) != 1:
        return [compose(c) for c in gated]
    shared = _shared_sweep(gated)
    if shared is None:
        return [compose(c) for c in gated]
    varying, values = shared
    return _compose_shared(gated, varying, values)


__all__ = ["SAMPLE_KEYS", "SIGNOFF_KEYS", "SPEC_NAME", "Composed", "GatedOverrides", "compose", "compose_dict",
           "compose_many", "compose_with_hydra", "gate", "prepare_overrides", "record_hydra_overrides",
           "reproducible_overrides", "spec_argument", "to_audit_config"]
