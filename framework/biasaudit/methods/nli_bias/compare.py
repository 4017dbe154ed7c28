"""Token probability versus NLI across subjects (`biasaudit compare`;
docs/methods/nli_bias.md): when runs of the `bias_score` and `nli_bias` metrics cover the same
subjects, the linear fit of each NLI metric on the TP score across subjects (R^2,
Pearson r, Wald p of the slope), the pairwise R^2 matrix of the NLI metrics, and the
mutual-information ranking of one-hot factors for the per-item differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biasaudit.methods.base import CrossRunSection, Runs
from biasaudit.methods.nli_bias.metric import CONDITIONS, RECOMMENDED
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.stats import linear_fit, mutual_information

MI_FACTORS = ("model", "predicate", "predicate_category", "identity", "counterfactual", "name", "template",
              "group", "counter_group", "bias_type", "direction")


def tp_vs_nli_data(runs: Runs) -> dict[str, Any] | None:
    tp: dict[str, float] = {}
    nli: dict[str, dict[str, float]] = {}
    tp_items: list[dict[str, Any]] = []
    nli_items: list[dict[str, Any]] = []
    for _, s in runs:
        subject = s.model.name
        for m in s.metrics.values():
            value = m.estimates[m.headline].value
            if m.name == "bias_score" and subject not in tp and value is not None:
                tp[subject] = value
                tp_items += [{**it, "model": subject} for it in m.items]
            elif m.name == "nli_bias" and subject not in nli:
                nli[subject] = {k: v for k in CONDITIONS if (v := m.estimates[k].value) is not None}
                nli_items += [{**it, "model": subject} for it in m.items]
    subjects = sorted(s for s in set(tp) & set(nli) if len(nli[s]) == len(CONDITIONS))
    if not subjects:
        return None
    x = np.array([tp[s] for s in subjects])
    fits = []
    for k in CONDITIONS:
        f = linear_fit(x, [nli[s][k] for s in subjects])
        fits.append([k + (" *" if k in RECOMMENDED else ""), f.r_squared, f.r, f.p_value, f.slope, f.n, f.note])
    names = list(CONDITIONS)
    matrix: list[list[float | None]] = []
    for a in names:
        row: list[float | None] = []
        for b in names:
            f = linear_fit([nli[s][a] for s in subjects], [nli[s][b] for s in subjects])
            row.append(f.r_squared if f.r_squared is not None else (1.0 if a == b else None))
        matrix.append(row)
    return {
        "subjects": subjects,
        "tp": {s: tp[s] for s in subjects},
        "nli": {s: nli[s] for s in subjects},
        "fits": fits,
        "r2_matrix": {"labels": names, "values": matrix},
        "mi_nli": _mi(nli_items),
        "mi_tp": _mi(tp_items),
        "note": "" if len(subjects) >= 3 else "fewer than 3 subjects: R^2 and p-values need at least 3",
    }


def _mi(items: list[dict[str, Any]], top: int = 10) -> list[list[Any]]:
    if len(items) < 4:
        return []
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
    if t is None:
        return None
    labels = t["r2_matrix"]["labels"]
    tables = [
        Table(title="Scores per subject", columns=["subject", "TP bias score", *labels],
              rows=[[s, t["tp"][s], *[t["nli"][s][k] for k in labels]] for s in t["subjects"]]),
        Table(title="Linear fit of each NLI metric on the TP score",
              columns=["metric", "R²", "Pearson r", "p (slope, Wald t)", "slope", "n", "note"], rows=t["fits"],
              note="* recommended metrics (M6, M9)."),
        Table(title="Mutual information with the per-item difference (NLI: log pE(S) − log pE(S~))",
              columns=["factor", "level", "MI (nats)", "factor MI (nats)"], rows=t["mi_nli"],
              note="sklearn mutual_info_regression on one-hot factors; top 10."),
        Table(title="Mutual information with the per-item difference (TP: score(more) − score(less))",
              columns=["factor", "level", "MI (nats)", "factor MI (nats)"], rows=t["mi_tp"]),
    ]
    plots = [PlotSpec(kind="heatmap", title="Pairwise R² among NLI metrics", labels=labels,
                      matrix=t["r2_matrix"]["values"], ylabel="R²",
                      alt="Heatmap of pairwise R squared between the eleven NLI bias metrics across subjects.")]
    return CrossRunSection(title="Token probability versus NLI across subjects",
                           note=f"Subjects: {', '.join(t['subjects'])}. {t['note']}".strip(),
                           tables=tables, plots=plots, data=t)
