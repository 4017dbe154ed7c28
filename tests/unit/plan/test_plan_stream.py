"""Streaming plan counts, the spliced request key, memoised rendering, and plan estimates
from measured throughput."""

from __future__ import annotations

import copy
import re
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from biasaudit.backends import backend_identity
from biasaudit.data import load_stimuli
from biasaudit.plan import KeyMaker, compile_plan, render, request_key
from biasaudit.plan.stream import count_plans
from biasaudit.spec import validate_config
from biasaudit.spec.compose import compose
from biasaudit.store import Store, speed_key
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, verdict_code

GRID = {
    "audit": {"name": "t", "method": "x"},
    "stimuli": {"inline": [{"statement": "Cats are lazy."}, {"statement": "Dogs bark."},
                           {"statement": "Cats are lazy."}]},
    "factors": {
        "task": {"bj": {"templates": ["{{ statement }} Agree?", "Agree? {{ statement }}"]},
                 "rate": {"template": "Rate: {{ statement }}"}},
        # `quiet` adds nothing to the prompt, so its cells repeat `none`'s requests
        "tone": {"none": {}, "quiet": {}, "warm": {"system": "Be kind."}},
    },
    "design": {"kind": "full"},
    "probe": {"kind": "generate", "max_tokens": 7},
    "metrics": [],
    "model": {"backend": "scripted", "name": "s"},
}

text_st = st.one_of(st.none(), st.text(max_size=30))
msgs_st = st.one_of(st.none(), st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user"]), "content": st.text(max_size=30)}), max_size=3))


@settings(max_examples=200, deadline=None)
@given(text=text_st, messages=msgs_st, pair=text_st, sample=st.integers(0, 50),
       temp=st.floats(0, 2, allow_nan=False), name=st.text(max_size=10))
def test_spliced_key_equals_request_key(text, messages, pair, sample, temp, name) -> None:  # type: ignore[no-untyped-def]
    identity = {"backend": "hf_causal", "name": name, "nested": {"z": 1, "a": [1, "é"]}}
    params = {"temperature": temp, "max_tokens": 5, "seed": 3}
    maker = KeyMaker(identity, "generate", params)
    assert maker(text, messages, sample, pair) == request_key(identity, "generate", text, messages, params, sample, pair)


def _grid(d: dict):  # type: ignore[no-untyped-def]
    cfg = validate_config(d, spec_file="s.yaml")
    return cfg, load_stimuli(cfg.stimuli, None)


def test_streamed_counts_equal_the_compiled_plan_for_each_model() -> None:
    cfg, stim = _grid(copy.deepcopy(GRID))
    ids = [{"m": "a"}, {"m": "b"}]
    counts = count_plans(cfg, stim, ids)
    # 3 task variants x 3 tones x 3 stimuli; quiet == none and the duplicated statement
    # leave 2 distinct statements x 3 variants x 2 distinct tone prompts = 12 requests
    assert len(counts.cells) == 6 and counts.per_cell_n == 6 and counts.units == 27
    for ident, c in zip(ids, counts.models, strict=True):
        plan = compile_plan(cfg, stim, ident)
        assert (c.items, c.unique) == (plan.n_items, len(plan.requests)) == (27, 12)
        assert (c.input_tokens, c.output_tokens) == plan.token_estimate()
        assert c.output_tokens == 12 * 7
        assert c.keys == set(plan.requests)
    assert not counts.models[0].keys & counts.models[1].keys


def test_sampled_requests_are_counted_per_sample() -> None:
    d = copy.deepcopy(GRID)
    d["probe"] = {"kind": "generate", "temperature": 1.0, "samples": 3, "max_tokens": 2}
    cfg, stim = _grid(d)
    c = count_plans(cfg, stim, [{"m": "a"}]).models[0]
    plan = compile_plan(cfg, stim, {"m": "a"})
    assert (c.items, c.unique) == (plan.n_items, len(plan.requests)) == (81, 36)


def test_cached_lookup_counts_only_stored_successes(tmp_path: Path) -> None:
    cfg, stim = _grid(copy.deepcopy(GRID))
    plan = compile_plan(cfg, stim, {"m": "a"})
    keys = sorted(plan.requests)
    asked: list[int] = []

    def cached(chunk: list[str]) -> int:
        asked.append(len(chunk))
        return sum(1 for k in chunk if k in keys[:5])

    c = count_plans(cfg, stim, [{"m": "a"}], cached=cached).models[0]
    assert c.cached == 5 and sum(asked) == 12  # each unique key asked about once


def test_memoised_render_keeps_types_and_handles_mappings() -> None:
    t = "{{ x }}!"
    assert render(t, {"x": 1}, file=None, key="k") == "1!"
    assert render(t, {"x": True}, file=None, key="k") == "True!"  # 1 == True, yet rendered apart
    assert render(t, {"x": 1.0}, file=None, key="k") == "1.0!"
    assert render("{{ g.name }}", {"g": {"name": "Ann"}}, file=None, key="k") == "Ann"


def test_throughput_is_pooled_and_ignores_the_variant_prompt(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite")
    base = {"backend": "hf_causal", "sha256": "abc"}
    fair = {**base, "system_prompt": "Be fair."}
    assert speed_key(base) == speed_key(fair) != speed_key({**base, "sha256": "abd"})
    assert store.throughput(base, "generate") is None
    store.record_throughput(base, "generate", calls=10, seconds=4.0, input_tokens=100, output_tokens=50)
    store.record_throughput(fair, "generate", calls=30, seconds=6.0, input_tokens=300, output_tokens=90)
    store.record_throughput(base, "sequence_logprob", calls=99, seconds=1.0, input_tokens=1, output_tokens=0)
    t = store.throughput(fair, "generate")
    assert t is not None and (t.measurements, t.calls, t.seconds) == (2, 40, 10.0)
    assert t.per_second == 4.0
    store.close()


def test_readonly_store_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    # a cache of the layout before the throughput table and error_kind (store/schema.py)
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, request TEXT NOT NULL, "
               "status TEXT NOT NULL, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 1, "
               "latency_s REAL NOT NULL DEFAULT 0, created REAL NOT NULL)")
    db.commit()
    db.close()
    before = path.read_bytes()
    ro = Store(path, readonly=True)
    assert ro.throughput({"m": 1}, "generate") is None  # no throughput table: no estimate
    ro.close()
    assert path.read_bytes() == before


def test_plan_estimates_time_from_measured_throughput(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 6)
    args = [f"spec={spec}", "model=scripted", *isolation(workdir)]
    code, out, _ = cli("plan", *args)
    assert code == 0 and "estimate: default, not measured (scripted: 1000 to 20000 requests/s)" in out
    ident = backend_identity(compose(args).config.model)
    store = Store(workdir / "cache.sqlite")
    store.record_throughput(ident, "sequence_logprob", calls=3, seconds=2.0, input_tokens=30, output_tokens=0)
    store.close()
    code, out, _ = cli("plan", *args)
    # 12 requests needed at 1.5 requests/s (8 s), plus the engine's fixed 10 s and 1.52 ms
    # a plan item (12 items: 0.02 s): ~18 s, one measurement, so no range
    assert code == 0 and re.search(r"estimated time\s+~18 s \(measured: 1.5 requests/s in the latest run", out), out


def test_run_records_throughput_then_plan_sees_the_cache(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    args = [f"spec={spec}", "model=scripted", *isolation(workdir)]
    assert cli("run", *args)[0] == verdict_code(run_dirs(workdir)[0])
    store = Store(workdir / "cache.sqlite")
    t = store.throughput(backend_identity(compose(args).config.model), "sequence_logprob")
    store.close()
    assert t is not None and t.calls == 8
    code, out, _ = cli("plan", *args)
    assert re.search(r"already cached\s+8\n", out) and re.search(r"subject calls needed\s+0\n", out)
    assert re.search(r"estimated time\s+~10 s \(all cached: the engine's own work\)", out), out


def test_plan_multirun_counts_each_job_and_shares_requests(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 5)
    code, out, err = cli("plan", "-m", f"spec={spec}", "model=scripted", "model.name=a,b",
                         "metrics.0.mode=ar_full,ar_shared", *isolation(workdir))
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 4
    # jobs 0 and 1 differ in the metric only: the second shares the first's requests
    assert [r[5] for r in rows] == ["10", "0", "10", "0"]
    assert "4 jobs, 40 plan items, 20 model calls needed" in out
