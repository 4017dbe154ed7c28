"""Shared by the per-method presentation tests (issue 28): a result's tables and plots as
JSON, compared with those main produced when `compute` still built them itself (recorded
in tests/fixtures/presentation/<name>.json before the move)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from biasaudit.records.metric_result import MetricResult
from biasaudit.report.presentation import present
from biasaudit.spec import AuditConfig

EXPECTED = Path(__file__).resolve().parents[2] / "fixtures" / "presentation"


def shown(result: MetricResult, metric: str, params: BaseModel, cfg: AuditConfig) -> dict[str, Any]:
    """The tables and plots of `result` after its method's report section ran, as JSON."""
    full = present(result, metric, params, cfg)
    return json.loads(json.dumps({"tables": [t.model_dump(mode="json") for t in full.tables],
                                  "plots": [p.model_dump(mode="json") for p in full.plots]}))


def check(name: str, got: dict[str, Any]) -> None:
    """`got` equals the recorded presentation `name` (floats compared as their JSON text).
    BIASAUDIT_RECORD_PRESENTATION=1 writes it instead (only ever from main's code)."""
    path = EXPECTED / f"{name}.json"
    if os.environ.get("BIASAUDIT_RECORD_PRESENTATION") == "1":
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(path.read_text())
    assert [t["title"] for t in got["tables"]] == [t["title"] for t in want["tables"]]
    assert [p["title"] for p in got["plots"]] == [p["title"] for p in want["plots"]]
    for g, w in zip(got["tables"] + got["plots"], want["tables"] + want["plots"], strict=True):
        assert json.dumps(g, sort_keys=True) == json.dumps(w, sort_keys=True), g["title"]
