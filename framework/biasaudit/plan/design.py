"""Expand a design (full, oat, explicit) over the spec's factors into cells."""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel, ConfigDict

from biasaudit.errors import SpecError
from biasaudit.spec import AuditConfig


class Cell(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    levels: dict[str, str]
    """Factor name -> level name (empty when the spec has no factors)."""


def cell_id(levels: dict[str, str]) -> str:
    return ",".join(f"{f}={lv}" for f, lv in levels.items()) or "base"


def _check_levels(
    cfg: AuditConfig, levels: dict[str, str], key: str, file: str | None, complete: bool
) -> None:
    for factor, level in levels.items():
        if factor not in cfg.factors:
            raise SpecError(
                f"undefined factor {factor!r}",
                file=file,
                key=f"{key}.{factor}",
                hint=f"factors: {', '.join(cfg.factors) or '(none)'}",
            )
        if level not in cfg.factors[factor]:
            raise SpecError(
                f"undefined level {level!r} of factor {factor!r}",
                file=file,
                key=f"{key}.{factor}",
                hint=f"levels: {', '.join(cfg.factors[factor])}",
            )
    if complete:
        missing = [f for f in cfg.factors if f not in levels]
        if missing:
            raise SpecError(
                f"no level given for factor(s) {', '.join(missing)}",
                file=file,
                key=key,
                hint="name a level for every factor",
            )


def design_size(cfg: AuditConfig) -> int:
    """How many cells the design expands to, counted without expanding it."""
    factors, design = cfg.factors, cfg.design
    if not factors:
        return 1
    if design.kind == "full":
        return math.prod(len(levels) for levels in factors.values())
    if design.kind == "oat":
        return 1 + sum(max(0, len(levels) - 1) for levels in factors.values())
    if design.kind == "fractional":
        return math.prod(len(v) for v in (design.levels or {}).values())
    return len(design.cells or [])


def _check_design_size(cfg: AuditConfig, spec_file: str | None) -> None:
    for fname, levels in cfg.factors.items():
        if not levels:
            raise SpecError(
                f"factor {fname!r} has no levels", file=spec_file, key=f"factors.{fname}",
                hint="give at least one level",
            )
    size = design_size(cfg)
    if size > cfg.runtime.limits.max_cells:
        raise SpecError(f"the design expands to {size} cells, over the limit of {cfg.runtime.limits.max_cells}",
                        file=spec_file, key="design",
                        hint="use `kind: oat` or `fractional`, fewer levels, or raise runtime.limits.max_cells")


def _full_cells(cfg: AuditConfig, names: list[str]) -> list[dict[str, str]]:
    factors = cfg.factors
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(list(factors[n]) for n in names))
    ]


def _oat_cells(cfg: AuditConfig, names: list[str], spec_file: str | None) -> list[dict[str, str]]:
    factors, design = cfg.factors, cfg.design
    base = dict(design.baseline or {})
    _check_levels(cfg, base, "design.baseline", spec_file, True)
    base = {n: base[n] for n in names}
    cells = [base]
    for n in names:
        for level in factors[n]:
            if level != base[n]:
                cells.append({**base, n: level})
    return cells


def _check_kept_levels(cfg: AuditConfig, keep: dict[str, list[str]], spec_file: str | None) -> None:
    for f, lvls in keep.items():
        if not lvls:
            raise SpecError(f"no levels kept for factor {f!r}: the design expands to zero cells",
                            file=spec_file, key=f"design.levels.{f}",
                            hint="keep at least one level, or drop the factor from `levels`")
        for j, lv in enumerate(lvls):
            _check_levels(cfg, {f: lv}, f"design.levels.{f}[{j}]", spec_file, False)
            if lv in lvls[:j]:
                raise SpecError(f"level {lv!r} is listed twice", file=spec_file,
                                key=f"design.levels.{f}[{j}]", hint="list each level once")


def _fractional_cells(cfg: AuditConfig, names: list[str], spec_file: str | None) -> list[dict[str, str]]:
    design = cfg.design
    keep = dict(design.levels or {})
    _check_kept_levels(cfg, keep, spec_file)
    rest = [n for n in names if n not in keep]
    base = dict(design.baseline or {})
    if rest:
        _check_levels(cfg, {n: base[n] for n in rest if n in base}, "design.baseline", spec_file, False)
        missing = [n for n in rest if n not in base]
        if missing:
            raise SpecError(f"factor(s) {', '.join(missing)} are neither in `levels` nor in `baseline`",
                            file=spec_file, key="design", hint="give them a baseline level")
    return [
        {n: (combo[list(keep).index(n)] if n in keep else base[n]) for n in names}
        for combo in itertools.product(*(keep[f] for f in keep))
    ]


def _explicit_cells(cfg: AuditConfig, names: list[str], spec_file: str | None) -> list[dict[str, str]]:
    cells = []
    for i, c in enumerate(cfg.design.cells or []):
        _check_levels(cfg, c, f"design.cells[{i}]", spec_file, True)
        cells.append({n: c[n] for n in names})
    return cells


def _to_cells(cells: list[dict[str, str]], spec_file: str | None) -> list[Cell]:
    out = []
    seen: dict[str, int] = {}
    for i, c in enumerate(cells):
        cid = cell_id(c)
        if cid in seen:
            # only an explicit list can repeat a cell; running it twice would double-weight it
            raise SpecError(f"cell {cid} is listed twice (first at design.cells[{seen[cid]}])", file=spec_file,
                            key=f"design.cells[{i}]", hint="list each cell once")
        seen[cid] = i
        out.append(Cell(id=cid, levels=c))
    if not out:
        raise SpecError("the design expands to zero cells", file=spec_file, key="design",
                        hint="check `design.kind` and its levels or cells")
    return out


def expand_design(cfg: AuditConfig, spec_file: str | None = None) -> list[Cell]:
    factors = cfg.factors
    design = cfg.design
    _check_design_size(cfg, spec_file)
    if not factors:
        if design.kind == "explicit" and any(design.cells or []):
            _check_levels(cfg, design.cells[0], "design.cells[0]", spec_file, False)  # type: ignore[index]
        return [Cell(id="base", levels={})]
    names = list(factors)
    cells: list[dict[str, str]]
    if design.kind == "full":
        cells = _full_cells(cfg, names)
    elif design.kind == "oat":
        cells = _oat_cells(cfg, names, spec_file)
    elif design.kind == "fractional":
        cells = _fractional_cells(cfg, names, spec_file)
    else:
        cells = _explicit_cells(cfg, names, spec_file)
    return _to_cells(cells, spec_file)
