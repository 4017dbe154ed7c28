"""Registration refuses an options or parameter model that accepts unknown keys (issue 40,
section 2): a spec's misspelt coder option or metric parameter would otherwise validate
and be dropped without a word."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel, ConfigDict

from biasaudit.registry import Registry, strict_model


class Loose(BaseModel):
    threshold: float = 0.5


class Allows(BaseModel):
    model_config = ConfigDict(extra="allow")
    threshold: float = 0.5


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    threshold: float = 0.5


@dataclass
class Entry:
    options: type[BaseModel]


@pytest.mark.parametrize("model", [Loose, Allows])
def test_a_model_accepting_unknown_keys_is_refused(model: type[BaseModel]) -> None:
    reg: Registry[Entry] = Registry("coder", check=strict_model("options"))
    with pytest.raises(ValueError, match=r"'mine': its options model .* accepts unknown keys"):
        reg.add("mine", Entry(options=model))
    assert "mine" not in reg._items


def test_a_strict_model_registers() -> None:
    reg: Registry[Entry] = Registry("coder", check=strict_model("options"))
    reg.add("mine", Entry(options=Strict))
    assert reg._items["mine"].options is Strict


def test_the_shipped_coder_and_metric_registries_check() -> None:
    from biasaudit.registry import CODERS, METRICS

    assert CODERS._check is not None and METRICS._check is not None
    with pytest.raises(ValueError, match="accepts unknown keys"):
        CODERS.add("loose_test_coder", Entry(options=Loose))  # type: ignore[arg-type]
