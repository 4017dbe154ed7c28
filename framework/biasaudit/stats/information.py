"""Mutual information of categorical features with a numeric target (sklearn)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def mutual_information(features: pd.DataFrame, target: np.ndarray | list[float], *, seed: int = 0) -> pd.DataFrame:
    """MI (nats) of each one-hot column of the categorical `features` with `target`,
    via sklearn's mutual_info_regression with discrete features. Returns rows
    (factor, level, mi) sorted by mi, highest first; `factor_mi` sums a factor's levels."""
    # imported on use: commands that never compute MI (validate, plan) skip a second of imports
    import pandas as pd
    from sklearn.feature_selection import mutual_info_regression

    y = np.asarray(target, dtype=np.float64)
    if len(features) != y.size:
        raise ValueError("features and target differ in length")
    onehot = pd.get_dummies(features.astype(str), prefix_sep="=", dtype=float)
    if onehot.shape[1] == 0 or y.size < 4:
        return pd.DataFrame(columns=["factor", "level", "mi", "factor_mi"])
    mi = mutual_info_regression(onehot.to_numpy(), y, discrete_features=True, random_state=seed)
    rows = []
    for col, v in zip(onehot.columns, mi, strict=True):
        factor, _, level = col.partition("=")
        rows.append({"factor": factor, "level": level, "mi": float(v)})
    out = pd.DataFrame(rows)
    out["factor_mi"] = out.groupby("factor")["mi"].transform("sum")
    return out.sort_values(["mi", "factor", "level"], ascending=[False, True, True]).reset_index(drop=True)
