"""Parallel jobs share one SQLite cache (WAL, busy timeout): concurrent writers from
several processes lose no rows and never see "database is locked"."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from biasaudit.backends import Response
from biasaudit.plan import Request
from biasaudit.store import Store

N = 400


def _writer(path: str, tag: str, start: mp.synchronize.Barrier, errors: mp.Queue) -> None:  # type: ignore[name-defined]
    try:
        start.wait()
        store = Store(path)  # opened at the same moment by every writer, on a fresh file
        for i in range(N):
            # half the keys are this writer's own, half are shared with the other writers
            key = f"shared-{i}" if i % 2 else f"{tag}-{i}"
            req = Request(key=key, kind="generate", messages=[{"role": "user", "content": key}])
            store.put(req, Response(key=key, status="ok", output={"text": key}))
            if i % 50 == 0:
                got = store.get_many([key])
                assert got[key].output == {"text": key}
        store.record_throughput({"m": tag}, "generate", N, 1.0, 1, 1)
        store.close()
    except Exception as exc:  # reported to the parent, which fails the test
        errors.put(f"{tag}: {type(exc).__name__}: {exc}")


def test_concurrent_writers_share_one_cache(tmp_path: Path) -> None:
    path = str(tmp_path / "shared" / "cache.sqlite")
    ctx = mp.get_context("spawn")  # like joblib's loky workers: fresh interpreters
    writers = 3
    start = ctx.Barrier(writers)
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, f"w{j}", start, errors)) for j in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    msgs = []
    while not errors.empty():
        msgs.append(errors.get())
    assert msgs == []
    assert [p.exitcode for p in procs] == [0] * writers
    store = Store(path)
    own = writers * (N // 2)
    shared = N // 2
    assert store.count() == own + shared
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("SELECT COUNT(*) FROM throughput").fetchone()[0] == writers
    assert store.get_many(["w2-398"])["w2-398"].output == {"text": "w2-398"}
    store.close()


def _put(store: Store, key: str, status: str = "ok") -> None:
    req = Request(key=key, kind="generate", messages=[{"role": "user", "content": key}])
    store.put(req, Response(key=key, status=status, output={"text": key} if status == "ok" else None,
                            error=None if status == "ok" else "timeout"))


def test_merge_cache_adds_new_keys_and_replaces_only_failures(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    a, b, into = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "into.sqlite"
    sa, sb, si = Store(a), Store(b), Store(into)
    for k in ("k1", "k2"):
        _put(sa, k)
    _put(sb, "k2", "failed")  # a failure never overwrites an answer
    _put(sb, "k3")
    _put(si, "k3", "failed")  # ...but an answer replaces a failure
    sb.record_throughput({"m": 1}, "generate", 5, 1.0, 1, 1)
    for s in (sa, sb, si):
        s.close()
    code, out, err = cli("merge-cache", str(into), str(a), str(b))
    assert code == 0, err
    assert f"{a}: 2 new responses" in out and f"{b}: 1 new responses" in out
    si = Store(into)
    got = si.get_many(["k1", "k2", "k3"])
    assert {k: r.status for k, r in got.items()} == {"k1": "ok", "k2": "ok", "k3": "ok"}
    assert si.throughput({"m": 1}, "generate") is not None
    si.close()
    code, _, err = cli("merge-cache", str(into), str(tmp_path / "missing.sqlite"))
    assert code == 2 and "cache file not found" in err
