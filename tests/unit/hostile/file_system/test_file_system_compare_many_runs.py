"""File system (issue 26, class 6): `biasaudit compare` over many run folders. Paired
tests compare every pair of runs of a metric, so their number grows as the square of the
runs (1,500 runs: 1,124,250 paired tests with bootstraps, hours). A metric with more
than `--max-paired-runs` runs (default 50) gets its ranking and side-by-side rows (linear)
and a note naming the limit instead of the paired tests. Counted by the number of pair
computations, never by seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.comparison import paired as compare_paired
from biasaudit.comparison.runs import compare


def make_runs(root: Path, n: int, *, audit: str = "tp", items: int = 4, start: int = 0) -> None:
    """`n` minimal run folders: one metric with a few items hashed by content."""
    for i in range(start, start + n):
        d = root / f"{audit}-{i:05d}"
        d.mkdir(parents=True)
        its = [{"stimulus": f"s{j}", "stimulus_sha": f"{j:064x}", "cell": "base", "levels": {},
                "outcome": (i + j) % 2} for j in range(items)]
        v = 40.0 + i % 20
        (d / "summary.json").write_text(json.dumps({
            "audit": {"name": audit, "method": "token_probability"}, "model": {"name": f"m{i}"}, "overall": "PASS",
            "reproducibility": {"overrides": [f"runtime.seed={i}"]},
            "metrics": {"bias_score": {"name": "bias_score", "headline": "score", "reference": 50.0,
                                       "params": {"mode": "ar_full"},
                                       "estimates": {"score": {"value": v, "ci_low": v - 5, "ci_high": v + 5,
                                                               "n": items, "method": "wilson"}},
                                       "items": its}}}))


@pytest.fixture
def pairs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pair computations (`_pair_row` calls)."""
    count = [0]
    real = compare_paired._pair_row

    def counting(a, b):  # type: ignore[no-untyped-def]
        count[0] += 1
        return real(a, b)

    monkeypatch.setattr(compare_paired, "_pair_row", counting)
    return count


def test_1500_runs_finish_without_pairing_every_pair(tmp_path: Path, cli, pairs: list[int]) -> None:  # type: ignore[no-untyped-def]
    make_runs(tmp_path / "sweep", 1500)
    code, out, err = cli("compare", str(tmp_path / "sweep"))
    assert code == 0 and "Traceback" not in err, err
    assert pairs[0] == 0
    assert "no paired tests: 1500 runs, over the limit of 50 runs per metric" in out
    assert "--max-paired-runs" in out and "compared 1500 runs" in out
    result = json.loads((tmp_path / "sweep" / "compare" / "compare.json").read_text())
    [ranking] = result["rankings"]
    assert len(ranking["rows"]) == 1500 and len(result["side_by_side"]["rows"]) == 1500
    [group] = result["paired"]
    assert group["rows"] == [] and "1,124,250 tests" in group["note"]
    assert "no paired tests: 1500 runs" in (tmp_path / "sweep" / "compare" / "compare.html").read_text()


@pytest.mark.parametrize("n", [2, 5, 12])
def test_under_the_limit_every_pair_is_tested(tmp_path: Path, pairs: list[int], n: int) -> None:
    make_runs(tmp_path, n)
    [group] = compare([tmp_path]).paired
    assert pairs[0] == n * (n - 1) // 2 == len(group.rows) and group.note is None
    assert "note" not in group.model_dump(mode="json")  # compare.json: a note only when there is one
    assert all((r.pairing or "").startswith("paired on") for r in group.rows)  # matched by content hash, as before


def test_the_limit_is_per_metric(tmp_path: Path, pairs: list[int]) -> None:
    make_runs(tmp_path, 60, audit="big")
    make_runs(tmp_path, 4, audit="small")
    groups = {g.audit: g for g in compare([tmp_path]).paired}
    assert pairs[0] == 6 and len(groups["small"].rows) == 6
    assert groups["big"].rows == [] and "60 runs" in (groups["big"].note or "")


@pytest.mark.parametrize("limit, n, expect", [("3", 4, 0), ("4", 4, 6), ("0", 2, 0)])
def test_the_limit_is_the_users(tmp_path: Path, cli, pairs: list[int], limit: str, n: int, expect: int) -> None:  # type: ignore[no-untyped-def]
    make_runs(tmp_path / "s", n)
    code, out, err = cli("compare", str(tmp_path / "s"), "--max-paired-runs", limit)
    assert code == 0, err
    assert pairs[0] == expect
    assert (f"over the limit of {limit} runs" in out) == (expect == 0)


def test_a_bad_limit_is_one_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    make_runs(tmp_path / "s", 2)
    code, _, err = cli("compare", str(tmp_path / "s"), "--max-paired-runs", "lots")  # not the usage block (issue 39)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --max-paired-runs must be 0 or more (got 'lots', not a whole number)")
