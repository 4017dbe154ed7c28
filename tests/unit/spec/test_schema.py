"""`biasaudit schema` (issue 18, acceptance 4): JSON Schemas (draft 2020-12) of a spec file
and of a suite, checked with the `jsonschema` library against every shipped spec and
suite; typos are rejected; every field is described; metrics and coding layers are
discriminated unions; the committed copies under docs/schema/ are up to date."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from biasaudit.spec.schema import IDS, SCHEMA_FILES, json_schema, undocumented
from tests.helpers import REPO

SPECS = sorted((REPO / "specs").glob("*.yaml"))
SCHEMA_DIR = REPO / "docs" / "schema"


def _is_suite(doc: dict[str, Any]) -> bool:
    return "suite" in doc


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for kind, name in SCHEMA_FILES.items():
        schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)  # a valid 2020-12 schema
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema" and schema["$id"] == IDS[kind]
        out[kind] = jsonschema.Draft202012Validator(schema)
    return out


def _errors(validator: jsonschema.protocols.Validator, doc: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_committed_schemas_are_what_biasaudit_schema_prints(cli) -> None:  # type: ignore[no-untyped-def]
    # a fresh process: this one may hold test plugins registered by other tests
    for kind, name in SCHEMA_FILES.items():
        out = subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "schema", *([kind] if kind != "spec" else [])],
                             capture_output=True, text=True, check=True, cwd=REPO).stdout
        assert out == (SCHEMA_DIR / name).read_text(encoding="utf-8"), (
            f"docs/schema/{name} is stale: regenerate it with `biasaudit schema {kind} > docs/schema/{name}`")
    code, out, _ = cli("schema", "config")  # the composed run configuration, operator groups included
    assert code == 0 and {"model", "runtime", "metrics"} <= set(json.loads(out)["properties"])


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_every_shipped_spec_and_suite_validates_and_points_at_its_schema(spec: Path, validators) -> None:  # type: ignore[no-untyped-def]
    text = spec.read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    kind = "suite" if _is_suite(doc) else "spec"
    first = text.splitlines()[0]
    assert first == f"# yaml-language-server: $schema=../docs/schema/{SCHEMA_FILES[kind]}"
    assert (spec.parent / first.split("=", 1)[1]).resolve().is_file()
    assert _errors(validators[kind], doc) == []


def test_the_shipped_suite_set_is_not_empty() -> None:
    kinds = {_is_suite(yaml.safe_load(p.read_text())) for p in SPECS}
    assert kinds == {True, False}  # both schemas are exercised above


def test_typos_and_operator_groups_are_rejected(validators) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((REPO / "specs" / "crows_pairs_tp.yaml").read_text())
    v = validators["spec"]

    def rejected(mutate: Any) -> list[str]:
        doc = copy.deepcopy(spec)
        mutate(doc)
        return _errors(v, doc)

    # a typo'd key at the top, in a section, and in a metric's own parameters
    assert rejected(lambda d: d.update(thresholds_=d.pop("thresholds")))
    assert any("sourse" in e for e in rejected(lambda d: d["stimuli"].update(sourse=d["stimuli"].pop("source"))))
    assert rejected(lambda d: d["metrics"][0].update(mdoe="ar_full"))
    # a typo'd value of a typed parameter, and an unknown metric
    assert rejected(lambda d: d["metrics"][0].update(mode="ar_fulll"))
    assert rejected(lambda d: d["metrics"][0].update(name="bias_scor"))
    # a parameter of another metric: the union is discriminated by `name`
    assert rejected(lambda d: d["metrics"][0].update(kernel="powcos"))
    # a spec file cannot set the operator's groups
    for group in ("model", "runtime", "judge", "nli", "embedder"):
        assert rejected(lambda d, g=group: d.update({g: {"name": "x"}}))
    # a number written as an interpolation is accepted (OmegaConf resolves it)
    assert rejected(lambda d: d["thresholds"][0].update(max="${thresholds.0.min}")) == []
    assert rejected(lambda d: d["thresholds"][0].update(max="sixty"))

    suite = yaml.safe_load((REPO / "specs" / "default_suite.yaml").read_text())
    bad = copy.deepcopy(suite)
    bad["suite"]["members"][0]["overides"] = ["x=1"]
    assert _errors(validators["suite"], bad)
    bad = copy.deepcopy(suite)
    bad["audit"] = {"name": "x"}
    assert _errors(validators["suite"], bad)


def test_coding_layers_are_typed_by_coder(validators) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((REPO / "specs" / "refusal_stance.yaml").read_text())
    assert spec.get("coding"), "refusal_stance declares coding layers"
    name, layer = next(iter(spec["coding"].items()))
    v = validators["spec"]
    assert _errors(v, spec) == []
    for change in ({"coder": "no_such_coder"}, {"rulez": []}, {"aggregate": "majority"} if layer["coder"] != "judge_panel"
                   else {"order": "both"}):
        doc = copy.deepcopy(spec)
        doc["coding"][name] = {**layer, **change}
        assert _errors(v, doc), change


def test_unions_are_discriminated_and_every_field_is_described() -> None:
    from biasaudit.registry import CODERS, METRICS

    committed = {kind: json.loads((SCHEMA_DIR / name).read_text()) for kind, name in SCHEMA_FILES.items()}
    for kind, schema in committed.items():
        assert undocumented(schema) == [], kind
    # the committed spec schema has every built-in metric and coder (a fresh process's registry)
    spec = committed["spec"]
    metric = spec["properties"]["metrics"]["items"]
    layer = spec["properties"]["coding"]["additionalProperties"]
    assert metric["discriminator"]["propertyName"] == "name"
    assert layer["discriminator"]["propertyName"] == "coder"
    assert set(metric["discriminator"]["mapping"]) == {
        n for n, d in METRICS.items() if d.compute.__module__.startswith("biasaudit.")}
    assert set(layer["discriminator"]["mapping"]) == {
        n for n, d in CODERS.items() if d.build.__module__.startswith("biasaudit.")}
    # and `biasaudit schema` in this process has whatever the registry holds (plugins too)
    live = json_schema("spec")
    assert set(live["properties"]["metrics"]["items"]["discriminator"]["mapping"]) == set(METRICS.names())
    assert set(live["properties"]["coding"]["additionalProperties"]["discriminator"]["mapping"]) == set(CODERS.names())
    # a metric's own parameters are typed: bias_score's `mode` is an enum
    ref = metric["discriminator"]["mapping"]["bias_score"].split("/")[-1]
    assert set(spec["$defs"][ref]["properties"]["mode"]["enum"]) == {"ar_full", "ar_shared", "pll_shared"}
    assert spec["$defs"][ref]["additionalProperties"] is False


def test_init_project_spec_validates_against_its_schema(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", str(workdir / "proj"))[0] == 0
    text = (workdir / "proj" / "audit.yaml").read_text()
    assert text.splitlines()[0] == "# yaml-language-server: $schema=spec.schema.json"
    schema = json.loads((workdir / "proj" / "spec.schema.json").read_text())
    assert _errors(jsonschema.Draft202012Validator(schema), yaml.safe_load(text)) == []


def test_plots_schema_lists_every_registered_plot_kind_with_its_typed_data() -> None:
    # issue 40: plot kinds register with a typed data model (a method's own too: BiAxisAudit's map)
    from biasaudit.registry import PLOTS
    from biasaudit.spec.schema import json_schema

    schema = json_schema("plots")
    mapping = schema["discriminator"]["mapping"]
    assert set(mapping) == set(PLOTS.names()) >= {"interval_bars", "histogram", "heatmap", "reliability_map"}
    bars = schema["$defs"]["Plot_interval_bars"]
    assert bars["additionalProperties"] is False and {"labels", "estimates", "reference"} <= set(bars["properties"])
    assert "matrix" not in bars["properties"]  # each kind only the fields it draws
