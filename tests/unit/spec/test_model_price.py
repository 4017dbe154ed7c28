"""`model.price` (issue 43, section 2): what the user says a hosted model costs per million
tokens; no shipped config has one; a bad value is one error line naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from biasaudit.spec import ModelPrice, OpenAICompatConfig
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.helpers import REPO


def test_no_shipped_model_config_has_a_price() -> None:
    # prices change: a shipped one would print a stale cost as if it were known
    for p in (REPO / "conf" / "model").glob("*.yaml"):
        assert "price" not in p.read_text(encoding="utf-8"), p
    cfg = compose(["spec=crows_pairs_tp", "model=openai_compat"]).config.model
    assert isinstance(cfg, OpenAICompatConfig) and cfg.price is None


def test_a_price_is_read_with_its_defaults() -> None:
    cfg = compose(["spec=crows_pairs_tp", "model=openai_compat", "+model.price.input_per_million=2.5",
                   "+model.price.output_per_million=10"]).config.model
    assert isinstance(cfg, OpenAICompatConfig) and cfg.price is not None
    assert (cfg.price.input_per_million, cfg.price.output_per_million) == (2.5, 10)
    assert cfg.price.currency == "USD" and cfg.price.batch_discount is None


def test_cost_by_hand() -> None:
    p = ModelPrice(input_per_million=2.5, output_per_million=10.0)
    assert p.cost(1_000, 0) == pytest.approx(0.0025)  # 1000 x 2.50 / 1e6
    assert p.cost(1_000, 2_000) == pytest.approx(0.0025 + 0.02)  # + 2000 x 10 / 1e6


_BOTH = ["+model.price.input_per_million=1", "+model.price.output_per_million=2"]


@pytest.mark.parametrize(("overrides", "expected"), [
    (["+model.price.input_per_million=-1", "+model.price.output_per_million=2"],
     "model.price.input_per_million: Input should be greater than or equal to 0 (got -1)"),
    (["+model.price.input_per_million=1", "+model.price.output_per_million=inf"],
     "model.price.output_per_million: Input should be a finite number (got inf)"),
    (["+model.price.input_per_million=nan", "+model.price.output_per_million=2"],
     "model.price.input_per_million: Input should be a finite number"),
    ([*_BOTH, "+model.price.batch_discount=1.5"], "model.price.batch_discount: Input should be less than or equal to 1"),
    ([*_BOTH, "+model.price.batch_discount=-0.1"],
     "model.price.batch_discount: Input should be greater than or equal to 0"),
    (["+model.price.input_per_million=1"], "model.price.output_per_million: required key is missing"),
    ([*_BOTH, "+model.price.currency=US-D"], "model.price.currency: String should match pattern"),
    ([*_BOTH, "+model.price.per_token=1"], "model.price.per_token: unknown key 'per_token'"),
    (["+model.price.input_per_million='2.5'", "+model.price.output_per_million=2"],
     "model.price.input_per_million:"),
])
def test_a_bad_price_is_one_line_naming_the_key(workdir: Path, cli: Any, overrides: list[str], expected: str) -> None:
    code, out, err = cli("validate", "spec=crows_pairs_tp", "model=openai_compat", *overrides, *isolation(workdir))
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err


def test_a_price_on_an_in_process_model_is_refused(workdir: Path, cli: Any) -> None:
    code, _, err = cli("validate", "spec=crows_pairs_tp", *_BOTH, *isolation(workdir))
    assert code == 2 and err.count("\n") == 1 and "model.price" in err and "has no effect on the hf_causal" in err, err
