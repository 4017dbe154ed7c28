"""Where coding requests go: each route names a configured model, which gives the
identity a request is hashed with and the backend that answers it.

Routes: `subject` (the model under test), `judge:<name>` (that judge's model, or the
subject), `nli_chat` (the `nli` group's chat model, or the subject), `nli` (the `nli`
group: an NLI / text-classification model or a chat model asked for the relation),
`embedder` (the `embedder` group). A request's key is `request_key` over the route's
identity, so the same question to the same model is one cached answer, whoever asks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasaudit.backends import (
    BACKENDS,
    Backend,
    backend_identity,
    build_backend,
    build_nli_backend,
    check_probe_support,
    nli_chat_model,
    nli_identity,
    nli_kind,
)
from biasaudit.coding.base import CodingRequest, LayerCalls
from biasaudit.coding.layers import Layer
from biasaudit.engine import execute_requests
from biasaudit.errors import BackendError, SpecError
from biasaudit.plan import Request, request_key
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import Response
from biasaudit.spec import AuditConfig, ModelConfig
from biasaudit.store import Store


def route_model(cfg: AuditConfig, route: str) -> ModelConfig:
    """The chat model behind a chat route."""
    if route == "subject":
        return cfg.model
    if route == "nli_chat":
        return next(iter(cfg.nli.models()), cfg.model) if cfg.nli is not None else cfg.model
    if route.startswith("judge:"):
        name = route.partition(":")[2]
        if cfg.judge is None:
            raise SpecError("this spec's coding needs a judge panel", key="judge", hint="add judge=smollm2_panel")
        for j in cfg.judge.judges:
            if j.name == name:
                return j.model or cfg.model
        raise SpecError(f"no judge named {name!r}", key="judge.judges",
                        hint=f"judges: {', '.join(j.name for j in cfg.judge.judges)}")
    raise SpecError(f"unknown route {route!r}", key="coding")


def route_identity(cfg: AuditConfig, route: str) -> JSONObject:
    if route in ("nli", "classifier"):
        return {"derived_by": nli_identity(cfg)}
    if route == "embedder":
        assert cfg.embedder is not None
        return {"derived_by": {"embedder": cfg.embedder.model_dump(mode="json")}}
    return {"derived_by": backend_identity(route_model(cfg, route))}


def route_factory(cfg: AuditConfig, route: str) -> Callable[[], Backend]:
    if route == "nli":
        return functools.partial(build_nli_backend, cfg)
    if route == "classifier":
        return functools.partial(build_nli_backend, cfg, relations=False)
    return functools.partial(build_backend, route_model(cfg, route), cfg.runtime)


def check_routes(layer: Layer) -> None:
    """The models the layer's requests go to exist and can answer them."""
    cfg, env = layer.env.config, layer.env
    for route, kind in layer.coder_def.routes(env, layer.options):
        where = env.key("coder")
        if route == "embedder":
            if cfg.embedder is None:
                raise SpecError(f"layer {layer.name!r} embeds text and needs the embedder group", file=env.spec_file,
                                key=where, hint="add embedder=minilm")
            continue
        if route in ("nli", "classifier"):
            if cfg.nli is None:
                raise SpecError(f"layer {layer.name!r} needs the nli group", file=env.spec_file, key=where,
                                hint="add nli=llm or nli=hf nli.path=...")
            if route == "classifier" and not nli_kind(cfg.nli).classifier:
                raise SpecError(f"text classification needs an NLI kind that is also a text classifier "
                                f"(nli=hf, a local classification model); {cfg.nli.backend!r} is not",
                                file=env.spec_file, key=where, hint="or give the layer an NLI `hypothesis`")
            chat = nli_chat_model(cfg)
            if chat is not None and not BACKENDS.get(chat.backend, key="nli.model").label_logprobs:
                raise SpecError(f"{cfg.nli.backend} needs a chat model with next-token log-probs; {chat.backend!r} "
                                "has none", file=env.spec_file, key=where,
                                hint="use nli=hf or a hf_causal / openai_compat model")
            continue
        model = route_model(cfg, route)
        try:
            check_probe_support(model, kind)
        except BackendError as exc:
            raise SpecError(f"layer {layer.name!r} asks {route} for {kind}: {exc.message}", file=env.spec_file,
                            key=where, hint=exc.hint) from None


@dataclass
class StoreAnswerer:
    """Answers coding requests from the store, and the rest through the route's model
    (each answer committed as it arrives); offline, a missing answer is an error."""

    cfg: AuditConfig
    offline: bool = False
    stats: ExecutionStats | None = None
    per_layer: dict[str, LayerCalls] = field(default_factory=dict)
    _embedder: Any = None

    def __call__(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        counts = self.per_layer.setdefault(layer, LayerCalls())
        out: dict[CodingRequest, Response] = {}
        by_route: dict[str, list[CodingRequest]] = {}
        for r in wanted:
            by_route.setdefault(r.route, []).append(r)
        for route, reqs in by_route.items():
            if route == "embedder":
                out.update(self._embed(reqs, counts))
                continue
            out.update(self._execute(layer, route, reqs, counts))
        return out

    def _execute(self, layer: str, route: str, reqs: list[CodingRequest], counts: LayerCalls
                 ) -> dict[CodingRequest, Response]:
        ident = route_identity(self.cfg, route)
        keyed: dict[str, Request] = {}
        key_of: dict[CodingRequest, str] = {}
        for r in reqs:
            k = self.key(ident, r)
            key_of[r] = k
            keyed[k] = Request(key=k, kind=r.kind, text=r.text,
                               messages=[{"role": "user", "content": r.user}] if r.user is not None else None,
                               params=r.params_dict(), text_pair=r.text_pair)
        store = Store(self.cfg.runtime.cache, readonly=self.offline)  # a re-render writes nothing
        try:
            results, st = execute_requests(keyed, store, None if self.offline else route_factory(self.cfg, route),
                                           progress=self.cfg.runtime.progress,
                                           label=f"coding {layer} ({route})", identity=ident,
                                           who=f"{route} (coding layer {layer})")
        finally:
            store.close()
        counts.requests += st.requests
        counts.calls += st.calls
        counts.cache_hits += st.cache_hits
        counts.failures += st.failures
        if self.stats is not None:
            self.stats.coding_requests += st.requests
            self.stats.coding_calls += st.calls
            self.stats.coding_cache_hits += st.cache_hits
        return {r: results[k] for r, k in key_of.items()}

    def _embed(self, reqs: list[CodingRequest], counts: LayerCalls) -> dict[CodingRequest, Response]:
        if self._embedder is None:
            from biasaudit.backends.embedder import Embedder

            if self.cfg.embedder is None:
                raise SpecError("coding needs an embedder", key="embedder", hint="add embedder=minilm")
            self._embedder = Embedder(self.cfg.embedder, self.cfg.runtime.cache)
        before = (self._embedder.calls, self._embedder.hits)
        texts = [r.text or "" for r in reqs]
        vecs = self._embedder.embed(texts, compute=not self.offline)
        counts.requests += len(texts)
        counts.calls += self._embedder.calls - before[0]
        counts.cache_hits += self._embedder.hits - before[1]
        if self.stats is not None:
            self.stats.embedding_calls = self._embedder.calls
            self.stats.embedding_cache_hits = self._embedder.hits
        return {r: Response(key=f"embed:{i}", status="ok", output={"vector": [float(x) for x in v]})
                for i, (r, v) in enumerate(zip(reqs, vecs, strict=True))}

    def lookup(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        """The cached answers among `wanted`, calling nothing and writing nothing
        (embeddings are not looked up: their cache is the embedder's)."""
        out: dict[CodingRequest, Response] = {}
        path = Path(self.cfg.runtime.cache)
        if not path.is_file():
            return out
        store = Store(path, readonly=True)
        try:
            by_route: dict[str, list[CodingRequest]] = {}
            for r in wanted:
                if r.route != "embedder":
                    by_route.setdefault(r.route, []).append(r)
            for route, reqs in by_route.items():
                keys = {r: self.key(route_identity(self.cfg, route), r) for r in reqs}
                found = store.get_many(keys.values())
                out.update({r: found[k] for r, k in keys.items() if k in found and found[k].status == "ok"})
        finally:
            store.close()
        return out

    @staticmethod
    def key(identity: JSONObject, r: CodingRequest) -> str:
        messages = [{"role": "user", "content": r.user}] if r.user is not None else None
        return request_key(identity, r.kind, r.text, messages, r.params_dict(), 0, r.text_pair)

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None


__all__ = ["LayerCalls", "StoreAnswerer", "check_routes", "route_factory", "route_identity", "route_model"]
