"""The cache: the default single spec (`crows_pairs_tp`, 80 CrowS-Pairs sentences on
SmolLM2; not the `make audit` suite) run twice in a fresh cache, in this process with the
model already loaded; the second run answers every request from the store (0 model calls)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from biasaudit.cli.app import main
from biasaudit.spec.compose import compose


def run() -> list[tuple[str, float, int, int]]:
    models = Path(compose([]).config.runtime.cache).resolve().parent / "models"
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # --fail-on never: the verdict does not matter here, only that the run completes
        args = ["run", "--fail-on", "never", f"runtime.cache={d}/cache.sqlite", f"runtime.reports_dir={d}/reports",
                f"runtime.models_dir={models}", "runtime.progress=false"]
        for label in ("first run (empty cache)", "second run (cached)"):
            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(args)
            secs = time.perf_counter() - t
            if code != 0:
                raise RuntimeError(f"biasaudit run exited {code}")
            latest = max(Path(d, "reports").rglob("summary.json"), key=lambda p: p.stat().st_mtime)
            ex = json.loads(latest.read_text())["execution"]
            rows.append((label, secs, ex["calls"], ex["cache_hits"]))
    return rows
