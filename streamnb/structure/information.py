"""Mutual information and conditional mutual information of every feature pair, in nats.

All functions are pure and vectorized over the pair counts of
:class:`~streamnb.stats.pairwise.PairCounts`: ``n[y, a, b]`` over (class, cell, cell) with
``cell_feature[a]`` the feature of cell ``a``. For features ``i != j`` the block of their
cells is their joint table given the class, over the events in which both were observed, so
each pair's estimate uses its own co-observed events (pairwise deletion of missing values).

The estimates are *plug-in* (maximum likelihood) by default:

``I(Xi; Xj | Y) = sum_{u,v,y} p(u,v,y) log[ p(u,v,y) p(y) / (p(u,y) p(v,y)) ]``

computed as ``(1/N) [S(n) + S(n_y) - S(n_uy) - S(n_vy)]`` with ``S(t) = sum t log t`` over
the cells of a table, so all ``F**2`` pairs cost ``O(C K**2)`` numpy work. With ``alpha > 0``
every cell of a pair's table (``|X_i| |X_j| C`` cells over the values seen) gets ``alpha``
pseudo-counts before the plug-in formula: the MI of a Dirichlet-smoothed joint, which shrinks
the weights of pairs seen in few events toward 0. The diagonal (``i == j``) is set to 0.

>>> import numpy as np
>>> n = np.zeros((1, 4, 4))                       # two binary features, perfectly copied
>>> for a, b in [(0, 2), (1, 3)]:
...     n[0, a, a] = n[0, b, b] = n[0, a, b] = n[0, b, a] = 5.0
>>> cf = np.array([0, 0, 1, 1])
>>> round(float(mutual_information(n, cf)[0, 1]), 12) == round(float(np.log(2)), 12)
True
>>> float(conditional_mutual_information(n, cf)[0, 1]) == float(mutual_information(n, cf)[0, 1])
True
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "mutual_information", "conditional_mutual_information", "class_mutual_information",
    "class_mutual_information_diag", "xlogx",
]


def xlogx(t: np.ndarray) -> np.ndarray:
    """``t log t`` with ``0 log 0 = 0``."""
    t = np.asarray(t, dtype=float)
    out = np.zeros(t.shape)
    np.log(t, out=out, where=t > 0)  # the same numbers as t * log(t), without temporaries
    out *= t
    return out


def _grouped(n: np.ndarray, cell_feature: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Cells sorted by feature (stable) and the start of each feature's run."""
    cell_feature = np.asarray(cell_feature, dtype=np.intp)
    order = np.argsort(cell_feature, kind="stable")
    f_sorted = cell_feature[order]
    n_features = int(f_sorted[-1]) + 1 if len(f_sorted) else 0
    if len(f_sorted) and not np.array_equal(np.unique(f_sorted), np.arange(n_features)):
        raise ValueError("cell_feature must use every feature id 0..F-1")
    starts = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1]]) if len(f_sorted) else np.empty(0, int)
    return order, starts, n_features


def _smoothed(n: np.ndarray, cell_feature: np.ndarray, alpha: float) -> np.ndarray:
    if alpha <= 0:
        return n
    other = cell_feature[:, None] != cell_feature[None, :]
    return n + alpha * other[None, :, :]


def conditional_mutual_information(
    n: np.ndarray, cell_feature: np.ndarray, alpha: float = 0.0
) -> np.ndarray:
    """``I(Xi; Xj | Y)`` for all feature pairs, a symmetric ``[F, F]`` array (nats).

    Parameters
    ----------
    n
        Pair counts ``[classes, cells, cells]``.
    cell_feature
        Feature id of each cell (ids ``0..F-1``).
    alpha
        Pseudo-count added to every cell of every pair's table (0: plug-in).

    Examples
    --------
    Given the class the two features below are independent, although not marginally:

    >>> n = np.zeros((2, 4, 4))
    >>> for y, (a, b) in enumerate([(0, 2), (1, 3)]):
    ...     n[y, a, a] = n[y, b, b] = n[y, a, b] = n[y, b, a] = 4.0
    >>> cf = np.array([0, 0, 1, 1])
    >>> float(conditional_mutual_information(n, cf)[0, 1]), float(mutual_information(n, cf)[0, 1]) > 0.69
    (0.0, True)
    """
    n = np.asarray(n, dtype=float)
    order, starts, n_f = _grouped(n, cell_feature)
    if n_f == 0:
        return np.zeros((0, 0))
    cf = np.asarray(cell_feature, dtype=np.intp)[order]
    if not np.array_equal(order, np.arange(len(order))):  # cells not yet grouped by feature
        n = n[np.ix_(np.arange(n.shape[0]), order, order)]
    N = _smoothed(n, cf, alpha)
    G = np.add.reduceat(N, starts, axis=2)            # [C, K, F]: n(u, y) within the pair (., j)
    T = np.add.reduceat(G, starts, axis=1)            # [C, F, F]: n(y) within the pair
    s_joint = np.add.reduceat(np.add.reduceat(xlogx(N).sum(axis=0), starts, axis=0), starts, axis=1)
    s_class = xlogx(T).sum(axis=0)
    s_marg = np.add.reduceat(xlogx(G).sum(axis=0), starts, axis=0)   # [F, F]: sum over u in i
    total = T.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total > 0, (s_joint + s_class - s_marg - s_marg.T) / total, 0.0)
    out = np.maximum(out, 0.0)  # rounding can leave -1e-17 where the truth is 0
    upper = np.triu(out, 1)
    return upper + upper.T  # exactly symmetric (the two halves are summed in different orders)


def mutual_information(n: np.ndarray, cell_feature: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """``I(Xi; Xj)`` for all feature pairs (the classes summed out), ``[F, F]`` in nats.

    With ``alpha`` the pseudo-counts are added to the class-free table.
    """
    n = np.asarray(n, dtype=float)
    return conditional_mutual_information(n.sum(axis=0, keepdims=True), cell_feature, alpha)


def class_mutual_information(n: np.ndarray, cell_feature: np.ndarray) -> np.ndarray:
    """``I(Xf; Y)`` per feature (plug-in, nats) from the diagonal ``n[y, a, a]``.

    >>> n = np.zeros((2, 2, 2)); n[0, 0, 0] = n[1, 1, 1] = 3.0
    >>> round(float(class_mutual_information(n, np.array([0, 0]))[0]), 12) == round(float(np.log(2)), 12)
    True
    """
    return class_mutual_information_diag(np.diagonal(np.asarray(n, dtype=float), axis1=1, axis2=2), cell_feature)


def class_mutual_information_diag(d: np.ndarray, cell_feature: np.ndarray) -> np.ndarray:
    """:func:`class_mutual_information` from the diagonal ``d[y, a] = n[y, a, a]`` alone."""
    d = np.asarray(d, dtype=float)
    cf = np.asarray(cell_feature, dtype=np.intp)
    n_f = int(cf.max()) + 1 if len(cf) else 0
    hot = np.zeros((len(cf), n_f))
    hot[np.arange(len(cf)), cf] = 1.0
    per_class = d @ hot                                        # [C, F]
    total = per_class.sum(axis=0)
    s = xlogx(d).sum(axis=0) @ hot + xlogx(total) - xlogx(d.sum(axis=0)) @ hot - xlogx(per_class).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(np.where(total > 0, s / total, 0.0), 0.0)
