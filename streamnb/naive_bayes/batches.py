"""Batches: a DataFrame or a sparse matrix of events, their labels and weights, and the array
helpers the parts learn and score batches with.

The helpers import pandas and scipy when called, as their input comes from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.checks import MAX_ABS, is_missing, short_repr

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "check_frame_arg",
    "batch_labels",
    "batch_weights",
    "SparseBatch",
    "is_sparse_frame",
    "frame_values",
    "present",
    "first_seen",
    "first_seen_sparse",
    "log_dot",
    "drop_impossible",
    "class_sums",
]


def check_frame_arg(X: object) -> None:
    """Raise :class:`InvalidEventError` unless ``X`` is a pandas DataFrame (a batch) or a
    :class:`SparseBatch`."""
    import pandas as pd

    if not isinstance(X, (pd.DataFrame, SparseBatch)):
        raise InvalidEventError(f"expected a pandas DataFrame of events, got {type(X).__name__} {short_repr(X)}")
    if isinstance(X, pd.DataFrame) and not X.columns.is_unique:  # an event has one value per feature
        repeated = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
        raise InvalidEventError(f"the column names repeat: {short_repr(repeated)} (one column per feature)")


def batch_labels(y: Any, n: int) -> pd.Series:
    """The labels of a batch of ``n`` rows as a Series (``y`` a Series, or a sequence of one
    label per row); raise :class:`InvalidEventError` otherwise. The labels themselves are
    checked by :func:`check_labels`."""
    import pandas as pd

    if isinstance(y, pd.Series):
        series = y
    elif y is None or isinstance(y, (str, bytes, Mapping, pd.DataFrame)) or not hasattr(y, "__len__"):
        raise InvalidEventError(f"expected the batch's labels, one per row (a pandas Series or a sequence), "
                                f"got {type(y).__name__} {short_repr(y)}")
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
        raise InvalidEventError(f"expected numbers as weights, got {type(w).__name__} {short_repr(w)}") from exc
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    elif weights.shape != (n,):
        raise InvalidEventError(f"expected one weight per row ({n}), got an array of shape {weights.shape}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise InvalidEventError("weights must be finite and non-negative")
    return weights


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
    objects = False
    for col, dtype in zip(X.columns.tolist(), X.dtypes.tolist()):
        if dtype.kind in "OSU" or isinstance(dtype, pd.StringDtype):
            objects = True
            for v in X[col]:
                if not is_missing(v) and not (isinstance(v, (Real, np.number)) and not isinstance(v, complex)):
                    raise InvalidEventError(f"expected a number, got {type(v).__name__} {short_repr(v)}", col)
    if objects:  # a missing value of any kind (None, pd.NA, NaT) as NaN: numpy casts none but NaN
        X = X.where(X.notna(), np.nan)
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
    :func:`~streamnb.naive_bayes.posterior.sum_features` does one event at a time.
    """
    dead = np.isneginf(log_p).all(axis=0) if log_p.shape[0] else np.zeros(log_p.shape[1], dtype=bool)
    return np.where(dead, 0.0, log_p) if dead.any() else log_p


def class_sums(k: np.ndarray, w: np.ndarray, M: np.ndarray, n_classes: int) -> np.ndarray:
    """``[classes, cols]`` sums of the rows of ``M`` weighted by ``w``, grouped by class ``k``."""
    Y = np.zeros((len(k), n_classes))
    Y[np.arange(len(k)), k] = w
    return Y.T @ M
