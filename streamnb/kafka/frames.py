"""Events as pandas DataFrames, for the learners' batch methods (``learn_many``,
``predict_proba_many``) on the opt-in per-poll path."""

from __future__ import annotations

import pandas as pd

__all__ = ["rows_to_frame"]


def rows_to_frame(xs: list[dict]) -> pd.DataFrame:
    """Rows as an object DataFrame; columns in first-seen order, so ``learn_many`` adds
    features in the order ``learn_one`` would, and values keep their Python types.

    >>> rows_to_frame([{"a": 1, "b": "x"}, {"b": "y", "c": True}]).to_dict("list")
    {'a': [1, None], 'b': ['x', 'y'], 'c': [None, True]}
    """
    index = range(len(xs))
    if xs:
        keys = xs[0].keys()
        if all(x.keys() == keys for x in xs):  # dense: every row has the first row's features
            return pd.DataFrame({c: pd.Series([x[c] for x in xs], dtype=object, index=index) for c in keys},
                                index=index)
    names: dict = {}
    for x in xs:
        for k in x:
            names.setdefault(k, None)
    return pd.DataFrame({c: pd.Series([x.get(c) for x in xs], dtype=object) for c in names}, index=index)
