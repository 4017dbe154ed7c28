"""`make bench`: run every benchmark and print one table per section.

Each section is a function that prints its own rows; `main()` runs them in order. Timings
depend on the machine: run on a quiet one (other processes on the CPU slow every row).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bootstrap  # noqa: E402
import cache_rerun  # noqa: E402
import generation  # noqa: E402
import peer_scoring  # noqa: E402
import plan_scale  # noqa: E402
import prefix_cache  # noqa: E402
import pseudo_loglik  # noqa: E402
import scale  # noqa: E402
import scoring  # noqa: E402


def section_plan() -> None:
    r = plan_scale.run()
    print("(d) plan: 200 statements x 401 templates x 8 models (`biasaudit plan -m`, child process)")
    print(f"  {r['jobs']} jobs, {r['items']:,} requests ({r['unique']:,} unique)")
    print(f"  compile time {r['seconds']:.1f} s wall, {r['cpu_seconds']:.1f} s CPU (target < 60 s); "
          f"peak memory {r['peak_mib']:.0f} MiB (target < 2048 MiB)")


def section_scale() -> None:
    r = scale.run()
    print("(g) scale: the paper-scale BiAxisAudit grid (bench/scale_spec.py, 401 templates) end to end, "
          "instant backend (model=scripted), one child process per size")
    print("    targets (issue 42): 10^6 requests <= 600 s and <= 2048 MB peak RSS; peak RSS within 1.20 from 10^5 to 10^6")
    scale.print_table(r)


def section_peer() -> None:
    r = peer_scoring.run()
    print(f"(a) scoring on SmolLM2-135M, {r['n']} CrowS-Pairs-format sentences, vs {r['peer']} (same weights)")
    print(f"  {'path':<46}{'sequences/s':>12}{'max |diff|':>12}{'bias score':>11}")
    for label, rate in r["rows"]:
        print(f"  {label:<46}{rate:>12.1f}{r['diffs'][label]:>12.1e}{r['scores'][label]:>11.1f}")
    for label, gain in r["ideas"].items():
        print(f"  idea: {label}: {gain:.2f}x the padded token-budget path")
    ok = r["max_abs_diff"] <= 2e-4 and len(set(r["scores"].values())) == 1
    print(f"  ratio biasaudit default / {r['fastest_peer']} (the peer's fastest row): {r['ratio_best_peer']:.2f} "
          f"(acceptance: >= 1.3); / lm-eval at batch {r['batch_size']}: {r['ratio_same_batch']:.2f}")
    pr = r["paired_ratios"]
    print(f"  paired rounds against that row ({len(pr)}, each round's own ratio): median {statistics.median(pr):.2f}, "
          f"lowest {pr[0]:.2f}, highest {pr[-1]:.2f}")
    print(f"  same numbers: max |log-likelihood difference| vs the peer {r['max_abs_diff']:.1e} (acceptance: <= 2e-4), "
          f"bias scores {'identical' if ok else 'DIFFER'}")
    if not ok:
        raise SystemExit("scoring paths disagree: see the table above")


def section_scoring() -> None:
    rows = scoring.run(repeats=2)
    print("    biasaudit scoring by batch size (same sentences, length-sorted)")
    print(f"  {'mode':<40}{'sequences/s':>14}{'seconds':>10}")
    for label, rate, secs in rows[:-1]:
        print(f"  {label:<40}{rate:>14.1f}{secs:>10.2f}")
    print(f"  speed-up of best batched over one-at-a-time: {max(r[1] for r in rows[1:-1]) / rows[0][1]:.2f}x")


def section_prefix() -> None:
    rows = prefix_cache.run()
    print("    shared-prefix reuse, scoring the smollm2_fair variant (system prompt before every sentence)")
    for label, rate, secs in rows[:-1]:
        print(f"  {label:<40}{rate:>14.1f}{secs:>10.2f}")
    print(f"  speed-up of reuse (padded): {rows[1][1] / rows[0][1]:.2f}x; prefix trees: {rows[2][1] / rows[0][1]:.2f}x; "
          f"max |log-prob difference| {rows[-1][1]:.1e}")


def section_generation() -> None:
    rows = generation.run()
    print("(b) generation on SmolLM2-135M, 16 chat prompts, greedy, 32 new tokens")
    print(f"  {'mode':<40}{'requests/s':>14}{'tokens/s':>10}{'seconds':>10}")
    for label, rate, toks, secs in rows:
        print(f"  {label:<40}{rate:>14.2f}{toks:>10.1f}{secs:>10.2f}")
    print(f"  speed-up of best batched over one at a time: {max(r[1] for r in rows[1:]) / rows[0][1]:.2f}x")


def section_cache() -> None:
    rows = cache_rerun.run()
    print("(c) cache: the default single spec (crows_pairs_tp, 80 requests) twice in a fresh cache "
          "(wall time of `biasaudit run` in-process, model already loaded)")
    print(f"  {'run':<40}{'seconds':>10}{'calls':>8}{'cached':>8}")
    for label, secs, calls, hits in rows:
        print(f"  {label:<40}{secs:>10.2f}{calls:>8}{hits:>8}")
    print(f"  second run / first run: {rows[1][1] / rows[0][1]:.2f} of the time")


def section_bootstrap() -> None:
    print("bootstrap, 10,000 resamples of 10,000 rows")
    for label, secs in bootstrap.run():
        print(f"  {label:<40}{secs:>8.3f} s")


def section_pll() -> None:
    rows = pseudo_loglik.run()
    print("pseudo-log-likelihood on a MiniLM-L6-sized masked LM (same 80 sentences)")
    print(f"  {'mode':<40}{'sentences/s':>14}{'seconds':>10}")
    for label, rate, secs in rows:
        print(f"  {label:<40}{rate:>14.1f}{secs:>10.2f}")
    print(f"  speed-up of batched masking over the per-token loop: {max(r[1] for r in rows[1:]) / rows[0][1]:.2f}x")


def section_http() -> None:
    import http_throughput

    print(f"(e) openai_compat over HTTP, {http_throughput.N_REQUESTS} chat requests, "
          f"{http_throughput.LATENCY_S * 1000:.0f} ms server latency")
    http_throughput.print_table(http_throughput.run())


def section_engines() -> None:
    import http_engines

    print("(f) in-process vs managed engines (model.serve=llamacpp|vllm) on SmolLM2-135M, measured in one run")
    http_engines.print_table(http_engines.run())


# (d) first: its peak-memory figure is the maximum over child processes waited for so far
SECTIONS = [section_plan, section_scale, section_peer, section_scoring, section_prefix, section_generation, section_cache,
            section_http, section_engines, section_bootstrap, section_pll]


def main() -> None:
    t0 = time.perf_counter()
    for section in SECTIONS:
        section()
        print()
    print(f"benchmarks took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
