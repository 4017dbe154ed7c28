"""Issue 42, section 2: the parts of a sharded run (`runtime.shards`) that need no Ray:
the split, the shard cache files, the per-shard concurrency of a served model, and the
settings refused before any call (tests/integration/test_ray_shards.py runs it on Ray)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from biasaudit.runner.shards import (
    leftover_shard_caches,
    per_shard,
    plan_tag,
    shard_cache,
    shard_of,
)
from biasaudit.spec.model_configs import AnthropicConfig, OpenAICompatConfig, ScriptedConfig
from tests.conftest import isolation


def test_split_is_a_partition_by_sha256_of_the_key() -> None:
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)]
    for n in (1, 2, 3, 7):
        shards = [[k for k in keys if shard_of(k, n) == i] for i in range(n)]
        assert sorted(k for s in shards for k in s) == sorted(keys)  # every key in exactly one shard
        assert all(abs(len(s) - len(keys) / n) < 0.1 * len(keys) / n for s in shards)  # about even
    # stable across processes and machines: the first 8 bytes of SHA-256 as a big-endian
    # integer, modulo n (Python's own `hash` of a str is salted per process)
    assert shard_of("abc", 2) == int("ba7816bf8f01cfea", 16) % 2 == 0
    assert shard_of("abc", 3) == int("ba7816bf8f01cfea", 16) % 3 == 0


def test_shard_caches_sit_beside_the_main_cache(tmp_path: Path) -> None:
    main = tmp_path / "we[ir]d*" / "cache.sqlite"  # glob characters in the folder are literal
    main.parent.mkdir()
    tag = plan_tag(["b", "a"])
    assert tag == plan_tag(["a", "b"]) == hashlib.sha256(b"a\nb\n").hexdigest()[:12]  # the order is not the plan
    assert shard_cache(main, tag, 0, 2) == main.parent / f"cache.sqlite.{tag}.shard-1-of-2.sqlite"
    other = plan_tag(["c"])  # another audit sharing the cache, perhaps running now
    for p in (shard_cache(main, tag, 1, 3), shard_cache(main, tag, 0, 2), shard_cache(main, other, 0, 2),
              main.parent / f"other.sqlite.{tag}.shard-1-of-2.sqlite",
              main.parent / f"cache.sqlite.{tag}.shard-1-of-2.sqlite-wal"):
        p.write_bytes(b"")
    assert leftover_shard_caches(main, tag) == [main.parent / f"cache.sqlite.{tag}.shard-1-of-2.sqlite",
                                                main.parent / f"cache.sqlite.{tag}.shard-2-of-3.sqlite"]


def test_served_models_share_their_concurrency_among_the_shards() -> None:
    m = OpenAICompatConfig(backend="openai_compat", name="x", base_url="http://h/v1", model="m", concurrency=64)
    assert per_shard(m, 3).concurrency == 21 and per_shard(m, 1).concurrency == 64
    small = OpenAICompatConfig(backend="openai_compat", name="x", base_url="http://h/v1", model="m",
                               concurrency=2, min_concurrency=2)
    one = per_shard(small, 4)
    assert (one.concurrency, one.min_concurrency) == (1, 1)  # at least one request in flight
    a = AnthropicConfig(backend="anthropic", name="c", model="claude", concurrency=8)
    assert per_shard(a, 2).concurrency == 4
    s = ScriptedConfig(backend="scripted", name="s")
    assert per_shard(s, 4) is s  # a local model has no concurrency to share


@pytest.mark.parametrize("extra", [["runtime.budget.tokens=1000"], ["runtime.sequential.look_every=10"]])
def test_settings_a_sharded_run_cannot_honour_are_refused(tmp_path: Path, cli, extra: list[str]) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "reports").mkdir()
    code, out, err = cli("run", "spec=crows_pairs_tp", "model=scripted", "runtime.shards=2", *extra,
                         *isolation(tmp_path))
    assert code == 2
    assert "runtime.shards: runtime.shards=2 cannot be combined with" in err, err
    assert "Traceback" not in err
    assert list((tmp_path / "reports").iterdir()) == []  # refused before the run folder


def test_shards_must_be_at_least_one(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("validate", "spec=crows_pairs_tp", "model=scripted", "runtime.shards=0", *isolation(tmp_path))
    assert code == 2 and "runtime.shards" in err and "Traceback" not in err


def test_a_spec_cannot_choose_the_cluster(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`runtime` is the operator's: a spec (untrusted) cannot send the audit's calls to a Ray
    cluster of its choosing, nor can a suite member's overrides."""
    spec = tmp_path / "s.yaml"
    text = (Path(__file__).resolve().parents[3] / "specs" / "crows_pairs_tp.yaml").read_text()
    spec.write_text(text + "\nruntime:\n  shards: 4\n  ray:\n    address: ray://attacker:10001\n")
    code, out, err = cli("validate", f"spec={spec}", "model=scripted", *isolation(tmp_path))
    assert code == 2 and "runtime" in err and "operator" in err, err
    suite = tmp_path / "suite.yaml"
    suite.write_text("suite:\n  name: s\n  subjects: [scripted]\n  members:\n"
                     "    - {spec: crows_pairs_tp, overrides: ['runtime.ray.address=ray://attacker:10001']}\n")
    code, out, err = cli("validate", f"spec={suite}", *isolation(tmp_path))
    assert code == 2 and "cannot override 'runtime.ray.address'" in err, err


def test_shard_caches_a_killed_driver_left_are_merged_first(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The driver itself killed after its shards had answered (before its merge): the next
    run merges those shard files into the main cache and calls nothing (so no Ray is
    started here); another audit's shard file beside them is left alone."""
    import shutil

    from biasaudit.store import Store

    first = tmp_path / "first"
    (first / "reports").mkdir(parents=True)
    code, out, err = cli("run", "--fail-on", "never", "spec=crows_pairs_tp", "model=scripted", *isolation(first))
    assert code == 0, err
    store = Store(first / "cache.sqlite")
    try:
        keys = [k for (k,) in store.db.execute("SELECT key FROM responses")]
    finally:
        store.close()
    assert len(keys) == 80
    (tmp_path / "reports").mkdir()
    main = tmp_path / "cache.sqlite"
    shutil.copy(first / "cache.sqlite", shard_cache(main, plan_tag(keys), 1, 2))  # as if shard 2 of 2 had answered all
    foreign = shard_cache(main, plan_tag(["another audit"]), 0, 2)
    foreign.write_bytes(b"")
    code, out, err = cli("run", "--fail-on", "never", "spec=crows_pairs_tp", "model=scripted", "runtime.shards=2",
                         *isolation(tmp_path))
    assert code == 0, err
    assert "merged 1 shard cache(s) an earlier run left (80 responses)" in err
    assert "80 requests, 80 from cache, 0 to call" in err
    assert sorted(p.name for p in tmp_path.glob("cache.sqlite.*")) == [foreign.name]
    [summary] = (tmp_path / "reports").rglob("summary.json")
    assert '"calls": 0' in summary.read_text() and '"cache_hits": 80' in summary.read_text()


def test_a_second_driver_of_the_same_audit_on_the_same_cache_is_refused(tmp_path: Path) -> None:
    """Two drivers sharding one audit on one cache would merge each other's live shard
    caches away; the second is refused while the first holds the audit's lock, another
    audit on the same cache is not, and the lock goes with its holder."""
    from biasaudit.errors import BackendError
    from biasaudit.runner.shards import one_driver

    main = tmp_path / "cache.sqlite"
    with one_driver(main, "aaaa"):
        with pytest.raises(BackendError, match="another run of this audit is sharding it"):
            with one_driver(main, "aaaa"):
                pass
        with one_driver(main, "bbbb"):  # another audit
            pass
    with one_driver(main, "aaaa"):  # released
        pass
    assert list(tmp_path.iterdir()) == []  # no lock file left beside the cache
