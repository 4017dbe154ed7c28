"""What the run stage allocates and keeps (issue 42, section 1): the paper-scale grid of
`bench/scale_spec.py` at N requests (bench/scale.py's spec: 401 templates a statement) answered by the instant
backend (`model=scripted`) into a fresh cache, under tracemalloc. Prints, per request:
the run stage's peak above what the plan holds, what it keeps once it ends (the answers'
table), that table's bytes by part (a walk of its objects), and the µs a read of one
answer costs (`responses[key]` and `.output(key)`, in plan order).

    PYTHONPATH=framework python bench/run_memory.py 100250 [resume]

With `resume`, half of the plan is answered first and the other half read from the cache.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def deep(obj: object, seen: set[int]) -> int:
    """Bytes of `obj` and what it refers to, each object counted once."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    n = sys.getsizeof(obj)
    if isinstance(obj, dict):
        n += sum(deep(k, seen) + deep(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        n += sum(deep(v, seen) for v in obj)
    elif hasattr(obj, "__slots__") and not isinstance(obj, (str, bytes)):
        for s in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, s):
                n += deep(getattr(obj, s), seen)
    return n


def parts(table: object) -> dict[str, int]:
    """The table's bytes by part; objects shared with the plan (interned, small ints) excluded."""
    seen: set[int] = {id(None), id(True), id(False)}
    out: dict[str, int] = {}
    rows = getattr(table, "_rows", None)
    if isinstance(rows, dict):  # records.responses.ResponseTable: key -> tuple row
        out["dict (key -> row)"] = sys.getsizeof(rows)
        out["keys (str)"] = sum(deep(k, seen) for k in rows)
        tup = stat = outp = lat = err = 0
        for r in rows.values():
            if isinstance(r, tuple):
                tup += sys.getsizeof(r)
                seen.add(id(r))
                stat += deep(r[0], seen)
                outp += deep(r[1], seen)
                err += deep(r[2], seen) + deep(r[3], seen) + deep(r[5], seen) + deep(r[6], seen)
                lat += deep(r[4], seen)
        out |= {"row tuples": tup, "statuses": stat, "outputs (dicts)": outp, "latencies (float)": lat,
                "errors, attempts, fields-set": err}
        return out
    for s in type(table).__slots__:  # engine.answers.AnswerTable
        v = getattr(table, s)
        if s == "_keys":  # the plan's own key index is not the table's: its hash table only
            out["_keys: slots"], out["_keys: hashes"] = deep(v._slots, seen), deep(v._hashes, seen)
            continue
        out[s] = deep(v, seen)
    return out


def main() -> None:
    from bench.scale import write_spec

    from biasaudit.engine.executor import execute_plan
    from biasaudit.runner.pipeline import prepare
    from biasaudit.spec.compose import compose
    from biasaudit.store import Store

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_050
    resume = "resume" in sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="runmem-") as tmp:
        t = Path(tmp)
        spec, _ = write_spec(t / "spec", n)
        composed = compose([f"spec={spec}", "model=scripted", f"runtime.cache={t / 'c.sqlite'}"])
        prep = prepare(composed)
        plan = prep.plan
        from biasaudit.backends.factory import build_audit_backend

        cfg = prep.composed.config
        store = Store(t / "c.sqlite")
        if resume:  # half the plan answered by an earlier run
            from biasaudit.engine.executor import execute_requests

            half = dict(list(plan.requests.items())[: len(plan.requests) // 2])
            execute_requests(half, store, lambda: build_audit_backend(cfg), progress=False)
            del half
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        t0 = time.perf_counter()
        responses, stats = execute_plan(plan, store, lambda: build_audit_backend(cfg), progress=False)
        secs = time.perf_counter() - t0
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        r = len(plan.requests)
        print(f"requests {r} (cache hits {stats.cache_hits}), run stage {secs:.2f} s")
        print(f"  peak above the plan {(peak - base) / r:7.1f} B/request ({(peak - base) / 2**20:.1f} MiB)")
        print(f"  kept after it       {(kept - base) / r:7.1f} B/request ({(kept - base) / 2**20:.1f} MiB)")
        for name, b in parts(responses).items():
            print(f"    {name:32s} {b / r:7.1f} B/request")
        keys = list(plan.requests)
        t0 = time.perf_counter()
        for k in keys:
            responses[k]
        t1 = time.perf_counter()
        for k in keys:
            responses.output(k)  # type: ignore[attr-defined]
        t2 = time.perf_counter()
        print(f"  read: responses[key] {1e6 * (t1 - t0) / r:.2f} µs, .output(key) {1e6 * (t2 - t1) / r:.2f} µs "
              "a request (plan order)")
        store.close()


if __name__ == "__main__":
    main()
