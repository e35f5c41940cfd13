"""Checking one event: features and values, labels and weights, missing values.

Checking one event imports neither pandas nor scipy (a spam verdict in a fresh process does
not pay for them); :func:`check_labels`, for a batch, imports pandas when called.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from streamnb.exceptions import InvalidEventError
from streamnb.stats.index import is_saveable_key

__all__ = [
    "MAX_ABS",
    "PLAIN_KEYS",
    "PLAIN_LABELS",
    "check_event",
    "is_missing",
    "short_repr",
    "numeric_items",
    "check_hashable",
    "check_feature_name",
    "check_label",
    "check_labels",
    "check_weight",
]

#: Largest magnitude a numeric value may have: squared deviations must not overflow.
MAX_ABS = 1e100


_FAST_TYPES = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


_FLOAT = frozenset({float})


def check_event(x: object) -> None:
    """Raise :class:`InvalidEventError` unless ``x`` is a mapping of features to values.

    >>> check_event("free money")
    Traceback (most recent call last):
    ...
    streamnb.exceptions.InvalidEventError: expected a dict of features to values, got str 'free money'
    """
    if type(x) is not dict and not isinstance(x, Mapping):
        raise InvalidEventError(f"expected a dict of features to values, got {type(x).__name__} {short_repr(x)}")


def is_missing(value: object) -> bool:
    """None, NaN and ``pd.NA`` are missing values; nothing else is.

    >>> import pandas as pd
    >>> [is_missing(v) for v in (None, float("nan"), 0.0, "", pd.NA)]
    [True, True, False, False, True]
    """
    return (
        value is None
        or _is_pandas_na(value)
        or (isinstance(value, (float, np.floating)) and value != value)
    )


def _is_pandas_na(value: object) -> bool:
    """Whether ``value`` is ``pd.NA``, without importing pandas: if pandas was never imported,
    no value can be its NA."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and value is getattr(pandas, "NA", None)


def short_repr(value: object) -> str:
    """``repr(value)``, cut to 40 characters (for error messages)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def numeric_items(x: Mapping, nonnegative: bool = False) -> tuple[list, list]:
    """Features and float values of ``x`` (two lists); missing values dropped; anything else
    not a number (or not finite, or beyond :data:`MAX_ABS`) raises :class:`InvalidEventError`.

    >>> numeric_items({"a": 1, "b": None, "c": 2.5, "d": True})
    (['a', 'c', 'd'], [1.0, 2.5, 1.0])
    """
    values = list(x.values())
    if not set(map(type, x)) <= PLAIN_KEYS:
        for f in x:
            check_feature_name(f)
    # sum |v| is NaN or inf if any value is, and bounds every |v|: one test for all three
    types = set(map(type, values))
    if types <= _FAST_TYPES:
        try:  # numpy scalars as Python floats first: numpy's arithmetic would warn on overflow
            floats = values if types <= _FLOAT else [float(v) for v in values]
            fine = sum(map(abs, floats)) <= MAX_ABS
        except OverflowError:  # an int beyond float range
            fine = False
        if fine and (not nonnegative or not floats or min(floats) >= 0):
            return list(x), floats
    return _numeric_items_slow(x, nonnegative)


def _numeric_items_slow(x: Mapping, nonnegative: bool) -> tuple[list, list]:
    keys, vals = [], []
    for f, xi in x.items():
        if is_missing(xi):
            continue
        if not isinstance(xi, (Real, np.number)) or isinstance(xi, (complex, np.complexfloating)):
            raise InvalidEventError(f"expected a number, got {type(xi).__name__} {short_repr(xi)}", f)
        try:
            v = float(xi)
        except OverflowError as exc:
            raise InvalidEventError(f"value {short_repr(xi)} is beyond {MAX_ABS:g}", f) from exc
        if not abs(v) <= MAX_ABS:
            raise InvalidEventError(f"value {v} is not finite or beyond {MAX_ABS:g}", f)
        if nonnegative and v < 0:
            raise InvalidEventError(f"value {v} is negative", f)
        keys.append(f)
        vals.append(v)
    return keys, vals


def check_hashable(value: Any, feature: object) -> None:
    """Raise :class:`InvalidEventError` unless the category ``value`` and the feature name can be
    keys of a saved model (hashable, of a type :func:`~streamnb.stats.index.encode_key` stores)."""
    try:
        hash(value)
    except TypeError as exc:
        raise InvalidEventError(f"a category must be hashable, got {type(value).__name__}", feature) from exc
    if type(value) not in PLAIN_KEYS and not is_saveable_key(value):
        raise InvalidEventError(f"a category of type {type(value).__name__} cannot be saved", feature)
    check_feature_name(feature)


#: Feature name types that are always saveable (no check beyond their type).
PLAIN_KEYS = frozenset({str, int, float, bool})


def check_feature_name(feature: Any) -> None:
    """Raise :class:`InvalidEventError` for a feature name a saved model could not store."""
    if type(feature) not in PLAIN_KEYS and not is_saveable_key(feature):
        raise InvalidEventError(f"a feature name of type {type(feature).__name__} cannot be saved", feature)


#: Label types that need no check beyond their type.
PLAIN_LABELS = frozenset({str, int, bool})


def check_label(y: object) -> None:
    """Raise :class:`InvalidEventError` for a missing (None, NaN, NA) or unhashable label."""
    try:
        missing = y is None or _is_pandas_na(y) or bool(y != y)
    except (TypeError, ValueError):
        missing = True
    if missing:
        raise InvalidEventError("the label is missing (None or NaN)")
    try:
        hash(y)
    except TypeError as exc:
        raise InvalidEventError(f"a label of type {type(y).__name__} is not hashable") from exc
    if not is_saveable_key(y):
        raise InvalidEventError(f"a label of type {type(y).__name__} cannot be saved")


def check_labels(y: Any) -> list:
    """The labels of a batch as a list, each checked as :func:`check_label` does."""
    import pandas as pd

    series = y if isinstance(y, pd.Series) else pd.Series(list(y), dtype=object)
    if series.isna().any():
        raise InvalidEventError("a label is missing (None or NaN)")
    labels = series.tolist()
    if series.dtype == object:
        for label in labels:
            check_label(label)
    return labels


def check_weight(w: Any) -> float:
    """The weight as a float; raise :class:`InvalidEventError` unless finite and >= 0."""
    try:
        w = float(w)
    except (TypeError, ValueError) as exc:
        raise InvalidEventError(f"the weight {w!r} is not a number") from exc
    if not (math.isfinite(w) and w >= 0.0):
        raise InvalidEventError(f"the weight must be finite and non-negative, got {w}")
    return w
