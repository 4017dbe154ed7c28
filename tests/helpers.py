"""Shared test helpers: small spec files and data in published formats."""

from __future__ import annotations

import csv
from pathlib import Path

from biasaudit.data.readers import read_csv

REPO = Path(__file__).resolve().parents[1]
CROWS_SAMPLE = REPO / "specs" / "data" / "crows_pairs_sample.csv"


def write_crows_subset(path: Path, n: int) -> Path:
    """The first n rows of the shipped sample, in the exact published csv layout."""
    header, rows = read_csv(CROWS_SAMPLE)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows[:n]:
            w.writerow([r[h] for h in header])
    return path


def write_spec(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


TP_SPEC = """
audit: {{name: {name}, method: token_probability}}
stimuli: {{source: {source}, format: crows_pairs}}
probe:
  kind: sequence_logprob
  inputs: {{more: "{{{{ more }}}}", less: "{{{{ less }}}}"}}
metrics:
  - {{name: bias_score, mode: ar_full}}
thresholds:
  - {{metric: bias_score, min: 40, max: 60}}
"""


def tp_spec(folder: Path, n: int = 10, name: str = "tp-test") -> Path:
    data = write_crows_subset(folder / "pairs.csv", n)
    return write_spec(folder / f"{name}.yaml", TP_SPEC.format(name=name, source=data.name))
