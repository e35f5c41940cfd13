"""Reading events: strict value checks, missing values, batch helpers shared by the parts.

Checking one event imports neither pandas nor scipy (a spam verdict in a fresh process does
not pay for them); the batch helpers import them when called, as their input comes from them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from streamnb.exceptions import InvalidEventError
from streamnb.stats.index import is_saveable_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_ABS",
    "check_event",
    "check_frame_arg",
    "batch_labels",
    "batch_weights",
    "is_missing",
    "numeric_items",
    "frame_values",
    "first_seen",
    "present",
    "first_seen_sparse",
    "is_sparse_frame",
    "SparseBatch",
    "log_dot",
    "drop_impossible",
    "class_sums",
    "category_cells",
    "cell_key",
    "cell_index",
    "factorize",
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
        raise InvalidEventError(f"expected a dict of features to values, got {type(x).__name__} {_short(x)}")


def check_frame_arg(X: object) -> None:
    """Raise :class:`InvalidEventError` unless ``X`` is a pandas DataFrame (a batch) or a
    :class:`SparseBatch`."""
    import pandas as pd

    if not isinstance(X, (pd.DataFrame, SparseBatch)):
        raise InvalidEventError(f"expected a pandas DataFrame of events, got {type(X).__name__} {_short(X)}")
    if isinstance(X, pd.DataFrame) and not X.columns.is_unique:  # an event has one value per feature
        repeated = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
        raise InvalidEventError(f"the column names repeat: {_short(repeated)} (one column per feature)")


def batch_labels(y: Any, n: int) -> pd.Series:
    """The labels of a batch of ``n`` rows as a Series (``y`` a Series, or a sequence of one
    label per row); raise :class:`InvalidEventError` otherwise. The labels themselves are
    checked by :func:`check_labels`."""
    import pandas as pd

    if isinstance(y, pd.Series):
        series = y
    elif y is None or isinstance(y, (str, bytes, Mapping, pd.DataFrame)) or not hasattr(y, "__len__"):
        raise InvalidEventError(f"expected the batch's labels, one per row (a pandas Series or a sequence), "
                                f"got {type(y).__name__} {_short(y)}")
    else:
        series = pd.Series(list(y), dtype=object)
    if len(series) != n:
        raise InvalidEventError(f"X has {n} rows but y has {len(series)}")
    return series


def batch_weights(w: Any, n: int) -> np.ndarray:
    """The weights of a batch of ``n`` rows as a new float array: ``w`` a number (every row's)
    or a sequence of ``n`` numbers, each finite and non-negative; raise
    :class:`InvalidEventError` otherwise.

    >>> batch_weights(2, 3).tolist(), batch_weights([1, 0.5], 2).tolist()
    ([2.0, 2.0, 2.0], [1.0, 0.5])
    """
    try:
        weights = np.array(w, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidEventError(f"expected numbers as weights, got {type(w).__name__} {_short(w)}") from exc
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    elif weights.shape != (n,):
        raise InvalidEventError(f"expected one weight per row ({n}), got an array of shape {weights.shape}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise InvalidEventError("weights must be finite and non-negative")
    return weights


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


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def numeric_items(x: Mapping, nonnegative: bool = False) -> tuple[list, list]:
    """Features and float values of ``x`` (two lists); missing values dropped; anything else
    not a number (or not finite, or beyond :data:`MAX_ABS`) raises :class:`InvalidEventError`.

    >>> numeric_items({"a": 1, "b": None, "c": 2.5, "d": True})
    (['a', 'c', 'd'], [1.0, 2.5, 1.0])
    """
    values = list(x.values())
    if not set(map(type, x)) <= _PLAIN_KEYS:
        for f in x:
            check_feature_name(f)
    # sum |v| is NaN or inf if any value is, and bounds every |v|: one test for all three
    types = set(map(type, values))
    if types <= _FAST_TYPES:
        try:
            fine = float(sum(map(abs, values))) <= MAX_ABS
        except OverflowError:  # an int beyond float range
            fine = False
        if fine and (not nonnegative or not values or min(values) >= 0):
            return list(x), values if types <= _FLOAT else [float(v) for v in values]
    return _numeric_items_slow(x, nonnegative)


def _numeric_items_slow(x: Mapping, nonnegative: bool) -> tuple[list, list]:
    keys, vals = [], []
    for f, xi in x.items():
        if is_missing(xi):
            continue
        if not isinstance(xi, (Real, np.number)) or isinstance(xi, (complex, np.complexfloating)):
            raise InvalidEventError(f"expected a number, got {type(xi).__name__} {_short(xi)}", f)
        try:
            v = float(xi)
        except OverflowError as exc:
            raise InvalidEventError(f"value {_short(xi)} is beyond {MAX_ABS:g}", f) from exc
        if not abs(v) <= MAX_ABS:
            raise InvalidEventError(f"value {v} is not finite or beyond {MAX_ABS:g}", f)
        if nonnegative and v < 0:
            raise InvalidEventError(f"value {v} is negative", f)
        keys.append(f)
        vals.append(v)
    return keys, vals


class SparseBatch:
    """A batch of token counts as a scipy sparse matrix with its vocabulary (column names),
    for the token learners' ``learn_many`` / ``predict_proba_many`` (``columns=...``): rows
    are events, never densified.

    It offers the little of a DataFrame the learners use: ``columns``, ``index``, ``len``,
    row selection (``batch[mask]``, ``batch.iloc[a:b]``).
    """

    def __init__(self, matrix: Any, columns: Any, index: Any = None) -> None:
        import pandas as pd
        import scipy.sparse

        if not scipy.sparse.issparse(matrix) or matrix.ndim != 2:
            raise InvalidEventError(f"expected a 2-d scipy.sparse matrix, got {type(matrix).__name__}")
        self.matrix = matrix.tocsr()
        self.columns = columns if isinstance(columns, list) else list(columns)
        if len(self.columns) != self.matrix.shape[1]:
            raise InvalidEventError(f"{self.matrix.shape[1]} matrix columns but {len(self.columns)} column names")
        if not (SparseBatch._distinct is self.columns or SparseBatch._distinct == self.columns):
            if len(set(self.columns)) != len(self.columns):
                raise InvalidEventError("the column names (vocabulary) repeat a token")
            SparseBatch._distinct = list(self.columns)  # checked once for the batches that follow
        self.index = pd.RangeIndex(self.matrix.shape[0]) if index is None else index

    #: The last vocabulary found to have no repeated name.
    _distinct: list | None = None

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def __getitem__(self, rows: Any) -> SparseBatch:
        return SparseBatch(self.matrix[rows], self.columns, self.index[rows])

    @property
    def iloc(self) -> SparseBatch:
        return self


def is_sparse_frame(X: Any) -> bool:
    """Every column of ``X`` is a pandas sparse column (as River's BagOfWords many-path gives),
    or ``X`` is a :class:`SparseBatch`."""
    import pandas as pd

    if isinstance(X, SparseBatch):
        return True
    return len(X.columns) > 0 and all(isinstance(d, pd.SparseDtype) for d in X.dtypes)


def frame_values(X: pd.DataFrame, nonnegative: bool = False, sparse: bool = False) -> Any:
    """A float matrix of ``X``, NaN where missing; raise naming the first bad column.

    With ``sparse``, a frame of sparse columns comes back as a scipy CSR matrix whose absent
    entries are zeros (not missing values).
    """
    import pandas as pd

    if isinstance(X, SparseBatch) and not sparse:
        X = pd.DataFrame(X.matrix.toarray(), columns=X.columns, index=X.index)
    if sparse and is_sparse_frame(X):
        m = X.matrix.astype(float, copy=False) if isinstance(X, SparseBatch) else X.sparse.to_coo().tocsr().astype(float)
        d = m.data
        bad = ~(np.abs(d) <= MAX_ABS) | ((d < 0) if nonnegative else False)
        if bad.any():
            col = X.columns[m.indices[np.flatnonzero(bad)[0]]]
            raise InvalidEventError(f"value {d[bad][0]} is not allowed here", col)
        return m
    for col, dtype in zip(X.columns.tolist(), X.dtypes.tolist()):
        if dtype.kind in "OSU" or isinstance(dtype, pd.StringDtype):
            for v in X[col]:
                if not is_missing(v) and not (isinstance(v, (Real, np.number)) and not isinstance(v, complex)):
                    raise InvalidEventError(f"expected a number, got {type(v).__name__} {_short(v)}", col)
    try:
        v = X.to_numpy(dtype=float, na_value=np.nan)
    except OverflowError as exc:  # an int beyond float range in an object column
        raise InvalidEventError(f"a value is beyond {MAX_ABS:g}") from exc
    if not v.size:
        return v
    top = np.abs(v).max()  # NaN if anything is missing: then look closer
    if top <= MAX_ABS and (not nonnegative or v.min() >= 0):
        return v
    bad = (~(np.abs(v) <= MAX_ABS) | ((v < 0) if nonnegative else False)) & (v == v)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InvalidEventError(f"value {v[r, c]} is not allowed here", X.columns[c])
    return v


def present(X: Any) -> np.ndarray:
    """Where a batch holds a value, ``[rows, cols]``: not missing in a dense frame; a stored
    entry of a sparse one (what learning it registers)."""
    if is_sparse_frame(X):
        m = frame_values(X, sparse=True).copy()
        m.data[:] = 1.0
        return m.toarray() > 0
    v = frame_values(X)
    return v == v


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


def first_seen_sparse(m: Any, among: np.ndarray | None = None) -> np.ndarray:
    """:func:`first_seen` for a scipy sparse matrix: its stored entries are the present ones
    (``among``: of these columns only).

    >>> import scipy.sparse
    >>> m = scipy.sparse.csr_matrix(np.array([[0, 0, 1], [1, 1, 1]]))
    >>> first_seen_sparse(m).tolist(), first_seen_sparse(m, among=np.array([0, 1])).tolist()
    ([2, 0, 1], [0, 1])
    """
    m = m.tocsr()
    if not m.has_sorted_indices:
        m = m.sorted_indices()
    cols = m.indices  # row by row, each row's columns in order: the order a reader meets them
    if among is not None:
        wanted = np.zeros(m.shape[1], dtype=bool)
        wanted[among] = True
        cols = cols[wanted[cols]]
    first = np.full(m.shape[1], len(cols))  # each column's first position (no sort of cols)
    np.minimum.at(first, cols, np.arange(len(cols)))
    seen = np.flatnonzero(first < len(cols))
    return seen[np.argsort(first[seen], kind="stable")]


def log_dot(A: np.ndarray, log_p: np.ndarray, impossible: bool | None = None) -> np.ndarray:
    """``A @ log_p.T`` where ``0 * -inf`` is 0 (an absent term) and ``a * -inf`` is ``-inf``;
    ``impossible``: whether ``log_p`` has any ``-inf``, if the caller knows."""
    if impossible is False:
        return np.asarray(A @ log_p.T)
    neg = np.isneginf(log_p)
    if not neg.any():
        return np.asarray(A @ log_p.T)
    out = np.asarray(A @ np.where(neg, 0.0, log_p).T)
    out[np.asarray((A != 0).astype(float) @ neg.T.astype(float)) > 0] = -np.inf
    return out


def drop_impossible(log_p: np.ndarray) -> np.ndarray:
    """Zero the columns (features) of ``[classes, features]`` that are ``-inf`` for every class.

    Such a feature rules out every class, so it cannot tell them apart and is dropped, as
    :func:`~streamnb.naive_bayes.base.sum_features` does one event at a time.
    """
    dead = np.isneginf(log_p).all(axis=0) if log_p.shape[0] else np.zeros(log_p.shape[1], dtype=bool)
    return np.where(dead, 0.0, log_p) if dead.any() else log_p


def class_sums(k: np.ndarray, w: np.ndarray, M: np.ndarray, n_classes: int) -> np.ndarray:
    """``[classes, cols]`` sums of the rows of ``M`` weighted by ``w``, grouped by class ``k``."""
    Y = np.zeros((len(k), n_classes))
    Y[np.arange(len(k)), k] = w
    return Y.T @ M


def check_hashable(value: Any, feature: object) -> None:
    """Raise :class:`InvalidEventError` unless the category ``value`` and the feature name can be
    keys of a saved model (hashable, of a type :func:`~streamnb.stats.index.encode_key` stores)."""
    try:
        hash(value)
    except TypeError as exc:
        raise InvalidEventError(f"a category must be hashable, got {type(value).__name__}", feature) from exc
    if type(value) not in _PLAIN_KEYS and not is_saveable_key(value):
        raise InvalidEventError(f"a category of type {type(value).__name__} cannot be saved", feature)
    check_feature_name(feature)


_PLAIN_KEYS = frozenset({str, int, float, bool})


def check_feature_name(feature: Any) -> None:
    """Raise :class:`InvalidEventError` for a feature name a saved model could not store."""
    if type(feature) not in _PLAIN_KEYS and not is_saveable_key(feature):
        raise InvalidEventError(f"a feature name of type {type(feature).__name__} cannot be saved", feature)


#: Third element of the cell key of a boolean category (see :func:`cell_key`).
BOOL = "bool"


def cell_key(feature: Any, value: Any) -> tuple:
    """The key of category ``value`` of ``feature``: ``(feature, value)``, except that a
    boolean is kept apart from the number equal to it (``True == 1`` in Python) by a third
    element, so a category keeps the value as given.

    >>> cell_key("flag", True), cell_key("n", 1), cell_key("flag", True) == cell_key("flag", 1)
    (('flag', True, 'bool'), ('n', 1), False)
    """
    if type(value) is bool or isinstance(value, np.bool_):
        return (feature, bool(value), BOOL)
    return (feature, value)


def category_cells(x: Mapping) -> tuple[list, list]:
    """Observed features of ``x`` and their category cells (:func:`cell_key`); missing values
    skipped, categories checked (:func:`check_hashable`).

    >>> category_cells({"sky": "sun", "wind": None, "n": 3, "on": True})
    (['sky', 'n', 'on'], [('sky', 'sun'), ('n', 3), ('on', True, 'bool')])
    """
    feats, cells = [], []
    for f, v in x.items():
        t = type(v)
        if (t is not str and t is not int) or type(f) not in _PLAIN_KEYS:  # the rare cases
            if is_missing(v):
                continue
            check_hashable(v, f)
            feats.append(f)
            cells.append(cell_key(f, v))
            continue
        feats.append(f)
        cells.append((f, v))
    return feats, cells


def cell_index(cells: list) -> pd.MultiIndex | None:
    """A ``(feature, value)`` MultiIndex of cells that keeps ``True`` apart from ``1`` (pandas
    would merge them in one level)."""
    import pandas as pd

    if not cells:
        return None
    features: list = []
    values: list = []
    codes_f: list = []
    codes_v: list = []
    fpos: dict = {}
    vpos: dict = {}
    for c in cells:
        f, v = c[0], c[1]
        vk = (v, len(c) > 2)  # a boolean is its own value
        if f not in fpos:
            fpos[f] = len(features)
            features.append(f)
        if vk not in vpos:
            vpos[vk] = len(values)
            values.append(v)
        codes_f.append(fpos[f])
        codes_v.append(vpos[vk])
    return pd.MultiIndex(
        levels=[pd.Index(features, dtype=object), pd.Index(values, dtype=object)],
        codes=[codes_f, codes_v],
        names=["feature", "value"],
        verify_integrity=False,
    )


#: Category types that are never missing and always saveable.
_PLAIN_CATEGORIES = frozenset({str, int, bool})


class _Flag:
    """A boolean category as a key that no number equals (for :func:`factorize`)."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Flag) and other.value == self.value

    def __hash__(self) -> int:
        return hash((_Flag, self.value))


#: The boolean types kept apart from numbers by :func:`factorize` (numpy's has no subclass).
_BOOLS = frozenset((bool, np.bool_))


def factorize(col: pd.Series, feature: object) -> tuple[np.ndarray, list]:
    """Codes (-1 where missing) and unique values (plain Python) of a column of categories;
    unhashable values raise :class:`InvalidEventError` naming the feature. Booleans stay apart
    from numbers equal to them, as in :func:`cell_key`.

    >>> import pandas as pd
    >>> codes, uniques = factorize(pd.Series(["b", None, "a", "b"]), "f")
    >>> codes.tolist(), uniques
    ([0, -1, 1, 0], ['b', 'a'])
    >>> factorize(pd.Series([1, True, 1.0, False, 0], dtype=object), "f")[1]
    [1, True, False, 0]
    """
    import pandas as pd

    if col.dtype == object and not _BOOLS.isdisjoint(map(type, col.to_numpy())):  # in C
        col = col.map(lambda v: _Flag(bool(v)) if type(v) is bool or isinstance(v, np.bool_) else v)
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError as exc:
        raise InvalidEventError("categories must be hashable", feature) from exc
    values = list(uniques.tolist() if hasattr(uniques, "tolist") else uniques)
    return codes, [v.value if isinstance(v, _Flag) else v for v in values]


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
