"""The open JSON fields of the records (issue 28): the manifest's configuration, a
metric's echoed parameters, a method's cross-run numbers, table cells. They hold their
values in JSON form (tuples as lists), write them as the `Any` fields they replace did
(NaN as null), refuse what has no JSON form, and read back the files written before."""

from __future__ import annotations

import json
import math
from enum import Enum
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from biasaudit.methods.base import CrossRunSection
from biasaudit.records.coding import PanelReport
from biasaudit.records.compare import CrossRunAnalysis
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import json_object
from biasaudit.records.manifest import RunManifest
from biasaudit.records.metric_result import MetricResult, Table
from biasaudit.runner.pipeline import read_manifest

# a manifest.json as `biasaudit run` wrote it before the config was typed (trimmed)
OLD_MANIFEST = {
    "run_id": "20261125-174545-508162", "audit": "tfdp-gender", "method": "tfdp",
    "command": ["biasaudit", "run", "spec=tfdp-gender"], "coding_layers": {"vectors": "tfdp_vectors"},
    "overrides": ["spec=tfdp-gender"], "choices": {"spec": "tfdp-gender", "model": "smollm2"},
    "spec_file": "/x/specs/tfdp-gender.yaml", "spec_sha256": "ab" * 32,
    "data": {"source": None, "sha256": "cd" * 32, "format": "inline", "rows": 4, "used": 4},
    "model": {"name": "smollm2", "backend": "hf_causal", "identity": {"sha256": "ef" * 32}},
    "seed": 0, "cache": "/x/.biasaudit/cache.sqlite", "versions": {"biasaudit": "0.9.0"},
    "config": {"audit": {"name": "tfdp-gender", "method": "tfdp"}, "factors": {"gender": ["a", "b"]},
               "runtime": {"seed": 0, "limits": {"max_cells": 500}}, "report": {"formats": ["md"], "crosswalk": None},
               "metrics": [{"name": "tfdp", "params": {"weights": [1.0, 0.5], "alpha": 0.05}}]},
    "run_dir": "/x/reports/run", "started": "2026-11-25T17:45:45+00:00",
}


def test_an_old_manifest_loads_and_is_written_back_unchanged(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(OLD_MANIFEST), encoding="utf-8")
    m = read_manifest(tmp_path)
    assert m.config["runtime"] == {"seed": 0, "limits": {"max_cells": 500}}
    # read through records/upgrade/manifest.py: written back in today's layout, which states
    # its version first; every other key as it was, in its order
    assert m.as_json() == {"format_version": 2, **OLD_MANIFEST}
    assert list(m.as_json()) == ["format_version", *OLD_MANIFEST]


def test_a_manifest_with_an_unknown_key_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    # issue 40: a key no version wrote is a file this biasaudit did not write, not one to keep
    from biasaudit.errors import StoreError

    (tmp_path / "manifest.json").write_text(json.dumps({**OLD_MANIFEST, "a_key_from_a_later_version": 1}),
                                            encoding="utf-8")
    with pytest.raises(StoreError) as err:
        read_manifest(tmp_path)
    line = err.value.one_line()
    assert f"{tmp_path / 'manifest.json'}: unknown key 'a_key_from_a_later_version'" in line, line


class _Mode(Enum):
    A = "a"


def test_the_config_is_held_in_the_form_its_file_holds() -> None:
    m = RunManifest.model_validate({**OLD_MANIFEST, "format_version": 2, "config": {"t": (1, 2), "nan": math.nan, "mode": _Mode.A,
                                                               "path": Path("/a/b")}})
    assert {k: v for k, v in m.config.items() if k != "nan"} == {"t": [1, 2], "mode": "a", "path": "/a/b"}
    assert isinstance(m.config["nan"], float) and math.isnan(m.config["nan"])
    # what the manifest writes: null, as before (allow_nan=False would refuse a NaN)
    written = json.loads(json.dumps(m.as_json(), allow_nan=False))["config"]
    assert written == {"t": [1, 2], "nan": None, "mode": "a", "path": "/a/b"}


def test_a_config_value_with_no_json_form_is_refused() -> None:
    with pytest.raises((ValidationError, ValueError)):
        RunManifest.model_validate({**OLD_MANIFEST, "format_version": 2, "config": {"x": object()}})


class _Params(BaseModel):
    weights: tuple[float, float] = (1.0, 0.5)
    by: list[str] = ["gender"]


def _result(**kw: object) -> MetricResult:
    return MetricResult.model_validate({"name": "m", "headline": "h",
                                        "estimates": {"h": Estimate(value=0.5, ci_low=0.1, ci_high=0.9, n=2, method="wilson")}, **kw})


def test_params_echo_a_parameter_models_dump_as_json() -> None:
    r = _result(params=_Params().model_dump())
    assert r.params == {"weights": [1.0, 0.5], "by": ["gender"]}
    # summary.json's params are what `model_dump(mode="json")` gives
    assert r.params == _Params().model_dump(mode="json")
    again = MetricResult.model_validate(json.loads(json.dumps(r.model_dump(mode="json"))))
    assert again.params == r.params


def test_table_cells_are_json_values_nan_written_as_null() -> None:
    t = Table(title="t", columns=["a", "b", "c", "d"], rows=[["x", 1, math.inf, (1, 2)], [True, None, 2.5, "y"]])
    assert t.rows == [["x", 1, math.inf, [1, 2]], [True, None, 2.5, "y"]]
    assert isinstance(t.rows[0][1], int) and t.rows[1][0] is True  # an int stays an int, a bool a bool
    assert json.loads(json.dumps(t.model_dump(mode="json"), allow_nan=False))["rows"][0] == ["x", 1, None, [1, 2]]
    # a NaN read back from a summary.json edited by hand stays one, for the reader to refuse
    assert math.isinf(Table.model_validate(json.loads('{"title": "t", "columns": [], "rows": [[Infinity]]}')).rows[0][0])
    with pytest.raises(ValidationError):
        Table(title="t", columns=["a"], rows=[[object()]])


def test_panel_pairs_keep_their_numbers() -> None:
    alpha = Estimate(value=0.5, ci_low=None, ci_high=None, n=2, method="krippendorff")
    p = PanelReport(layer="l", judges=["x", "y"], n=3, fleiss=None, alpha=alpha,
                    pairwise=[["x", "y", 3, 1.0, math.nan]])
    assert p.pairwise[0][:4] == ["x", "y", 3, 1.0] and isinstance(p.pairwise[0][2], int)
    assert p.model_dump(mode="json")["pairwise"] == [["x", "y", 3, 1.0, None]]


def test_cross_run_numbers_are_json() -> None:
    data = json_object({"fits": [["M1", 0.5, 3, math.inf]], "pair": ("a", "b")})
    assert data == {"fits": [["M1", 0.5, 3, math.inf]], "pair": ["a", "b"]}
    section = CrossRunSection(title="x", data=data)
    analysis = CrossRunAnalysis.model_validate(section.model_dump(mode="json"))
    assert analysis.data == {"fits": [["M1", 0.5, 3, None]], "pair": ["a", "b"]}
    json.dumps(analysis.model_dump(mode="json"), allow_nan=False)
