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


# -- backends and plot kinds (issue 40, section 2: each owns its config / data model) ----

def _echo_config(extra: str | None, tag: str = "echo") -> type[BaseModel]:
    from typing import Literal

    from pydantic import create_model

    from biasaudit.spec import BaseModelConfig

    fields: dict[str, object] = {"backend": (Literal[tag], ...), "prefix": (str, "")}
    if extra is None:  # the framework's strict base: refuses unknown keys
        return create_model("EchoConfig", __base__=BaseModelConfig, **fields)  # type: ignore[call-overload, no-any-return]
    return create_model("EchoConfig", __config__=ConfigDict(extra=extra), **fields)  # type: ignore[call-overload, no-any-return]


@dataclass
class Kind:
    config: type[BaseModel]


@pytest.mark.parametrize("extra", ["allow", "ignore"])
def test_a_backend_config_accepting_unknown_keys_is_refused(extra: str) -> None:
    from biasaudit.registry import backend_check

    reg: Registry[Kind] = Registry("model backend", check=backend_check)
    with pytest.raises(ValueError, match=r"'echo': its config model EchoConfig accepts unknown keys"):
        reg.add("echo", Kind(config=_echo_config(extra)))
    assert "echo" not in reg._items


def test_a_backend_config_must_carry_its_own_backend_tag() -> None:
    from biasaudit.registry import backend_check

    reg: Registry[Kind] = Registry("model backend", check=backend_check)
    with pytest.raises(ValueError, match=r"needs the field `backend: Literal\['echo'\]`"):
        reg.add("echo", Kind(config=_echo_config(None, tag="ehco")))
    reg.add("echo", Kind(config=_echo_config(None)))  # the strict base model and its tag: accepted
    assert "echo" in reg._items


@dataclass
class Plot:
    data: type[BaseModel]


def test_a_plot_kind_data_model_is_strict_and_reads_only_carrier_fields() -> None:
    from pydantic import create_model

    from biasaudit.metrics.plotting import PlotData
    from biasaudit.registry import plot_check

    reg: Registry[Plot] = Registry("plot kind", check=plot_check)
    loose = create_model("Loose", title=(str, ...), values=(list[float], []))
    with pytest.raises(ValueError, match=r"'bars': its data model Loose accepts unknown keys"):
        reg.add("bars", Plot(data=loose))
    foreign = create_model("Foreign", __base__=PlotData, widths=(list[float], []))
    with pytest.raises(ValueError, match=r"'bars': its data model Foreign has fields widths that a PlotSpec does not"):
        reg.add("bars", Plot(data=foreign))
    reg.add("bars", Plot(data=create_model("Bars", __base__=PlotData, values=(list[float], []))))
    assert "bars" in reg._items


def test_a_plot_kind_misspelt_field_is_an_error_where_the_plot_is_made() -> None:
    from pydantic import ValidationError

    from biasaudit.registry import PLOTS

    with pytest.raises(ValidationError, match="valuez"):
        PLOTS.get("histogram").draw({"title": "t", "valuez": [1.0]})


def test_every_shipped_backend_and_plot_kind_passes_its_registration_check() -> None:
    from biasaudit.registry import BACKENDS, PLOTS, backend_check, plot_check

    for name, kind in BACKENDS.items():
        backend_check(name, kind)
    for name, plot in PLOTS.items():
        plot_check(name, plot)
    assert {"interval_bars", "histogram", "reliability_map"} <= set(PLOTS.names())
