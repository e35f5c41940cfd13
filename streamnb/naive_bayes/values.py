"""Reading events: strict value checks, missing values, batch helpers shared by the parts."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from streamnb.exceptions import InvalidEventError

__all__ = [
    "MAX_ABS",
    "is_missing",
    "numeric_items",
    "frame_values",
    "first_seen",
    "log_dot",
    "drop_impossible",
    "class_sums",
]

#: Largest magnitude a numeric value may have: squared deviations must not overflow.
MAX_ABS = 1e100

_FAST_TYPES = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


def is_missing(value: object) -> bool:
    """None, NaN and ``pd.NA`` are missing values; nothing else is.

    >>> [is_missing(v) for v in (None, float("nan"), 0.0, "", pd.NA)]
    [True, True, False, False, True]
    """
    return (
        value is None
        or value is pd.NA
        or (isinstance(value, (float, np.floating)) and value != value)
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def numeric_items(x: Mapping, nonnegative: bool = False) -> tuple[list, np.ndarray]:
    """Features and float values of ``x``; missing values dropped; anything else not a number
    (or not finite, or beyond :data:`MAX_ABS`) raises :class:`InvalidEventError`.

    >>> numeric_items({"a": 1, "b": None, "c": 2.5, "d": True})
    (['a', 'c', 'd'], array([1. , 2.5, 1. ]))
    """
    keys = list(x)
    values = x.values()
    if set(map(type, values)) <= _FAST_TYPES:
        v = np.fromiter(values, dtype=float, count=len(keys))
    else:
        v = np.empty(len(keys))
        for i, (f, xi) in enumerate(x.items()):
            if is_missing(xi):
                v[i] = np.nan
            elif isinstance(xi, (Real, np.number)) and not isinstance(xi, complex):
                v[i] = float(xi)
            else:
                raise InvalidEventError(f"expected a number, got {type(xi).__name__} {_short(xi)}", f)
    ok = v == v
    if not ok.all():
        keys = [f for f, good in zip(keys, ok) if good]
        v = v[ok]
    bad = ~(np.abs(v) <= MAX_ABS) | ((v < 0) if nonnegative else False)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        what = "negative" if v[i] < 0 and abs(v[i]) <= MAX_ABS else f"not finite or beyond {MAX_ABS:g}"
        raise InvalidEventError(f"value {v[i]} is {what}", keys[i])
    return keys, v


def frame_values(X: pd.DataFrame, nonnegative: bool = False) -> np.ndarray:
    """A float matrix of ``X``, NaN where missing; raise naming the first bad column."""
    for col in X.columns:
        s = X[col]
        if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            for v in s:
                if not is_missing(v) and not (isinstance(v, (Real, np.number)) and not isinstance(v, complex)):
                    raise InvalidEventError(f"expected a number, got {type(v).__name__} {_short(v)}", col)
    v = X.to_numpy(dtype=float, na_value=np.nan)
    bad = (~(np.abs(v) <= MAX_ABS) | ((v < 0) if nonnegative else False)) & (v == v)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InvalidEventError(f"value {v[r, c]} is not allowed here", X.columns[c])
    return v


def first_seen(present: np.ndarray) -> np.ndarray:
    """Columns of a boolean ``[rows, cols]`` matrix that have a True, in the order a row-by-row
    reader meets them (by first row, then column): batches then add keys to an index in the
    same order as one-by-one learning.

    >>> first_seen(np.array([[0, 0, 1], [1, 0, 1]], dtype=bool)).tolist()
    [2, 0]
    """
    cols = np.flatnonzero(present.any(axis=0))
    first = present[:, cols].argmax(axis=0)
    return cols[np.lexsort((cols, first))]


def log_dot(A: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """``A @ log_p.T`` where ``0 * -inf`` is 0 (an absent term) and ``a * -inf`` is ``-inf``."""
    neg = np.isneginf(log_p)
    if not neg.any():
        return A @ log_p.T
    out = A @ np.where(neg, 0.0, log_p).T
    out[(A != 0) @ neg.T] = -np.inf
    return out


def drop_impossible(log_p: np.ndarray) -> np.ndarray:
    """Zero the columns (features) of ``[classes, features]`` that are ``-inf`` for every class.

    Such a feature rules out every class, so it cannot tell them apart and is dropped, as
    :func:`~streamnb.naive_bayes.base.clean_features` does one event at a time.
    """
    dead = np.isneginf(log_p).all(axis=0) if log_p.shape[0] else np.zeros(log_p.shape[1], dtype=bool)
    return np.where(dead, 0.0, log_p) if dead.any() else log_p


def class_sums(k: np.ndarray, w: np.ndarray, M: np.ndarray, n_classes: int) -> np.ndarray:
    """``[classes, cols]`` sums of the rows of ``M`` weighted by ``w``, grouped by class ``k``."""
    Y = np.zeros((len(k), n_classes))
    Y[np.arange(len(k)), k] = w
    return Y.T @ M


def check_hashable(value: Any, feature: object) -> None:
    try:
        hash(value)
    except TypeError as exc:
        raise InvalidEventError(f"a category must be hashable, got {type(value).__name__}", feature) from exc
