"""The brute-force oracles' one counted probability (pandas over the rows, nothing from a model)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def counted(rows: pd.DataFrame, feature: str, value: Any, parent: str | None, parent_value: Any,
            alpha: float, prior: float, n_values: int) -> float:
    """P(``feature`` = ``value`` | ``parent`` = ``parent_value``) counted in ``rows`` (one class's):
    the Lidstone marginal (``alpha``; ``n_values`` values) without a parent; with one, the
    parent's rows' counts pulled toward that marginal with ``prior`` pseudo-counts, or Lidstone
    counts when ``prior`` is 0."""
    marginal = ((rows[feature] == value).sum() + alpha) / (len(rows) + alpha * n_values)
    if parent is None:
        return float(marginal)
    sub = rows[rows[parent] == parent_value]
    if prior > 0:
        return float(((sub[feature] == value).sum() + prior * marginal) / (len(sub) + prior))
    return float(((sub[feature] == value).sum() + alpha) / (len(sub) + alpha * n_values))
