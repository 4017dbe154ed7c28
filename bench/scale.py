"""Scale section of `make bench` (issue 42, section 1): the paper-scale BiAxisAudit grid of
`bench/scale_spec.py` run end to end with the instant backend (`model=scripted`, so every
second is the engine's own) at 10^4, 10^5 and 10^6 requests.

Each size is one `biasaudit run` in a child process, timed stage by stage (plan, run,
code, measure, report) by wrapping the pipeline's stage functions, with its own peak RSS
(`os.wait4`: the child's, not the maximum over every child so far), and the run
folder's size (cache, responses.jsonl, codes.jsonl, reports). Beside it: the physical
floor per request, a request hashed and one response written to the SQLite store
(`Store.put`, autocommitted as the engine does), and the engine's per-request time as a
ratio of it: per request of the whole run, and marginal between sizes (which leaves out
the fixed start-up: imports, compiling the spec, the report's shell). The fitted exponents
are least-squares slopes of log time and log peak RSS against log requests (1 = linear;
memory flat is 0).

A size whose extrapolated wall time exceeds the budget
(`BIASAUDIT_BENCH_SCALE_BUDGET_S`, default 1200 s) is skipped and the row says so, with
the prediction; `BIASAUDIT_BENCH_SCALE_SIZES` (e.g. `10000,100000`) picks the sizes.

    python bench/scale.py            # prints the table
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TEMPLATES = 401
SIZES = (10_000, 100_000, 1_000_000)
STAGES = ("plan", "run", "code", "measure", "report")
# the figures on main before this work (2-core machine, same grid, scripted backend)
BEFORE = ((2_005, 44.0, 260), (20_050, 49.0, 408), (80_200, 198.0, 994))


def write_spec(out: Path, requests: int) -> tuple[Path, int]:
    """The grid with enough statements for `requests` (401 templates each): the 200 of
    scale_spec.py, then numbered copies of them (new statements, new request hashes)."""
    import csv
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_spec", BENCH / "scale_spec.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path: Path = mod.write(out)
    base = mod.statements()
    n = max(1, math.ceil(requests / TEMPLATES))
    rows = []
    for i in range(n):
        row = dict(base[i % len(base)])
        k = i // len(base)
        if k:
            for key in ("statement", "counter_statement", "question"):
                row[key] = f"{row[key][:-1]} (case {k}){row[key][-1]}"
        rows.append(row)
    with (out / "biaxis_scale_statements.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path, n * TEMPLATES


def _child(argv: list[str]) -> int:
    """In the child: run `biasaudit` with the stage functions timed; stage times to $SCALE_STAGES."""
    import functools

    import biasaudit.report as report
    import biasaudit.runner.pipeline as pipeline
    from biasaudit.cli.app import main

    spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    depth = [0]

    def timed(mod: object, name: str, label: str) -> None:
        fn = getattr(mod, name)

        @functools.wraps(fn)
        def wrapper(*a: object, **k: object) -> object:
            depth[0] += 1
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                if depth[0] == 0 or label != "report":
                    spent[label] += time.perf_counter() - t

        setattr(mod, name, wrapper)

    timed(pipeline, "prepare", "plan")
    timed(pipeline, "execute_plan", "run")
    timed(pipeline, "code", "code")
    timed(pipeline, "measure", "measure")
    for name in ("write_trail", "write_codes", "build_summary"):
        timed(pipeline, name, "report")
    timed(report, "render_all", "report")
    rc = main(argv)
    Path(os.environ["SCALE_STAGES"]).write_text(json.dumps(spent), encoding="utf-8")
    return rc


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(requests: int, work: Path) -> dict[str, float]:
    """One run of the grid at `requests` in a fresh folder: wall, stage times, peak RSS, bytes."""
    spec, planned = write_spec(work / "spec", requests)
    stages = work / "stages.json"
    env = {**os.environ, "SCALE_STAGES": str(stages), "PYTHONPATH": str(REPO / "framework"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "run", "--fail-on", "never", f"spec={spec}",
           "model=scripted", f"runtime.cache={work / 'cache.sqlite'}", f"runtime.reports_dir={work / 'reports'}",
           "runtime.progress=false"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"scale run at {planned} requests failed ({proc.returncode}): {err[-2000:]}")
    spent = json.loads(stages.read_text(encoding="utf-8"))
    return {"requests": planned, "wall": wall, **{f"s_{k}": spent[k] for k in STAGES},
            "rss_mb": usage.ru_maxrss / 1024, "bytes": _folder_bytes(work)}


def floor_per_request(n: int = 5_000) -> float:
    """Seconds per request of the physical floor: hash a planned request and write its
    response to the SQLite store (one autocommitted row, as the engine writes each)."""
    from biasaudit.plan.requests import canonical_json
    from biasaudit.records.responses import Response
    from biasaudit.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        spec, _ = write_spec(Path(tmp) / "spec", n)
        from biasaudit.runner.pipeline import prepare
        from biasaudit.spec.compose import compose

        composed = compose([f"spec={spec}", "model=scripted", f"runtime.cache={Path(tmp) / 'c.sqlite'}"])
        requests = list(prepare(composed).plan.requests.values())[:n]
        output = {"text": "Yes. " + "x" * 200, "input_tokens": 40, "output_tokens": 50}
        store = Store(Path(tmp) / "floor.sqlite")
        try:
            t0 = time.perf_counter()
            for r in requests:
                key = hashlib.sha256(canonical_json(r.model_dump(exclude={"key"})).encode("utf-8")).hexdigest()
                store.put(r, Response(key=key, status="ok", output=output, attempts=1, latency_s=0.0))
            return (time.perf_counter() - t0) / len(requests)
        finally:
            store.close()


def exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x (None with fewer than two sizes)."""
    if len(xs) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def run(sizes: tuple[int, ...] | None = None, budget_s: float | None = None) -> dict[str, object]:
    env_sizes = os.environ.get("BIASAUDIT_BENCH_SCALE_SIZES")
    sizes = sizes or (tuple(int(s) for s in env_sizes.split(",")) if env_sizes else SIZES)
    budget_s = budget_s or float(os.environ.get("BIASAUDIT_BENCH_SCALE_BUDGET_S", "1200"))
    rows: list[dict[str, float]] = []
    skipped: list[tuple[int, float]] = []
    for size in sizes:
        if rows:  # extrapolate from what was measured (linear from one size, the fitted slope from two)
            slope = exponent([r["requests"] for r in rows], [r["wall"] for r in rows]) or 1.0
            last = rows[-1]
            predicted = last["wall"] * (size / last["requests"]) ** max(slope, 1.0)
            if predicted > budget_s:
                skipped.append((size, predicted))
                continue
        with tempfile.TemporaryDirectory(prefix="biasaudit-scale-") as tmp:
            rows.append(measure(size, Path(tmp)))
    floor = floor_per_request()
    xs = [r["requests"] for r in rows]
    return {"rows": rows, "skipped": skipped, "floor_s": floor,
            "exp_time": exponent(xs, [r["wall"] for r in rows]),
            "exp_rss": exponent(xs, [r["rss_mb"] for r in rows]),
            "exp_stage": {k: exponent(xs, [max(r[f"s_{k}"], 1e-3) for r in rows]) for k in STAGES}}


def print_table(r: dict[str, object]) -> None:
    rows = r["rows"]
    assert isinstance(rows, list)
    floor = r["floor_s"]
    assert isinstance(floor, float)
    print(f"  {'requests':>10}{'wall s':>9}" + "".join(f"{k + ' s':>10}" for k in STAGES)
          + f"{'peak RSS MB':>13}{'folder MB':>11}{'ms/request':>12}{'/ floor':>9}")
    for row in rows:
        per = row["wall"] / row["requests"]
        print(f"  {int(row['requests']):>10,}{row['wall']:>9.1f}" + "".join(f"{row[f's_{k}']:>10.1f}" for k in STAGES)
              + f"{row['rss_mb']:>13.0f}{row['bytes'] / 2**20:>11.1f}{per * 1e3:>12.3f}{per / floor:>9.0f}x")
    skipped = r["skipped"]
    assert isinstance(skipped, list)
    for size, predicted in skipped:
        print(f"  {size:>10,}  skipped: predicted {predicted:.0f} s > the budget (BIASAUDIT_BENCH_SCALE_BUDGET_S)")
    print(f"  physical floor (hash + one SQLite write): {floor * 1e3:.3f} ms/request")
    # the marginal cost between sizes leaves out the fixed start-up (imports, spec, report shell)
    for a, b in zip(rows, rows[1:], strict=False):
        marginal = (b["wall"] - a["wall"]) / (b["requests"] - a["requests"])
        print(f"  marginal cost {int(a['requests']):,} -> {int(b['requests']):,}: {marginal * 1e3:.3f} ms/request, "
              f"{marginal / floor:.0f}x the floor; peak RSS {(b['rss_mb'] - a['rss_mb']) * 1024 / (b['requests'] - a['requests']):.2f} KB/request")

    def fmt(x: object) -> str:
        return f"{x:.2f}" if isinstance(x, float) else "n/a"

    stage_exp = r["exp_stage"]
    assert isinstance(stage_exp, dict)
    print(f"  fitted exponent (log-log): wall {fmt(r['exp_time'])}, peak RSS {fmt(r['exp_rss'])}; by stage: "
          + ", ".join(f"{k} {fmt(v)}" for k, v in stage_exp.items()))
    if len(rows) >= 2:
        big = [x for x in rows if x["requests"] >= 100_000]
        if len(big) >= 2:
            print(f"  peak RSS {int(big[-1]['requests']):,} / {int(big[0]['requests']):,}: "
                  f"{big[-1]['rss_mb'] / big[0]['rss_mb']:.2f} (target: within 1.20)")
    print("  before (issue 42, main): " + "; ".join(f"{n:,} requests {w:.0f} s, {m} MB" for n, w, m in BEFORE))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    print_table(run())
