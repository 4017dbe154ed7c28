"""`make bench`: run every benchmark and print one table."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bootstrap  # noqa: E402
import pseudo_loglik  # noqa: E402
import scoring  # noqa: E402


def main() -> None:
    print("benchmark: bootstrap, 10,000 resamples of 10,000 rows")
    for label, secs in bootstrap.run():
        print(f"  {label:<40}{secs:>8.3f} s")
    print()
    print("benchmark: sequence_logprob scoring on SmolLM2-135M (80 CrowS-Pairs-format sentences)")
    rows = scoring.run()
    print(f"{'mode':<18}{'sequences/s':>14}{'seconds':>10}")
    for label, rate, secs in rows[:-1]:
        print(f"{label:<18}{rate:>14.1f}{secs:>10.2f}")
    print(f"model load: {rows[-1][1]:.1f} s")
    one = rows[0][1]
    best = max(r[1] for r in rows[1:-1])
    print(f"speed-up of best batched over one-at-a-time: {best / one:.2f}x")
    print()
    print("benchmark: pseudo-log-likelihood on a MiniLM-L6-sized masked LM (same 80 sentences)")
    rows = pseudo_loglik.run()
    print(f"{'mode':<26}{'sentences/s':>14}{'seconds':>10}")
    for label, rate, secs in rows:
        print(f"{label:<26}{rate:>14.1f}{secs:>10.2f}")
    print(f"speed-up of batched masking over the per-token loop: {max(r[1] for r in rows[1:]) / rows[0][1]:.2f}x")
    print()
    # -- openai_compat HTTP throughput (self-contained block; keep it last) ----------------
    import http_throughput

    print(f"benchmark: openai_compat over HTTP, {http_throughput.N_REQUESTS} chat requests, "
          f"{http_throughput.LATENCY_S * 1000:.0f} ms server latency")
    http_throughput.print_table(http_throughput.run())


if __name__ == "__main__":
    main()
