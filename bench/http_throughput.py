"""HTTP throughput of the openai_compat backend at concurrency 1, 8 and 32.

A local OpenAI-compatible server (tests/support/fault_server.py, no faults, in its own
process like a real model server) answers each request after 50 ms. The same N chat requests go
through the real backend and the engine (cache lookup, a fresh SQLite store per level, so
no cache hits, every response committed as it arrives). With 50 ms per call, concurrency
1 cannot pass 20 requests/s; the acceptance is concurrency 32 at >= 10x concurrency 1.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from biasaudit.backends.openai_compat import OpenAICompatBackend  # noqa: E402
from biasaudit.engine import execute_requests  # noqa: E402
from biasaudit.plan import Request  # noqa: E402
from biasaudit.spec import ModelConfig, RuntimeConfig  # noqa: E402
from biasaudit.store import Store  # noqa: E402

LATENCY_S = 0.05
N_REQUESTS = 512
LEVELS = (1, 8, 32)


def _requests(n: int) -> dict[str, Request]:
    out = {}
    for i in range(n):
        content = f"Statement {i}: people from town {i % 17} are careful. Do you agree? Answer Yes or No."
        key = hashlib.sha256(content.encode()).hexdigest()
        out[key] = Request(key=key, kind="generate", messages=[{"role": "user", "content": content}],
                           params={"temperature": 0.0, "top_p": 1.0, "max_tokens": 16})
    return out


def run(n: int = N_REQUESTS, levels: tuple[int, ...] = LEVELS) -> list[tuple[str, float, float]]:
    """(label, requests/s, seconds) per concurrency level."""
    rows = []
    reqs = _requests(n)
    server = subprocess.Popen([sys.executable, "-m", "tests.support.fault_server", "--latency", str(LATENCY_S)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            for c in levels:
                cfg = ModelConfig(backend="openai_compat", name="bench", base_url=url, model="m",
                                  concurrency=c, timeout=30)
                store = Store(Path(tmp) / f"c{c}.sqlite")
                t0 = time.perf_counter()
                _, stats = execute_requests(reqs, store, lambda cfg=cfg: OpenAICompatBackend(cfg, RuntimeConfig()),
                                            progress=False)
                secs = time.perf_counter() - t0
                store.close()
                if stats.cache_hits or stats.failures or stats.calls != n:
                    raise RuntimeError(f"concurrency {c}: {stats.as_dict()}")
                rows.append((f"concurrency {c}", n / secs, secs))
    finally:
        server.communicate(timeout=30)  # closing its stdin stops it
    return rows


def print_table(rows: list[tuple[str, float, float]]) -> None:
    print(f"{'mode':<18}{'requests/s':>12}{'seconds':>10}")
    for label, rate, secs in rows:
        print(f"{label:<18}{rate:>12.1f}{secs:>10.2f}")
    print(f"throughput at concurrency 32 over concurrency 1: {rows[-1][1] / rows[0][1]:.1f}x (acceptance: >= 10x)")


def main() -> None:
    print(f"benchmark: openai_compat over HTTP, {N_REQUESTS} chat requests, {LATENCY_S * 1000:.0f} ms server latency")
    print_table(run())


if __name__ == "__main__":
    main()
