"""Pairwise co-moments of numeric features per class: what a linear Gaussian tree is learned from.

For every class ``y`` and ordered pair of numeric features ``(i, j)`` the statistic keeps, over
the events of class ``y`` in which *both* were observed (pairwise deletion of missing values):

- ``n[y, i, j]`` the total weight of those events;
- ``mean[y, i, j]`` the weighted mean of ``x_i`` over them;
- ``m2[y, i, j]`` the sum of squared deviations of ``x_i`` from that mean;
- ``c[y, i, j]`` the co-moment ``sum w (x_i - mean_i)(x_j - mean_j)`` (symmetric in ``i, j``).

The diagonal ``(i, i)`` is the plain per-class Welford statistic of ``x_i``. Updates are the
weighted Welford/West recurrences and merges Chan et al.'s pairwise formula,

``C = C_a + C_b + (mean_b,i - mean_a,i)(mean_b,j - mean_a,j) n_a n_b / n``,

one formula for one event (the summary ``(w, x, 0, 0)``), a batch and a merge, so the statistic
is exactly mergeable and ``learn_many`` equals repeated ``learn_one``. Decay multiplies ``n``,
``m2`` and ``c`` by the factor and leaves the means: the statistic of the same events with every
weight multiplied.

From it, per class: the correlation ``rho = c / sqrt(m2[i, j] m2[j, i])`` of each pair, the
least-squares line of ``x_j`` on ``x_i`` (slope ``c / m2[i, j]``) and its residual sum of squares
``m2[j, i] - c**2 / m2[i, j]``.

Memory: four ``C x F x F`` float64 arrays (32 bytes per class and ordered pair: 0.64 MB for
100 features and 2 classes). One event with ``d`` observed numeric features updates ``d**2``
cells of each array with a handful of numpy operations. ``max_features`` bounds ``F``: the
first ``max_features`` features of the axis have co-moments, later ones none (first come, as
the feature axis numbers them; a merge keeps the bound), so 100,000 features in one event
cost ``32 C max_features**2`` bytes, not 320 GB.

>>> cm = CoMoments()
>>> for x, y in [(1.0, 2.0), (2.0, 4.1), (3.0, 5.9)]:
...     cm.update("a", ["x", "y"], [x, y])
>>> n, mean, m2, c = (cm.view(f)[0] for f in CoMoments.fields)
>>> float(n[0, 1]), round(float(mean[1, 0]), 12), float(m2[0, 1]), round(float(c[0, 1]), 12)
(3.0, 4.0, 2.0, 3.9)
>>> cm2 = CoMoments(); cm2.update("a", ["y"], [7.0])           # x missing: only y's diagonal
>>> merged = cm + cm2
>>> float(merged.view("n")[0, 1, 1]), float(merged.view("n")[0, 0, 1])
(4.0, 3.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streamnb.stats.base import Statistic
from streamnb.stats.index import Index
from streamnb.stats.welford import Welford, add_weight, comoment

__all__ = ["CoMoments", "CellMoments"]


def _combine(
    n_a: np.ndarray, mean_a: np.ndarray, m2_a: np.ndarray, c_a: np.ndarray,
    n_b: np.ndarray, mean_b: np.ndarray, m2_b: np.ndarray, c_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chan's formulas over ``[..., F, F]`` blocks whose last two axes are the same features."""
    n = n_a + n_b
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(n > 0, n_b / np.where(n > 0, n, 1.0), 0.0)
    d_i = mean_b - mean_a
    d_j = np.swapaxes(d_i, -1, -2)
    k = n_a * frac
    return n, mean_a + d_i * frac, comoment(m2_a + m2_b, d_i, d_i, k), comoment(c_a + c_b, d_i, d_j, k)


class CoMoments(Statistic):
    """Per class and ordered numeric pair: weight, mean, ``M2`` and co-moment (axes: class,
    feature, feature; the two feature axes are one :class:`Index`)."""

    fields = ("n", "mean", "m2", "c")

    def __init__(self, axes: int | Sequence[Index] = 2, max_features: int | None = None) -> None:
        if isinstance(axes, int):
            features = Index()
            axes = [Index(), features, features] if axes in (2, 3) else [Index() for _ in range(axes)]
        elif len(axes) == 2:
            axes = [axes[0], axes[1], axes[1]]
        super().__init__(axes, (None, max_features, max_features))

    @property
    def features(self) -> Index:
        return self.axes[1]

    def update(self, y: Any, features: Sequence, values: Sequence[float], w: float = 1.0) -> None:
        """One event of class ``y``: ``values[i]`` of feature ``features[i]`` (distinct)."""
        k = self.axes[0].add(y)
        ids = self.features.lookup(list(features), add=True)
        self.update_ids(k, ids, np.asarray(values, dtype=float), w)

    def update_ids(self, k: int, ids: np.ndarray, x: np.ndarray, w: float = 1.0) -> None:
        """:meth:`update` with integer ids (distinct) and ``w > 0``: ``len(ids)**2`` cells
        (features past ``max_features`` are left out)."""
        ids, x = self._within(1, ids, x)
        idx = self._outer_cells(k, ids, ids)
        N, M, S, C = (self._arrays[f].reshape(-1) for f in self.fields)
        n_a, frac, d_i = add_weight(N, M, idx, x[:, None], w)
        k_ = n_a * frac
        S[idx] = comoment(S[idx], d_i, d_i, k_)
        C[idx] = comoment(C[idx], d_i, d_i.T, k_)

    def update_matrix(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, w: np.ndarray) -> None:
        """A batch: event ``r`` of class ``rows[r]`` has ``values[r, j]`` for feature ``cols[j]``
        (NaN where missing) and weight ``w[r] > 0``; the same as one :meth:`update_ids` per
        event, in order (it is that loop: exact, ``O(rows d**2)``)."""
        cols = np.asarray(cols, dtype=np.intp)
        seen = ~np.isnan(values)
        for r in range(len(values)):
            keep = seen[r]
            if keep.all():
                self.update_ids(int(rows[r]), cols, values[r], float(w[r]))
            elif keep.any():
                self.update_ids(int(rows[r]), cols[keep], values[r, keep], float(w[r]))

    def _merge(self, cells: tuple[np.ndarray, ...], other: dict[str, np.ndarray]) -> None:
        a = self._arrays
        merged = _combine(*(a[f][cells] for f in self.fields), *(other[f] for f in self.fields))
        for f, arr in zip(self.fields, merged):
            a[f][cells] = arr

    def decay(self, factor: float) -> None:
        for f in ("n", "m2", "c"):
            self.raw(f)[...] *= factor


class CellMoments(Welford):
    """Welford statistics of numeric features per class and categorical cell: axes (class,
    cell, feature); cell ``(f, v)`` holds, for each numeric feature, the weight, mean and
    ``M2`` over the events of the class in which ``f = v`` and the numeric feature were both
    observed (what a numeric child of a categorical parent is learned from). Merge (Chan) and
    decay as :class:`~streamnb.stats.welford.Welford`.

    >>> cm = CellMoments()
    >>> k, t = cm.axes[0].add("y"), cm.axes[2].add("t")
    >>> cells = cm.axes[1].lookup([("f", "a"), ("f", "b")], add=True)
    >>> cm.update_ids(k, cells[:1], np.array([t]), np.array([2.0]))       # f = a, t = 2
    >>> cm.update_ids(k, cells[:1], np.array([t]), np.array([4.0]))       # f = a, t = 4
    >>> cm.update_ids(k, cells[1:], np.array([t]), np.array([7.0]))       # f = b, t = 7
    >>> cm.view("mean")[0, :, 0].tolist(), cm.view("m2")[0, :, 0].tolist()
    ([3.0, 7.0], [2.0, 0.0])
    """

    def __init__(self, axes: int | Sequence[Index] = 3, max_features: int | None = None) -> None:
        super().__init__(axes, (None, None, max_features))

    def __iadd__(self, other: CellMoments) -> CellMoments:
        """Merge; ``other``'s cells that this cell axis does not hold are left out (the axis
        belongs to the pair counts, which decide, under their cap, which cells a merge keeps),
        and so are features past ``max_features``."""
        self._merge(*self._aligned(other, add=(True, False, True)))
        return self

    def update_ids(self, k: int, cells: np.ndarray, features: np.ndarray, values: np.ndarray,  # type: ignore[override]
                   w: float = 1.0) -> None:
        """One event of class ``k``: its categorical ``cells`` times its numeric ``features``
        (``values[i]`` of ``features[i]``), ``w > 0``: ``len(cells) * len(features)`` cells
        (features past ``max_features`` are left out)."""
        features, values = self._within(2, features, values)
        idx = self._outer_cells(k, cells, features)
        N, M, S = (self._arrays[f].reshape(-1) for f in self.fields)
        add_weight(N, M, idx, values[None, :], w, S)
