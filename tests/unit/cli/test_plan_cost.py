"""`biasaudit plan` shows the estimated cost beside the time when `model.price` is given,
and says plainly that no price was given otherwise (issue 43, section 2). The expected
amounts are worked out here by hand from the plan's own token lines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from biasaudit import api
from tests.conftest import isolation
from tests.helpers import REPO

PRICE = ["model=openai_compat", "+model.price.input_per_million=2.5", "+model.price.output_per_million=10"]


def _row(out: str, label: str) -> str:
    [line] = [ln for ln in out.splitlines() if ln.startswith(label)]
    return line[len(label):].strip()


def test_plan_cost_of_a_scoring_spec_by_hand(workdir: Path, cli: Any) -> None:
    code, out, err = cli("plan", "spec=crows_pairs_tp", *PRICE, "+model.price.batch_discount=0.5", *isolation(workdir))
    assert code == 0, err
    tin = int(_row(out, "input tokens (est.)").lstrip("~"))
    assert _row(out, "output tokens (max)") == "0" and tin == 1265  # the plan's chars/4 estimate
    cost = _row(out, "estimated cost")
    # 1265 tokens x 2.50 per million = 0.0031625 -> 0.00316; half of it at the batch price: 0.00158
    assert cost.startswith("~0.00316 USD for 80 calls needed (~1265 input tokens at 2.5/M, 0 output tokens at 10/M)")
    assert cost.endswith("at the batch price (0.5 off) ~0.00158 USD"), cost


def test_plan_cost_of_a_generate_spec_counts_output_at_max_tokens(workdir: Path, cli: Any) -> None:
    code, out, err = cli("plan", "spec=hiring_impact", *PRICE, "+model.price.currency=EUR", *isolation(workdir))
    assert code == 0, err
    assert _row(out, "input tokens (est.)") == "~4654" and _row(out, "output tokens (max)") == "3840"
    # 4654 x 2.5 / 1e6 = 0.011635, + 3840 x 10 / 1e6 = 0.0384: 0.050035 -> 0.05
    assert _row(out, "estimated cost").startswith(
        "~0.05 EUR for 96 calls needed (~4654 input tokens at 2.5/M, 3840 output tokens (max_tokens: an upper bound)")


def test_plan_without_a_price_says_so(workdir: Path, cli: Any) -> None:
    code, out, _ = cli("plan", "spec=crows_pairs_tp", "model=openai_compat", *isolation(workdir))
    assert code == 0
    assert _row(out, "estimated cost").startswith("no price given for openai-compat")


def test_sweep_plan_cost_per_model_and_total(workdir: Path, cli: Any) -> None:
    code, out, err = cli("plan", "-m", "spec=crows_pairs_tp", "model=openai_compat", "+model.price.input_per_million=2",
                         "+model.price.output_per_million=10", "model.model=a,b", *isolation(workdir))
    assert code == 0, err
    # two served models under one name (two identities, nothing shared): 2 x 1265 tokens x 2 / 1e6 = 0.00506
    line = next(ln for ln in out.splitlines() if ln.startswith("estimated cost:"))
    assert re.fullmatch(r"estimated cost: openai-compat ~0\.00506 USD; total ~0\.00506 USD", line), line


def test_api_plan_has_the_cost(workdir: Path) -> None:
    est = api.plan("crows_pairs_tp", [*PRICE, *isolation(workdir)])
    assert est.currency == "USD" and est.cost == pytest.approx(1265 * 2.5 / 1e6)
    assert api.plan("crows_pairs_tp", ["model=openai_compat", *isolation(workdir)]).cost is None


def test_the_documented_price_recipe_runs_as_written(workdir: Path, cli: Any) -> None:
    text = (REPO / "docs" / "models-and-servers.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- recipe: price -->\n```\n(.*?)\n```\n\n```\n(.*?)\n```", text, re.S)
    assert m, "docs/models-and-servers.md has no price recipe followed by its output"
    command, shown = m.group(1).split(), m.group(2).splitlines()
    assert command[:2] == ["biasaudit", "plan"]
    code, out, err = cli(*command[1:], *isolation(workdir))
    assert code == 0, err
    for line in shown:  # the output the page shows is what the command prints
        assert line in out.splitlines(), line
    # 350 x 0.15 / 1e6 + 960 x 0.60 / 1e6 = 0.0000525 + 0.000576 = 0.0006285
    assert "~0.000629 USD for 16 calls needed" in out


def test_the_documented_cost_recipe_runs_as_written(workdir: Path, cli: Any) -> None:
    """docs/planning-an-audit.md, "What a run will cost": the plan lines shown are printed."""
    text = (REPO / "docs" / "planning-an-audit.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- recipe: cost -->\n```\n(.*?)\n```\n\n<!-- docblock: [^\n]*-->\n```\n(.*?)\n```", text, re.S)
    assert m, "docs/planning-an-audit.md has no cost recipe followed by its output"
    command, shown = m.group(1).split(), m.group(2).splitlines()
    assert command[:2] == ["biasaudit", "plan"]
    code, out, err = cli(*command[1:], *isolation(workdir))
    assert code == 0, err
    for line in shown:
        assert line in out.splitlines(), line
    # by hand: 174474 x 0.15 / 1e6 + 10800 x 0.60 / 1e6 = 0.0261711 + 0.00648 = 0.0326511
    assert "~0.0327 USD for 1800 calls needed" in out
