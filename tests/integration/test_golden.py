"""Golden numbers (issue 28): the renovation moved every module, and moved tables and plots
out of metric code, but must not change a single number an auditor signs. Written before
the move, on main as it was (3add912), these runs' estimates, counts, reliability figures
and verdicts are compared byte for byte (floats as their JSON text) with the stored ones.

Regenerate only for a change that is MEANT to move a number, and say so in the commit:
    BIASAUDIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/integration/test_golden.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"

# (name, argv): the default suite on the scripted backend (NLI judged by SmolLM2: the
# scripted double gives no next-token log-probs) and three shipped specs on SmolLM2.
CASES = [
    ("default_suite_scripted", ["spec=default_suite", "model=scripted", "nli=smollm2", "+stimuli.sample.n=6"]),
    ("crows_pairs_tp_smollm2", ["spec=crows_pairs_tp", "+stimuli.sample.n=12"]),
    ("bbq_smollm2", ["spec=bbq", "+stimuli.sample.n=12"]),
    ("biaxis_oat_smollm2", ["spec=biaxis_oat", "stimuli.sample.n=1"]),
]

# What an auditor signs: the estimates and their intervals, the counts behind them, the
# reliability figures, the verdicts. Presentation (tables, plots, wording) and anything
# that varies from run to run (timings, paths, dates, ids) is left out.
_RUN_KEYS = ("overall", "measured", "unmeasured_reason", "verdicts", "reliability", "validity")
_EXECUTION_KEYS = ("requests", "calls", "cache_hits", "failures", "answered", "plan_items", "coding_calls",
                   "coding_requests", "embedding_calls")
_DROP = re.compile(r"(^|_)(s|seconds|time|generated|path|report|run_id|dir)$")


def _numbers(node: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if not _DROP.search(str(k)):
                _numbers(v, f"{path}.{k}", out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _numbers(v, f"{path}[{i}]", out)
    elif node is None or isinstance(node, bool | int | float | str):
        out[path] = json.dumps(node)


def _run_numbers(s: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for k in _RUN_KEYS:
        _numbers(s.get(k), f"{prefix}{k}", out)
    for k in _EXECUTION_KEYS:
        _numbers(s.get("execution", {}).get(k), f"{prefix}execution.{k}", out)
    for name, m in sorted(s.get("metrics", {}).items()):
        for part in ("estimates", "counts", "reference"):
            _numbers(m.get(part), f"{prefix}metrics.{name}.{part}", out)
    for layer in s.get("coding", {}).get("layers", []):
        _numbers(layer.get("pooled"), f"{prefix}coding.{layer.get('name')}.pooled", out)
        _numbers(layer.get("calls"), f"{prefix}coding.{layer.get('name')}.calls", out)


def golden_numbers(out_dir: Path) -> dict[str, Any]:
    s = json.loads((out_dir / "summary.json").read_text())
    out: dict[str, Any] = {}
    if "suite" in s:
        for r in s["rows"]:
            out[f"rows.{r['member']}.{r['subject']}.overall"] = json.dumps(r["overall"])
        _numbers(s["triangulation"], "triangulation", out)
        for sub in sorted(p for p in out_dir.iterdir() if (p / "summary.json").exists()):
            _run_numbers(json.loads((sub / "summary.json").read_text()), f"{sub.name}/", out)
    else:
        _run_numbers(s, "", out)
    return out


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_summary_numbers_unchanged(name: str, argv: list[str], workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "--fail-on", "never", *argv, *isolation(workdir))
    assert code == 0, err
    report = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("report: ")][-1]
    got = golden_numbers(Path(report).parent)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("BIASAUDIT_UPDATE_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert len(want) > 20
    changed = {k: (want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)}
    assert changed == {}, f"{len(changed)} numbers moved: {list(changed.items())[:10]}"
