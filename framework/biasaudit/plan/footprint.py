"""What a run will hold on disk and in memory, from its plan's counts, before it starts
(`biasaudit plan` shows it; `run` refuses a run that does not fit: runner/preflight.py).

The constants are fitted on measured runs of the paper-scale grid (`bench/scale_spec.py`,
model=scripted, 2-core machine, this branch's main, 2026-11-29) at 2,005 and 20,050
requests (5 and 50 statements x 401 templates):

| requests | responses.jsonl | codes.jsonl | cache file | report files | peak RSS |
|---|---|---|---|---|---|
| 2,005  | 1,611,295 B  | 1,017,695 B  | 1,335,296 B  | 1.38 MB | 296,100 KB |
| 20,050 | 16,278,215 B | 10,209,030 B | 12,636,160 B | 1.39 MB | 444,784 KB |

Per request (the slope between the two): responses.jsonl 812.8 B, codes.jsonl 509.4 B
(two primary layers: 254.7 B a row), the cache 626.3 B; peak RSS 8.24 KB. The slope
extrapolated to 80,200 requests gives responses.jsonl 65.2 MB, codes.jsonl 40.9 MB and
peak RSS 940 MB, against the 65 MB, 41 MB and 994 MB measured there (issue 42). The
peak RSS constants were refitted since, once the stages held their per-request records
compactly (`RSS_PER_ITEM`).

A row's size is split into what the plan knows: the prompt and the answer (characters,
4 a token, as `plan.requests.estimated_tokens` counts them), the cell id (written twice
in a responses row, once in a code row's unit) and a fixed rest (key, parameters, status
fields, JSON punctuation), measured on the 20,050-request run: 526 B a responses row
(514 to 554) beside its prompt, answer and cell id, 184.5 B a code row beside its unit.
The answer is what an earlier run measured for the model (mean output tokens, kept with
its throughput) or else `max_tokens` (an upper bound): the estimate says which.
"""

from __future__ import annotations

from dataclasses import dataclass

CHARS_PER_TOKEN = 4
"""As `plan.requests.estimated_tokens` counts them (characters / 4)."""

RESPONSE_ROW_FIXED = 530
"""responses.jsonl bytes a row beside prompt, answer and twice the cell id (measured 526.3)."""
CODE_ROW_FIXED = 190
"""codes.jsonl bytes a row beside its unit (cell id + stimulus, slot, variant, sample:
measured 184.5 beside the unit; a judge panel's votes make it longer)."""
UNIT_SUFFIX = 12
"""A unit's characters beyond its cell id (`|stimulus|slot|variant|sample`)."""
CACHE_ROW_FIXED = 452
"""Cache (SQLite) bytes an answered request beside its prompt and answer: measured
626.3 B a request with a 161-character prompt and a 13-character answer."""
REPORT_PER_CELL = 49_000
REPORT_BASE = 280_000
"""summary.json, report.html/.md, estimates.csv, plots, manifest and .hydra/: flat in the
number of requests (tables are cut to `report.max_rows`), growing with the cells. Fitted
on two runs: the grid's 21 cells 1,302,829 B (1,296,779 B at 2,005 requests), and
specs/hiring_impact.yaml's 2 cells (96 requests, model=scripted) 376,674 B."""
ITEM_ROW_FIXED = 190
"""items.csv bytes a row beside its prompt, answer and cell: the stimulus' hash and its
data columns (hiring_impact: 79,949 B for 192 rows of a 200-character prompt and a
13-character answer). A metric writes at most one row a plan item; many write none (the
grid's items.csv is 21 B), so the estimate is an upper bound."""
SUMMARY_ITEM_ROW = 260
"""summary.json bytes a plan item and metric for a metric that keeps its item rows there
(specs/crows_pairs_tp.yaml, 1,000 pairs = 2,000 requests on model=scripted: 504,219 B for
one metric, 252 B an item); the grid's biaxis metric keeps none (its summary.json is
690 KB at 2,005 and at 20,050 requests). An upper bound, with items.csv."""
SCORE_CHARS_PER_TOKEN = 26
"""A scored sequence's stored answer (tokens, ids, log-probs, offsets) a prompt token:
470 B for a 71-character sentence (18 tokens as counted here), crows_pairs_tp above."""
RSS_BASE = 273_500_000
"""Peak RSS of a run before its plan (the interpreter, libraries, backend, report code):
the intercept of the fit below."""
RSS_PER_ITEM = 710
"""Peak RSS a plan item, fitted on the grid's runs at 100,250 and 1,000,094 requests
(bench/scale.py, 2026-11-30 06:39-06:51 UTC, after the plan's items, the answers, the
units and the coding summary's reliability were held as columns: 315 MiB and 931 MiB
peak, 718 B a request between them; 1.9 KB at the previous fit, 8.24 KB before issue
42). With `RSS_BASE` kept, the estimate is 345 MB at 100,250 and 984 MB at 1,000,094
requests, a little above what was measured (330 MB, 976 MB), so the preflight check errs
on the side of refusing; at 10,025 it is 281 MB against 297 MB measured (5% under: the
fixed cost of a small run is larger than the intercept). Most of it is what a stage
holds for every unit while it works (a coding layer's codes, the estimators' index
arrays, the answers' key index); the local backends' weights are not in it."""


@dataclass(frozen=True)
class Footprint:
    """Estimated bytes of one run."""

    responses: int
    codes: int
    items: int
    """items.csv and summary.json's item rows, at most (one row a plan item and metric)."""
    report: int
    cache: int
    """Growth of the cache file: the calls still needed (cached answers add nothing)."""
    peak_rss: int
    answer_basis: str
    """Where the answer length came from: measured, or `max_tokens` (an upper bound)."""

    @property
    def run_folder(self) -> int:
        return self.responses + self.codes + self.items + self.report

    @property
    def disk(self) -> int:
        """Run folder plus cache growth (the cache may live on another file system:
        runner/preflight.py checks each against its own)."""
        return self.run_folder + self.cache


def estimate_footprint(*, items: int, needed: int, prompt_tokens: float, answer_chars: float,
                       cells: int, cell_id_chars: float, code_rows_per_item: int, metrics: int,
                       answer_basis: str, scored: bool = False, coding_calls: int = 0,
                       coding_tokens: float = 0.0) -> Footprint:
    """Bytes of a run of `items` plan items, `needed` of them still to call, with a mean
    prompt of `prompt_tokens` and a stored answer of `answer_chars` a request (`scored`:
    per-token scores, which item rows do not repeat), and `coding_calls` coding requests of
    `coding_tokens` input and output tokens in all (judges, parsers: cached too)."""
    text = CHARS_PER_TOKEN * prompt_tokens + answer_chars
    responses = items * (RESPONSE_ROW_FIXED + 2 * cell_id_chars + text)
    codes = items * code_rows_per_item * (CODE_ROW_FIXED + cell_id_chars + UNIT_SUFFIX)
    row_text = CHARS_PER_TOKEN * prompt_tokens + (0 if scored else answer_chars)
    item_rows = items * metrics * (ITEM_ROW_FIXED + cell_id_chars + row_text + SUMMARY_ITEM_ROW)
    return Footprint(responses=round(responses), codes=round(codes), items=round(item_rows),
                     report=REPORT_BASE + REPORT_PER_CELL * cells,
                     cache=round(needed * (CACHE_ROW_FIXED + text) + coding_calls * CACHE_ROW_FIXED
                                 + CHARS_PER_TOKEN * coding_tokens), peak_rss=RSS_BASE + RSS_PER_ITEM * items,
                     answer_basis=answer_basis)


def fmt_bytes(n: float) -> str:
    """Decimal units, as `df -H` and file managers show them."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


__all__ = ["Footprint", "estimate_footprint", "fmt_bytes"]
