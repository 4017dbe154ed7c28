"""Token probability versus NLI across subjects (`biasaudit compare`;
docs/methods/nli_bias.md): when runs of the `bias_score` and `nli_bias` metrics cover the same
subjects, the linear fit of each NLI metric on the TP score across subjects (R^2,
Pearson r, Wald p of the slope), the pairwise R^2 matrix of the NLI metrics, and the
mutual-information ranking of one-hot factors for the per-item differences."""

from __future__ import annotations

from typing import Any, NamedTuple, TypedDict

import numpy as np

from biasaudit.methods.base import CrossRunSection, Runs
from biasaudit.methods.nli_bias.metric import CONDITIONS, RECOMMENDED
from biasaudit.methods.nli_bias.report import cross_run_section
from biasaudit.stats import linear_fit, mutual_information

MI_FACTORS = ("model", "predicate", "predicate_category", "identity", "counterfactual", "name", "template",
              "group", "counter_group", "bias_type", "direction")


class R2Matrix(TypedDict):
    labels: list[str]
    values: list[list[float | None]]


class TpVsNli(TypedDict):
    """The numbers of the analysis (compare.json's `data`)."""

    subjects: list[str]
    tp: dict[str, float]
    nli: dict[str, dict[str, float]]
    fits: list[list[Any]]  # per NLI metric: name (* recommended), R^2, r, p of the slope, slope, n, note
    r2_matrix: R2Matrix
    mi_nli: list[list[Any]]
    mi_tp: list[list[Any]]
    note: str


class Collected(NamedTuple):
    """Per subject, the headline of its first `bias_score` run and the M1-M11 of its first
    `nli_bias` run, and their items (with the subject as `model`)."""

    tp: dict[str, float]
    nli: dict[str, dict[str, float]]
    tp_items: list[dict[str, Any]]
    nli_items: list[dict[str, Any]]


def collect(runs: Runs) -> Collected:
    got = Collected({}, {}, [], [])
    for _, s in runs:
        subject = s.model.name
        for m in s.metrics.values():
            value = m.estimates[m.headline].value
            if m.name == "bias_score" and subject not in got.tp and value is not None:
                got.tp[subject] = value
                got.tp_items.extend({**it.model_dump(), "model": subject} for it in m.items)
            elif m.name == "nli_bias" and subject not in got.nli:
                got.nli[subject] = {k: v for k in CONDITIONS if (v := m.estimates[k].value) is not None}
                got.nli_items.extend({**it.model_dump(), "model": subject} for it in m.items)
    return got


def _fits(subjects: list[str], tp: dict[str, float], nli: dict[str, dict[str, float]]) -> list[list[Any]]:
    """The linear fit of each NLI metric on the TP score across subjects."""
    x = np.array([tp[s] for s in subjects])
    fits = []
    for k in CONDITIONS:
        f = linear_fit(x, [nli[s][k] for s in subjects])
        fits.append([k + (" *" if k in RECOMMENDED else ""), f.r_squared, f.r, f.p_value, f.slope, f.n, f.note])
    return fits


def _r2_matrix(subjects: list[str], nli: dict[str, dict[str, float]], names: list[str]) -> list[list[float | None]]:
    """Pairwise R^2 of the NLI metrics across subjects (1 on the diagonal when undefined)."""
    matrix: list[list[float | None]] = []
    for a in names:
        row: list[float | None] = []
        for b in names:
            f = linear_fit([nli[s][a] for s in subjects], [nli[s][b] for s in subjects])
            row.append(f.r_squared if f.r_squared is not None else (1.0 if a == b else None))
        matrix.append(row)
    return matrix


def tp_vs_nli_data(runs: Runs) -> TpVsNli | None:
    got = collect(runs)
    tp, nli = got.tp, got.nli
    subjects = sorted(s for s in set(tp) & set(nli) if len(nli[s]) == len(CONDITIONS))
    if not subjects:
        return None
    names = list(CONDITIONS)
    return {
        "subjects": subjects,
        "tp": {s: tp[s] for s in subjects},
        "nli": {s: nli[s] for s in subjects},
        "fits": _fits(subjects, tp, nli),
        "r2_matrix": {"labels": names, "values": _r2_matrix(subjects, nli, names)},
        "mi_nli": _mi(got.nli_items),
        "mi_tp": _mi(got.tp_items),
        "note": "" if len(subjects) >= 3 else "fewer than 3 subjects: R^2 and p-values need at least 3",
    }


def _mi(items: list[dict[str, Any]], top: int = 10) -> list[list[Any]]:
    if len(items) < 4:
        return []
    import pandas as pd  # on use: only `compare` needs it, and validate should not pay its import

    df = pd.DataFrame(items)
    n = len(df)
    feats: list[str] = []
    for c in MI_FACTORS:
        if c in df.columns and 1 < df[c].nunique() <= max(2, n // 2):
            if not any(df[c].astype(str).equals(df[f].astype(str)) for f in feats):  # same column twice
                feats.append(c)
    if not feats:
        return []
    mi = mutual_information(df[feats], df["diff"].to_numpy(dtype=float))
    return [[r.factor, r.level, float(r.mi), float(r.factor_mi)] for r in mi.head(top).itertuples()]


def tp_vs_nli(runs: Runs) -> CrossRunSection | None:
    t = tp_vs_nli_data(runs)
    return None if t is None else cross_run_section(t)
