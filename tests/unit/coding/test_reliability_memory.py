"""The coding summary holds integer columns, not objects per unit (issue 42): the memory
its reliability pair, judge panel and layer summaries take at their peak stays under
300 bytes a unit, on 20,000 units (main before: 458, 577 and 172; the (Unit, str, str)
tuples, label lists and per-unit vote lists are gone), and drawing the bootstrap in slices of resamples
(many stimuli) gives the very numbers of one whole draw."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from biasaudit.coding.layers import ReliabilityPair
from biasaudit.coding.reliability import kappa_alpha, pair_report, panel_report
from biasaudit.coding.summary import layer_report
from biasaudit.records.codes import Code, Unit
from tests.coding_helpers import config, plan, unit

N = 20_000


def _peak_per_unit(f: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        f()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / N


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[Unit], dict[str, dict[str, Code]]]:
    cfg = config(tmp_path_factory.mktemp("rel"), factors={"t": {f"c{i}": {} for i in range(20)}}, coding={
        "sel": {"coder": "rules", "labels": ["E", "N", "D", "R"], "endorse": ["E"],
                "rules": [{"keywords": ["yes"], "label": "E"}], "otherwise": "D"},
        "elab": {"coder": "rules", "labels": ["E", "QE", "N", "D", "R"], "endorse": ["E", "QE"],
                 "rules": [{"keywords": ["sure"], "label": "QE"}], "otherwise": "D"}})
    rng = np.random.default_rng(0)
    units = [unit(i, stimulus=f"s{i % 50}", cell=f"t=c{(i // 50) % 20}") for i in range(N)]
    sel_labels, elab_labels = ["E", "N", "D", "R"], ["E", "QE", "N", "D", "R"]
    shapes = [{"j1": a, "j2": b, "j3": c} for a in ("E", "D", None) for b in ("E", "QE", "D") for c in ("E", "N")]
    codes = {
        "sel": {u.id: Code(unit=u.id, status="coded", label=sel_labels[int(rng.integers(0, 4))]) for u in units},
        "elab": {u.id: Code(unit=u.id, status="coded", label=elab_labels[int(rng.integers(0, 5))],
                            detail={"votes": shapes[int(rng.integers(0, len(shapes)))]}) for u in units},
    }
    p = plan(cfg)
    # the libraries these import on first use (scipy, sklearn: megabytes) are not the
    # summary's memory: imported here, before any measurement
    few = units[:200]
    pair_report(ReliabilityPair("sel", "elab", {}, {"QE": "E"}), p.layers, few, codes)
    panel_report("elab", few, codes["elab"])
    layer_report(p.layers["elab"], few, codes["elab"], None, None)
    return p, units, codes


def test_a_reliability_pair_holds_columns(grid: tuple[Any, list[Unit], dict[str, dict[str, Code]]]) -> None:
    p, units, codes = grid
    per_unit = _peak_per_unit(lambda: pair_report(ReliabilityPair("sel", "elab", {}, {"QE": "E"}), p.layers, units,
                                                  codes))
    assert per_unit < 220, f"{per_unit:.0f} bytes a unit at the peak"


def test_a_judge_panel_holds_patterns(grid: tuple[Any, list[Unit], dict[str, dict[str, Code]]]) -> None:
    _, units, codes = grid
    rep = None

    def run() -> None:
        nonlocal rep
        rep = panel_report("elab", units, codes["elab"])

    per_unit = _peak_per_unit(run)
    assert rep is not None and rep.n > 0
    assert per_unit < 280, f"{per_unit:.0f} bytes a unit at the peak"


def test_a_layer_summary_holds_columns(grid: tuple[Any, list[Unit], dict[str, dict[str, Code]]]) -> None:
    p, units, codes = grid
    per_unit = _peak_per_unit(lambda: layer_report(p.layers["elab"], units, codes["elab"], None, None))
    assert per_unit < 130, f"{per_unit:.0f} bytes a unit at the peak"


def test_the_bootstrap_in_slices_gives_the_numbers_of_one_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    n = 4_000
    a = [str(x) for x in rng.integers(0, 3, n)]
    b = [x if rng.random() < 0.6 else str(y) for x, y in zip(a, rng.integers(0, 3, n), strict=True)]
    clusters = [f"s{i}" for i in rng.integers(0, 1_500, n)]  # over a thousand stimuli: drawn in slices
    sliced = kappa_alpha(a, b, clusters, seed=4)
    monkeypatch.setattr(sys.modules["biasaudit.stats.bootstrap"], "_CHUNK", 1 << 40)  # one whole draw
    whole = kappa_alpha(a, b, clusters, seed=4)
    assert sliced[0].clusters is not None and sliced[0].clusters > 1_048
    assert [e.model_dump() for e in sliced] == [e.model_dump() for e in whole]
