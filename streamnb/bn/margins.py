"""The normalizers of the tree CPTs, kept current one event at a time.

Every conditional probability of a tree learner (TAN, per-class Chow-Liu, AODE) is a ratio of
pair counts ``n[y, a, b]`` (:class:`~streamnb.stats.pairwise.PairCounts`) over a normalizer:

- ``D[y, j, c] = sum_{v in X_j} n[y, v, c]``: the events of class ``y`` in which cell ``c`` and
  feature ``j`` were both observed (the denominator of ``P(x_j | x_parent = c, y)``);
- ``T[y, j] = sum_{v in X_j} n[y, v, v]``: the events of class ``y`` in which ``j`` was observed
  (the denominator of ``P(x_j | y)``);
- ``|X_j|``: the number of values (cells) of feature ``j``.

Deriving them from the table costs ``O(C K**2)``; :class:`Margins` keeps them instead, and an
event with ``m`` observed features updates ``m**2`` entries of ``D`` and ``m`` of ``T`` (STYLE
item 14: derive per touched cell; :class:`~streamnb.stats.pair_cells.PairCells` does it). They
are derived values, never saved nor merged: after any change that is not one event (a batch, a
merge, a decay, a load) they are rebuilt from the table once, at the next read
(``PairCounts.changes`` tells which).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamnb.stats.pairwise import PairCounts

__all__ = ["Margins"]

class Margins:
    """``D[y, feature, cell]``, ``T[y, feature]``, values per feature, and the cell map.

    Attributes (valid after :meth:`current`): ``cf[c]`` the feature id of cell ``c`` (ids of
    ``pairs.features``), ``fcells[j]`` the cells of feature ``j`` in id order, ``nv[j]`` their
    number, ``fid`` feature name to id; ``D``, ``T`` numpy arrays with spare capacity and their
    flat memoryviews ``Dv``, ``Tv`` with element strides ``ds``, ``ts``.
    """

    def __init__(self, pairs: PairCounts) -> None:
        self.pairs = pairs
        self.changes = -1  # the pairs.changes they match (-1: never built)
        self.cf: list[int] = []
        self.fcells: list[list[int]] = []
        self.nv: list[float] = []
        self.fid: dict = {}
        self.n_classes = 0
        self.D = np.zeros((0, 0, 0))
        self.T = np.zeros((0, 0))

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in ("Dv", "Tv"):
            state.pop(name, None)  # memoryviews are neither copied nor pickled
        state["changes"] = -1  # rebuilt after a copy
        return state

    # -- building --------------------------------------------------------------------------
    def rebuild(self) -> None:
        """Derive everything from the pair counts (``O(C K**2)``)."""
        pairs = self.pairs
        n = pairs.n  # flushes, fits
        cf = pairs.cell_features()
        names = pairs.features.keys
        n_c, n_k, n_f = n.shape[0], n.shape[1], len(names)
        self.cf = cf.tolist()
        self.fid = {f: i for i, f in enumerate(names)}
        self.fcells = [[] for _ in range(n_f)]
        for c, j in enumerate(self.cf):
            self.fcells[j].append(c)
        self.nv = [float(len(cs)) for cs in self.fcells]
        self.D = np.zeros((max(4, 2 * n_c), max(4, 2 * n_f), max(4, 2 * n_k)))
        self.T = np.zeros(self.D.shape[:2])
        diag = np.diagonal(n, axis1=1, axis2=2)
        for j, cs in enumerate(self.fcells):
            self.D[:n_c, j, :n_k] = n[:, cs, :].sum(axis=1)
            self.T[:n_c, j] = diag[:, cs].sum(axis=1)
        self.n_classes = n_c
        self._views()
        self.changes = pairs.changes

    def _views(self) -> None:
        # plain-float access (numpy arrays are buffers; typed Any for the float item access)
        self.Dv: Any = memoryview(self.D.reshape(-1))  # type: ignore[arg-type]
        self.Tv: Any = memoryview(self.T.reshape(-1))  # type: ignore[arg-type]
        self.ds = tuple(s // 8 for s in self.D.strides)
        self.ts = tuple(s // 8 for s in self.T.strides)

    def _follow(self) -> bool:
        """Take in cells registered and classes added since (they have no counts yet); False
        if a capacity is exceeded (then rebuild)."""
        keys = self.pairs.cells.keys
        n_c = len(self.pairs.classes.keys)
        cap_c, cap_f, cap_k = self.D.shape
        if len(keys) > cap_k or n_c > cap_c:
            return False
        for c in range(len(self.cf), len(keys)):
            f = keys[c][0]
            j = self.fid.get(f)
            if j is None:
                j = self.fid[f] = len(self.fcells)
                if j >= cap_f:
                    return False
                self.fcells.append([])
                self.nv.append(0.0)
            self.cf.append(j)
            self.fcells[j].append(c)
            self.nv[j] += 1.0
        self.n_classes = n_c
        return True

    def current(self) -> Margins:
        """Bring the margins up to date with the pair counts (rebuild if anything but
        one event learned through :class:`~streamnb.stats.pair_cells.PairCells` changed them)
        and return them."""
        pairs = self.pairs
        if (self.changes == pairs.changes and len(self.cf) == len(pairs.cells.keys)
                and self.n_classes == len(pairs.classes.keys)):
            return self  # nothing new since the last event
        if self.changes != pairs.changes or not self._follow():
            self.rebuild()
        return self
