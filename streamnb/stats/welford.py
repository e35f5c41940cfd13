"""Weighted mean and variance per cell (Welford / West), merged with Chan et al.'s formula.

Chan's update is written here once per form: :func:`welford_one` for one cell (plain floats,
the per-event path), :func:`add_weight` for one event on arrays and :func:`chan` for a batch
summary or a merge (numpy), side by side; and :func:`comoment`, the co-moments' step.

Like :mod:`streamnb.stats.lidstone`, this plain-Python module is also compiled by the build
(``welford.pxd``): the compiled cells cimport :func:`welford_one` and :func:`comoment` from that
build (C calls, the same floating-point operations in the same order: the same bits). Its
classes and numpy forms run as Python everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamnb.stats.base import Statistic

__all__ = ["Welford", "add_weight", "chan", "comoment", "welford_one"]


def chan(
    n_a: Any, mean_a: Any, m2_a: Any, n_b: Any, mean_b: Any, m2_b: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combine two weighted summaries ``(n, mean, M2)`` (Chan, Golub & LeVeque 1979).

    One event is the summary ``(w, x, 0)``, so the same formula serves one event, a batch and
    a merge. Cells with no weight on either side are left as they are.

    >>> n, mean, m2 = chan(2.0, 1.0, 2.0, 1.0, 4.0, 0.0)   # {0, 2} then {4}
    >>> float(n), float(mean), float(m2)
    (3.0, 2.0, 8.0)
    """
    n = n_a + n_b
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(n > 0, n_b / np.where(n > 0, n, 1.0), 0.0)
    delta = mean_b - mean_a
    mean = mean_a + delta * frac
    m2 = m2_a + m2_b + delta * delta * n_a * frac
    return n, mean, m2


def welford_one(n_a: float, mean: float, m2: float, x: float, w: float) -> tuple[float, float, float]:
    """One cell's ``(n, mean, M2)`` after the value ``x`` with weight ``w > 0``: :func:`chan`
    for the summary ``(w, x, 0)`` in plain floats, the same operations (the same bits as
    :func:`add_weight`).

    >>> welford_one(2.0, 1.0, 2.0, 4.0, 1.0)   # {0, 2} then {4}
    (3.0, 2.0, 8.0)
    """
    n = n_a + w
    frac = w / n
    delta = x - mean
    return n, mean + delta * frac, m2 + delta * delta * n_a * frac


def comoment(c: Any, d_i: Any, d_j: Any, k: Any) -> Any:
    """``c + d_i d_j k``: Chan's update of a co-moment (or, with ``d_j = d_i``, of the
    co-moments' ``M2``) by the deviations ``d_i, d_j`` of the means and the step ``k = n_a
    n_b / n``, rounded once for every cell of an update (so ``d_i d_j (n_a frac)``, not
    :func:`chan`'s ``(d d n_a) frac``: the co-moments' own bits). Plain floats compiled (the
    per-event cells), floats or arrays in Python (:class:`~streamnb.stats.CoMoments`).

    >>> comoment(1.0, 2.0, -1.0, 0.5)
    0.0
    """
    return c + d_i * d_j * k


def add_weight(n: np.ndarray, mean: np.ndarray, at: Any, x: Any, w: float,
               m2: np.ndarray | None = None) -> tuple[Any, Any, Any]:
    """One event of weight ``w > 0`` with values ``x`` into the cells ``at`` of ``n``,
    ``mean`` and (if given) ``m2``: :func:`chan` for the summary ``(w, x, 0)`` written out,
    the same arithmetic bit for bit. Returns ``(n_a, frac, delta)`` (the weight before, ``w /
    n`` and ``x - mean`` before), from which a caller without ``m2`` updates its own second
    moments. ``at`` indexes with integers (arrays or scalars, not slices), so ``n[at]`` is a
    copy.

    >>> n, mean, m2 = np.array([2.0]), np.array([1.0]), np.array([2.0])   # {0, 2}
    >>> _ = add_weight(n, mean, 0, 4.0, 1.0, m2)                           # then {4}
    >>> n.tolist(), mean.tolist(), m2.tolist()
    ([3.0], [2.0], [8.0])
    """
    n_a = n[at]
    n_b = n_a + w
    frac = w / n_b
    delta = x - mean[at]
    mean[at] += delta * frac
    n[at] = n_b
    if m2 is not None:
        m2[at] += delta * delta * n_a * frac
    return n_a, frac, delta


class Welford(Statistic):
    """Weighted count, mean and sum of squared deviations ``M2`` per cell.

    Axes are usually (class, feature). The variance is ``M2 / (n - ddof)``. Decay multiplies
    ``n`` and ``M2`` by the factor and leaves the mean: it is exactly the statistic of the same
    events with every weight multiplied.

    >>> w = Welford(2)
    >>> for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]:
    ...     w.update("a", ["x"], [x])
    >>> float(w.mean()[0, 0]), float(w.var()[0, 0]), float(w.var(ddof=1)[0, 0])
    (5.0, 4.0, 4.571428571428571)
    """

    fields = ("n", "mean", "m2")

    def update(self, row: Any, cols: Any, values: Any, w: float = 1.0) -> None:
        """One event of class ``row``: ``values[i]`` for feature ``cols[i]`` (keys)."""
        r = self.axes[0].add(row)
        c = self.axes[1].lookup(cols, add=True)
        self.update_ids(r, c, np.asarray(values, dtype=float), w)

    def update_ids(self, r: int, c: np.ndarray, values: np.ndarray, w: float = 1.0) -> None:
        """:meth:`update` with integer ids; ``c`` must hold distinct columns and ``w > 0``."""
        self._fit()
        a = self._arrays
        add_weight(a["n"], a["mean"], (r, c), values, w, a["m2"])

    def update_many_ids(self, r: np.ndarray, c: np.ndarray, values: np.ndarray, w: Any = 1.0) -> None:
        """Many observations ``(r[i], c[i], values[i])``; cells may repeat.

        Each cell's batch is summarized (two passes, shifted by a value of the cell so that
        equal values give exactly their value and a zero spread) and merged with :func:`chan`,
        so the result equals one-by-one updates up to floating-point rounding (about 1e-15).
        """
        self._fit()
        cap = self._arrays["n"].shape
        size = cap[0] * cap[1]
        flat = r * cap[1] + c
        w = np.broadcast_to(np.asarray(w, dtype=float), values.shape)
        n, mean, m2 = (self._arrays[f].reshape(-1) for f in self.fields)
        if not len(flat):
            return
        if size <= max(1 << 16, 8 * len(flat)):  # dense bincounts: no sort
            order = np.arange(len(flat))
            first = np.zeros(size, dtype=np.intp)
            first[flat[::-1]] = order[::-1]  # the first event of each cell
            shift = np.where(n > 0, mean, values[first])
            d = values - shift[flat]
            nb = np.bincount(flat, weights=w, minlength=size)
            cells = np.flatnonzero(nb)
            mean_of = shift + np.bincount(flat, weights=w * d, minlength=size) / np.where(nb > 0, nb, 1.0)
            dev = values - mean_of[flat]
            m2b = np.bincount(flat, weights=w * dev * dev, minlength=size)[cells]
            nb, mb = nb[cells], mean_of[cells]
        else:
            cells, first, inv = np.unique(flat, return_index=True, return_inverse=True)
            shift = np.where(n[cells] > 0, mean[cells], values[first])
            nb = np.bincount(inv, weights=w)
            mb = shift + np.bincount(inv, weights=w * (values - shift[inv])) / nb
            dev = values - mb[inv]
            m2b = np.bincount(inv, weights=w * dev * dev)
        n[cells], mean[cells], m2[cells] = chan(n[cells], mean[cells], m2[cells], nb, mb, m2b)

    def update_matrix(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, w: np.ndarray,
                      summaries: list | None = None) -> bool:
        """A batch as a matrix: event ``i`` of class ``rows[i]`` has ``values[i, j]`` for column
        ``cols[j]`` (distinct ids; NaN where missing) and weight ``w[i] > 0``.

        Dense per-class summaries merged with :func:`chan`; the same result as
        :meth:`update_many_ids` on the observed cells. With ``summaries`` (a list), each class's
        ``(columns, n, mean, M2)`` of the batch is appended to it (what another statistic over
        the same rows can merge instead of reading them again); returns whether it was.
        """
        classes = np.unique(rows)
        if len(classes) > 32:  # many classes: flatten the observed cells instead
            r, j = np.nonzero(values == values)
            self.update_many_ids(rows[r], cols[j], values[r, j], w[r])
            return False
        self._fit()
        a = self._arrays
        cols_at: Any = cols
        if len(cols) and cols[-1] - cols[0] == len(cols) - 1 and (np.diff(cols) == 1).all():
            cols_at = slice(int(cols[0]), int(cols[-1]) + 1)  # contiguous columns: views, not copies
        missing = np.isnan(values)
        any_missing = bool(missing.any())
        for r in classes.tolist():
            sel = rows == r if len(classes) > 1 else slice(None)
            x, wr, c = values[sel], w[sel], cols_at
            # shift by the running mean (or a value of the batch) so equal values stay exact
            n_a, mean_a = a["n"][r, c], a["mean"][r, c]
            if not any_missing:
                shift = np.where(n_a > 0, mean_a, x[0])
                nb = np.full(values.shape[1], wr.sum())
                mb = shift + (wr @ (x - shift)) / nb
                dev = x - mb
                m2b = wr @ (dev * dev)
            else:
                seen = ~missing[sel]
                first = x[seen.argmax(axis=0), np.arange(x.shape[1])]  # NaN where never seen
                shift = np.where(n_a > 0, mean_a, np.where(seen.any(axis=0), first, 0.0))
                ww = seen * wr[:, None]
                nb = ww.sum(axis=0)
                touched = nb > 0
                dz = np.where(seen, x - shift, 0.0)
                mb = shift + (ww * dz).sum(axis=0) / np.where(touched, nb, 1.0)
                dev = np.where(seen, x - mb, 0.0)
                m2b = (ww * dev * dev).sum(axis=0)
                c = np.arange(c.start, c.stop)[touched] if isinstance(c, slice) else c[touched]
                nb, mb, m2b = nb[touched], mb[touched], m2b[touched]
            a["n"][r, c], a["mean"][r, c], a["m2"][r, c] = chan(
                a["n"][r, c], a["mean"][r, c], a["m2"][r, c], nb, mb, m2b
            )
            if summaries is not None:
                summaries.append((c, nb, mb, m2b))
        return summaries is not None

    def count(self) -> np.ndarray:
        return self.view("n")

    def mean(self) -> np.ndarray:
        return self.view("mean")

    def m2(self) -> np.ndarray:
        return self.view("m2")

    def var(self, ddof: int = 0) -> np.ndarray:
        """Variance per cell; NaN where the weight is not above ``ddof``."""
        n = self.view("n")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > ddof, self.view("m2") / (n - ddof), np.nan)

    def pooled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(n, mean, M2)`` of each column over all rows (every class merged)."""
        n, mean, m2 = self.view("n"), self.view("mean"), self.view("m2")
        tot = n.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = np.where(tot > 0, (n * mean).sum(axis=0) / np.where(tot > 0, tot, 1.0), 0.0)
        dev = mean - mu
        return tot, mu, m2.sum(axis=0) + (n * dev * dev).sum(axis=0)

    def merge_summaries(self, row: int, summaries: list) -> None:
        """Merge ``(columns, n, mean, M2)`` summaries (from :meth:`update_matrix`) into row
        ``row``, in order (Chan)."""
        self._fit()
        a = self._arrays
        for c, nb, mb, m2b in summaries:
            a["n"][row, c], a["mean"][row, c], a["m2"][row, c] = chan(
                a["n"][row, c], a["mean"][row, c], a["m2"][row, c], nb, mb, m2b
            )

    def _merge(self, cells: tuple[np.ndarray, ...], other: dict[str, np.ndarray]) -> None:
        a = self._arrays
        a["n"][cells], a["mean"][cells], a["m2"][cells] = chan(
            a["n"][cells], a["mean"][cells], a["m2"][cells], other["n"], other["mean"], other["m2"]
        )

    def decay(self, factor: float) -> None:
        self.raw("n")[...] *= factor
        self.raw("m2")[...] *= factor
