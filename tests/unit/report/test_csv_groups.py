"""estimates.csv's `group` column comes from the group recorded where each estimate was
made (`Estimate.group`), never from the estimate's name (issue 40). Name parsing gets
groups wrong whenever a stimulus field's name is also a segment of the estimate's name or
a level holds dots: a `rate` metric broken down by a pay-`rate` column names its per-group
estimates `rate.rate.<level>`, which the name-parsing export read as group
`rate=rate.St. Louis`."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from biasaudit.records.metric_result import MetricResult
from biasaudit.report.csv_export import estimate_rows
from biasaudit.stats.disaggregate import Obs, by_group, contrast_estimates, group_contrasts

FRAMEWORK = Path(__file__).resolve().parents[3] / "framework" / "biasaudit"
LEVELS = ["St. Louis", "v1.2"]


def _rows(field: str) -> list[Obs]:
    # 40 stimuli per level, each selected or not (a 0/1 value), one row per stimulus
    return [Obs(cell="", cluster=f"{lv}-{i}", value=float(i % (2 + n)), fields={field: lv})
            for n, lv in enumerate(LEVELS) for i in range(40)]


def _metric(field: str) -> MetricResult:
    """Estimates named as the label_rates `rate` metric names them (`rate.<field>.<level>`,
    `contrast.<field>.<a>-<b>`), made by the shared breakdown helpers."""
    rows = _rows(field)
    est = {f"rate.{field}.{g}": e for g, e in by_group(rows, field).items()}
    est.update(contrast_estimates(group_contrasts(rows, field), field))
    result = MetricResult(name="label_rates", headline=next(iter(est)), estimates=est, params={"by": [field]})
    # as summary.json holds it and a later reader reads it back
    return MetricResult.model_validate(json.loads(json.dumps(result.model_dump(mode="json"))))


def test_groups_with_dotted_levels_and_a_field_named_like_the_estimate() -> None:
    got = {r["estimate"]: r["group"] for r in estimate_rows({"m": _metric("rate")})}
    assert got == {"rate.rate.St. Louis": "rate=St. Louis", "rate.rate.v1.2": "rate=v1.2",
                   "contrast.rate.St. Louis-v1.2": "rate=St. Louis-v1.2"}


def test_a_contrast_keeps_its_two_groups_apart() -> None:
    # "18-24" against "25-34": the name `contrast.age.18-24-25-34` cannot say where one ends
    rows = [Obs(cell="", cluster=f"{lv}-{i}", value=float(i % 2), fields={"age": lv})
            for lv in ("18-24", "25-34") for i in range(20)]
    [(name, est)] = contrast_estimates(group_contrasts(rows, "age"), "age").items()
    assert name == "contrast.age.18-24-25-34"
    assert est.group is not None and (est.group.factor, est.group.levels) == ("age", ["18-24", "25-34"])


_NAME_SPLITS = {"split", "rsplit", "partition", "rpartition", "find", "rfind", "index", "rindex"}


def _splits_on_a_dot(path: Path) -> list[str]:
    """Calls that cut a string at a dot (`x.split(".")`, `x.find(f".{f}.")`...): how an
    estimate's name is parsed for its group."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _NAME_SPLITS and node.args):
            continue
        arg = node.args[0]
        text = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else \
            arg.values[0].value if isinstance(arg, ast.JoinedStr) and arg.values \
            and isinstance(arg.values[0], ast.Constant) and isinstance(arg.values[0].value, str) else None
        if text is not None and text.startswith("."):
            out.append(f"{path.relative_to(FRAMEWORK)}:{node.lineno}")
    return out


def test_no_report_or_viewer_module_parses_an_estimate_name_for_its_group() -> None:
    files = [FRAMEWORK / "report" / "csv_export.py", FRAMEWORK / "api.py",
             *sorted((FRAMEWORK / "report" / "viewer").glob("*.py"))]
    assert [hit for f in files for hit in _splits_on_a_dot(f)] == []
