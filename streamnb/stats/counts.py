"""Weighted counts over open axes: class counts, per-class category counts, token counts."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from streamnb.stats.base import Statistic

__all__ = ["Counts"]


class Counts(Statistic):
    """Weighted counts ``n[k1, k2, ...]`` over one or more open axes.

    Counting is exact for integer weights (floats hold integers exactly up to 2**53), so a
    batch, a merge and a one-by-one stream give identical arrays.

    >>> c = Counts(2)                       # e.g. (class, token)
    >>> c.update(("spam", "win"))
    >>> c.update(("ham", "hi"), w=2.0)
    >>> c.update_many([["spam", "spam"], ["win", "now"]])
    >>> c.get(("spam", "win")), c.get(("ham", "win")), c.total()
    (2.0, 0.0, 5.0)
    >>> both = c + c
    >>> both.get(("ham", "hi"))
    4.0
    >>> c.decay(0.5); c.get(("spam", "win"))
    1.0

    ``revert`` subtracts exactly what ``update`` added (exact for integer weights), and keys
    whose counts are all zero can be found and dropped:

    >>> c = Counts(2)
    >>> c.update(("ham", "hi")); c.update(("spam", "win"))
    >>> c.revert(("spam", "win"))
    >>> empty = c.empty(1); c.axes[1].keys[int(empty[0])]
    'win'
    >>> _ = c.drop(1, empty); c.axes[1].keys, c.total()
    (['hi'], 1.0)
    """

    fields = ("n",)

    def update(self, keys: Sequence[Hashable], w: float = 1.0) -> None:
        """Add ``w`` to the cell ``keys`` (one key per axis)."""
        ids = tuple(axis.add(k) for axis, k in zip(self.axes, keys))
        self.raw("n")[ids] += w

    def update_many(self, keys: Sequence[Sequence[Hashable]], w: Any = 1.0) -> None:
        """Add ``w`` (scalar or one weight per event) to each cell ``keys[0][i], keys[1][i], ...``."""
        ids = tuple(axis.lookup(k, add=True) for axis, k in zip(self.axes, keys))
        self.add_at(ids, w)

    def revert(self, keys: Sequence[Hashable], w: float = 1.0) -> None:
        """Subtract ``w`` from the cell ``keys``: undo :meth:`update` (exact for integer counts).

        Raises ``KeyError`` for a cell never seen and ``ValueError`` if the count would become
        negative; the counts are then unchanged. Keys are kept (see :meth:`empty`).
        """
        ids = tuple(axis.get(k) for axis, k in zip(self.axes, keys))
        if min(ids) < 0:
            raise KeyError(f"cannot revert the unseen cell {tuple(keys)!r}")
        n = self.raw("n")
        if n[ids] < w:
            raise ValueError(f"cannot remove {w} from the count {n[ids]} of {tuple(keys)!r}")
        n[ids] -= w

    def marginal(self, axis: int) -> np.ndarray:
        """Total count of each key of ``axis`` (summed over the other axes)."""
        n = self.n
        return n.sum(axis=tuple(i for i in range(n.ndim) if i != axis)) if n.ndim > 1 else n.copy()

    def empty(self, axis: int, ids: Any = None) -> np.ndarray:
        """Ids (among ``ids``, default all) of keys of ``axis`` whose counts are all zero."""
        totals = self.marginal(axis)
        ids = np.arange(len(totals)) if ids is None else np.asarray(ids, dtype=np.intp)
        return ids[totals[ids] == 0]

    def add(self, ids: tuple, w: Any = 1.0) -> None:
        """Add ``w`` at integer ``ids`` whose cells are all distinct (no repeated cell)."""
        self.raw("n")[ids] += w

    def add_at(self, ids: tuple, w: Any = 1.0) -> None:
        """Add ``w`` at integer ``ids`` where cells may repeat (unbuffered, exact)."""
        np.add.at(self.raw("n"), ids, w)

    def get(self, keys: Sequence[Hashable]) -> float:
        """The count of a cell; 0 for keys never seen."""
        ids = tuple(axis.get(k) for axis, k in zip(self.axes, keys))
        if min(ids) < 0:
            return 0.0
        return float(self.raw("n")[ids])

    def total(self) -> float:
        return float(self.view("n").sum())

    @property
    def n(self) -> np.ndarray:
        """The counts, cut to shape."""
        return self.view("n")

    def _merge(self, cells: tuple[np.ndarray, ...], other: dict[str, np.ndarray]) -> None:
        self._arrays["n"][cells] += other["n"]

    def decay(self, factor: float) -> None:
        self.raw("n")[...] *= factor
