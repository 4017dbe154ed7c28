"""docs/tools/error_rates.py (the "Simulated error rates" table of docs/statistics.md) runs
through the project's verdict code and prints its Markdown table; the full run is the
tool's own (minutes), here a few seeded audits of two kinds."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.helpers import REPO


def test_the_tool_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "docs" / "tools" / "error_rates.py"
    spec = importlib.util.spec_from_file_location("error_rates", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["error_rates"] = mod
    spec.loader.exec_module(mod)
    assert mod.main(["--reps", "20", "--only", "lowest"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| lowest impact ratio")]
    assert len(rows) == 3 and all(ln.count("|") == 7 for ln in rows)
    assert "| kind | estimate | stimuli | nominal rate | simulated rate | Monte Carlo s.e. |" in out
    kinds = {s.kind.split(" (")[0] for s in mod.scenarios()}
    assert kinds == {"bound", "band", "equivalence", "worst cell", "lowest impact ratio", "sequential"}
