"""Helpers for coder tests: a minimal config, units, and a layer compiled from a spec
mapping exactly as the pipeline compiles it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biasaudit.coding.layers import CodingPlan, compile_coding
from biasaudit.records.codes import Unit
from biasaudit.records.responses import Response
from biasaudit.spec import AuditConfig, validate_config

SCRIPTED = {"backend": "scripted", "name": "m"}


def config(tmp_path: Path | None = None, **extra: Any) -> AuditConfig:
    data: dict[str, Any] = {
        "audit": {"name": "t", "method": "label_rates"},
        "stimuli": {"inline": [{"statement": "s"}]},
        "probe": {"kind": "generate"},
        "metrics": [],
        "model": SCRIPTED,
        "runtime": {"cache": str((tmp_path or Path("/tmp")) / "c.sqlite"), "progress": False},
    }
    data.update(extra)
    return validate_config(data, spec_file=None)


def plan(cfg: AuditConfig, fields: set[str] | None = None) -> CodingPlan:
    return compile_coding(cfg, fields or {"statement"}, None)


def unit(i: int | str, *, cell: str = "base", stimulus: str = "s1", levels: dict[str, str] | None = None,
         fields: dict[str, Any] | None = None, vars: dict[str, Any] | None = None) -> Unit:
    return Unit(id=f"u{i}", cell=cell, stimulus=stimulus, slot="prompt", variant=0, sample=0, key=f"k{i}",
                levels=levels or {}, fields=fields or {"statement": "Group X is lazy."}, vars=vars or {})


def answered(units: list[Unit], texts: list[str]) -> dict[str, Response]:
    return {u.key: Response(key=u.key, status="ok", output={"text": t, "output_tokens": len(t.split())})
            for u, t in zip(units, texts, strict=True)}
