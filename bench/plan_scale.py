"""Plan compile time and peak memory for the paper-scale plan: 200 statements x 401
templates x 8 models = 641,600 requests (`bench/scale_spec.py`), counted by
`biasaudit plan -m` in a child process (wall time and the child's peak RSS)."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scale_spec

MODELS = ",".join(f"m{i}" for i in range(1, 9))


def run() -> dict[str, float | int]:
    with tempfile.TemporaryDirectory() as d:
        spec = scale_spec.write(Path(d))
        cmd = [str(Path(sys.executable).parent / "biasaudit"), "plan", "-m", f"spec={spec}", "model=openai_compat",
               f"model.model={MODELS}", f"runtime.cache={d}/none.sqlite"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        secs = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kib = after.ru_maxrss  # KiB on Linux, max over children
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    m = re.search(r"sweep: (\d+) jobs, (\d+) plan items, (\d+) model calls needed", out)
    if m is None:
        raise RuntimeError(f"unexpected plan output:\n{out}")
    return {"jobs": int(m.group(1)), "items": int(m.group(2)), "unique": int(m.group(3)), "seconds": secs, "cpu_seconds": cpu,
            "peak_mib": peak_kib / 1024}
