"""Model configs as a union discriminated by `backend` (issue 28, point 6): every shipped
conf/model config is its backend's own model holding only that backend's settings; a
setting of another backend is one error line naming the key path and the fix; the
registered backends and the union agree; run-time settings reach a reused backend
through the protocol's `apply_runtime`."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from biasaudit.backends import BACKENDS
from biasaudit.backends.llm_nli import LLMNLIBackend, LLMNLIConfig
from biasaudit.spec import (
    AnthropicConfig,
    HFCausalConfig,
    HFMaskedConfig,
    OpenAICompatConfig,
    ReplayConfig,
    RuntimeConfig,
    ScriptedConfig,
    model_config,
)
from biasaudit.spec.compose import compose
from biasaudit.spec.model_configs import (
    MODEL_CONFIGS,
    ModelConfig,
    RecordedConfig,
    backend_tag,
    backends_with,
    registered_configs,
)
from tests.conftest import isolation
from tests.helpers import REPO

# conf/model/<name>.yaml -> its class, with what a `???` in it needs on the command line
SHIPPED = {
    "smollm2": (HFCausalConfig, []), "smollm2_fair": (HFCausalConfig, []), "smollm2_cynic": (HFCausalConfig, []),
    "gemma3_270m": (HFCausalConfig, []), "hf_causal": (HFCausalConfig, ["model.path=/models/x"]),
    "hf_masked": (HFMaskedConfig, ["model.path=/models/x"]), "bert_base_uncased": (HFMaskedConfig, []),
    "openai_compat": (OpenAICompatConfig, []), "replay": (ReplayConfig, ["model.responses=r.jsonl"]),
    "scripted": (ScriptedConfig, []), "recorded": (RecordedConfig, ["model.path=d.csv"]),
    "anthropic": (AnthropicConfig, []),
}


def test_every_shipped_model_config_is_its_backends_own_model() -> None:
    assert sorted(SHIPPED) == sorted(p.stem for p in (REPO / "conf" / "model").glob("*.yaml"))
    for name, (cls, extra) in SHIPPED.items():
        cfg = compose(["spec=crows_pairs_tp", f"model={name}", *extra]).config
        assert type(cfg.model) is cls, name
    fair = compose(["spec=crows_pairs_tp", "model=smollm2_fair"]).config.model
    assert isinstance(fair, HFCausalConfig) and fair.system_prompt and fair.gguf_file  # the defaults list merged


def test_each_backend_config_holds_only_its_own_settings() -> None:
    fields = {backend_tag(c): set(c.model_fields) for c in MODEL_CONFIGS}
    common = {"backend", "name", "probes", "notice"}
    assert all(common <= f for f in fields.values())
    # the double stands in for a billed model behind an API: a key variable and a price (budgets)
    assert fields["scripted"] - common == {"script", "api_key_env", "price"} and fields["replay"] - common == {"responses"}
    assert fields["oracle"] == common and fields["hf_masked"] - common == {"path", "revision", "dtype", "device"}
    # what only a server needs is not on an in-process model, and the reverse
    assert not {"base_url", "api_key_env", "concurrency", "bos_token"} & fields["hf_causal"]
    assert not {"dtype", "device", "revision", "chat_template", "serve", "gguf_parts"} & fields["openai_compat"]
    assert backends_with("dtype") == ["hf_causal", "hf_masked"] and backends_with("nope") == []


def test_union_and_registered_backends_agree() -> None:
    # the union is the registry's: no closed list of members in the annotation (issue 40)
    [validator] = typing.get_args(ModelConfig)[1:]
    assert set(validator.members()) == set(MODEL_CONFIGS) == set(registered_configs())
    assert {backend_tag(c) for c in MODEL_CONFIGS} == set(BACKENDS.names())
    for name in BACKENDS.names():
        assert backend_tag(BACKENDS.get(name).config) == name


def test_model_config_picks_the_class_by_backend_and_refuses_the_others_settings() -> None:
    cfg = model_config({"backend": "openai_compat", "name": "t", "base_url": "http://h/v1", "concurrency": 2})
    assert isinstance(cfg, OpenAICompatConfig) and cfg.concurrency == 2 and cfg.min_concurrency == 1
    with pytest.raises(ValidationError) as refused:
        model_config({"backend": "openai_compat", "name": "t", "dtype": "float16"})
    [err] = refused.value.errors()
    assert err["type"] == "extra_forbidden" and err["loc"] == ("openai_compat", "dtype")


def _one_line(cli: Any, workdir: Path, *overrides: str) -> str:
    code, out, err = cli("validate", "spec=crows_pairs_tp", *overrides, *isolation(workdir))
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize(("overrides", "path", "backend", "owners"), [
    (["model=openai_compat", "+model.dtype=float16"], "model.dtype", "openai_compat", "hf_causal, hf_masked"),
    (["model=openai_compat", "+model.serve=vllm"], "model.serve", "openai_compat", "hf_causal"),
    (["model=bert_base_uncased", "+model.system_prompt=Be fair."], "model.system_prompt", "hf_masked",
     "hf_causal, openai_compat, anthropic"),
    (["+model.base_url=http://127.0.0.1:8000/v1"], "model.base_url", "hf_causal", "openai_compat, anthropic"),
    (["model=scripted", "+model.chat_template=false"], "model.chat_template", "scripted", "hf_causal"),
    (["nli=smollm2", "+nli.model.api_key_env=KEY"], "nli.model.api_key_env", "hf_causal",
         "openai_compat, anthropic, scripted, http_app"),
])
def test_a_setting_of_another_backend_is_one_line_with_the_key_path_and_the_fix(
        workdir: Path, cli, overrides: list[str], path: str, backend: str, owners: str) -> None:  # type: ignore[no-untyped-def]
    line = _one_line(cli, workdir, *overrides)
    assert f": {path}: has no effect on the {backend} backend (" in line
    assert f"(hint: remove {path} (a setting of {owners}), or choose a model config of that backend)" in line


def test_switching_backend_under_a_config_names_every_stray_key_in_one_line(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    line = _one_line(cli, workdir, "model=openai_compat", "model.backend=hf_causal")
    assert "conf/model/openai_compat.yaml: model: base_url, model, api_key_env," in line
    assert "have no effect on the hf_causal backend" in line and "settings of openai_compat" in line


@pytest.mark.parametrize(("overrides", "expected"), [
    (["model.backend=hf_causl"], "model.backend: unknown backend 'hf_causl' (hint: did you mean 'hf_causal'? one of: "
                                 "hf_causal, hf_masked, openai_compat, anthropic, replay, scripted, oracle, http_app, "
                                 "recorded)"),
    (["~model.backend"], "model.backend: required key is missing (hint: one of: hf_causal,"),
    (["model=openai_compat", "+model.dtypo=float16"], "model.dtypo: unknown key 'dtypo' (hint: allowed keys: api_key_env,"),
    (["+model.timeout=5"], "model: timeout has no effect without `serve`"),
    (["model=openai_compat", "model.concurrency=2", "model.min_concurrency=3"],
     "model: `min_concurrency` (3) is above `concurrency` (2)"),
])
def test_other_model_config_errors_keep_the_users_key_path(workdir: Path, cli, overrides: list[str],  # type: ignore[no-untyped-def]
                                                           expected: str) -> None:
    line = _one_line(cli, workdir, *overrides)
    assert expected in line and ".hf_causal" not in line and ".openai_compat" not in line


def test_a_served_model_takes_the_engine_settings(workdir: Path) -> None:
    cfg = compose(["spec=crows_pairs_tp", "model.serve=llamacpp", "+model.timeout=900"]).config.model
    assert isinstance(cfg, HFCausalConfig) and cfg.serve == "llamacpp" and cfg.timeout == 900


class _Inner:
    supports = frozenset({"choice"})

    def __init__(self) -> None:
        self.seen: list[int] = []

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        self.seen.append(runtime.batch_size)


def test_llm_nli_passes_run_time_settings_to_its_chat_model() -> None:
    inner = _Inner()
    nli = LLMNLIBackend(LLMNLIConfig(backend="llm_nli", name="n"), ScriptedConfig(backend="scripted", name="s"),
                        inner, RuntimeConfig(batch_size=4))
    assert nli.batch_size == 4
    nli.apply_runtime(RuntimeConfig(batch_size=2))  # a later run reusing the loaded backend
    assert nli.batch_size == 2 and inner.seen == [2]
