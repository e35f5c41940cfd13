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
are derived values, never merged: after any change that is not one event (a batch, a merge, a
decay) they are rebuilt from the table once, at the next read (``PairCounts.changes`` tells
which). Kept event by event, they differ from a rebuild in their last bits when weights are not
whole numbers (:class:`~streamnb.Forgetful`): so a saved state holds them while they are current
(:meth:`Margins.to_state`), and a loaded model goes on with the same bits (:meth:`Margins.resume`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamnb.stats.index import decode_key, encode_key
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
            state.pop(name, None)  # memoryviews are neither copied nor pickled: made again
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._views()  # a copy goes on with the same bits (as a saved state: see to_state)

    # -- saving ----------------------------------------------------------------------------
    def is_current(self) -> bool:
        """Whether ``D`` and ``T`` hold the pair counts' sums as learned (no rebuild is due)."""
        return self.changes >= 0 and self.changes == self.pairs.changes

    def to_state(self) -> dict[str, Any] | None:
        """``D`` and ``T`` as kept event by event, with the feature and cell order they use;
        None when the next read rebuilds them anyway."""
        if not self.is_current():
            return None
        # cells and classes registered since the last event join now, as at the next one (with
        # counts of 0, or by a rebuild from the same table): the saved block is the counts' own
        self.current()
        names = [None] * len(self.fid)
        for f, j in self.fid.items():
            names[j] = f
        c, f, k = self.n_classes, len(self.fcells), len(self.cf)
        return {"features": [encode_key(f) for f in names], "cf": list(self.cf), "D": self.D[:c, :f, :k].copy(), "T": self.T[:c, :f].copy()}

    def order(self, state: dict[str, Any]) -> np.ndarray | None:
        """The ids, in these margins (rebuilt from the loaded counts), of the features a saved
        ``state`` numbers ``0, 1, ...``; None if its cells or classes are not these."""
        fid = self.fid
        names = [decode_key(f) for f in state["features"]]
        if any(f not in fid for f in names):
            return None
        ids = np.array([fid[f] for f in names], dtype=np.intp)
        cf = state["cf"]
        c, f, k = np.shape(state["D"])
        if (len(cf) != len(self.cf) or c != self.n_classes or f != len(self.fcells)
                or any(self.cf[i] != ids[j] for i, j in enumerate(cf))):
            return None
        return ids

    def holds(self, state: dict[str, Any], ids: np.ndarray) -> bool:
        """Whether these margins hold exactly the saved ``state`` (features at ``ids``)."""
        c, f, k = np.shape(state["D"])
        return (np.array_equal(self.D[np.ix_(np.arange(c), ids, np.arange(k))], state["D"])
                and np.array_equal(self.T[np.ix_(np.arange(c), ids)], state["T"]))

    def resume(self, state: dict[str, Any] | None) -> np.ndarray | None:
        """After a load: rebuild from the counts, then take the saved sums' bits (a state
        saved while they were current); the feature order of :meth:`order`, or None."""
        self.rebuild()
        ids = None if state is None else self.order(state)
        if ids is not None:
            c, f, k = np.shape(state["D"])  # type: ignore[index]
            self.D[np.ix_(np.arange(c), ids, np.arange(k))] = state["D"]  # type: ignore[index]
            self.T[np.ix_(np.arange(c), ids)] = state["T"]  # type: ignore[index]
        return ids

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
