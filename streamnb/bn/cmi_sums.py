"""The conditional mutual information of every categorical pair, kept current between relearns.

TAN's weights are ``I(Xi; Xj | Y) = (S_joint + S_class - S_marg[i, j] - S_marg[j, i]) / N_ij``
(:mod:`streamnb.structure.information`), sums of ``t log t`` over the cells of each pair's
table: ``S_joint`` over ``n[y, u, v]``, ``S_marg[i, j]`` over ``G[y, u, j] = sum_{v in X_j}
n[y, u, v]`` for the cells ``u`` of ``i`` (the CPT normalizers ``D`` of
:class:`~streamnb.bn.margins.Margins`), ``S_class`` over the pair totals ``T[y, i, j]``.
Computing them from the table costs ``O(C K**2)`` for ``K`` cells, at every relearn: with
``relearn_every=100`` and 1,000 cells that is most of the cost of an event.

:class:`CMISums` keeps the sums instead. Learning one event updates them at the ``d**2`` cells it
touches, with the counts (:class:`~streamnb.stats.pair_cells.SumCells`), so a relearn reads them as
they are. Anything else that changes the counts (a merge, a decay, a load, growth past the
arrays' capacity, an event learned while they were behind) makes the next relearn rebuild the
sums from the table, once. The sums then differ from a fresh computation by
rounding only (about 1e-12 relative; ``tests/bn/test_cmi_sums.py``), which can decide between two
trees of equal weight: so a saved state holds them while they are current (:meth:`CMISums.to_state`)
and a loaded model relearns from the same bits. Plug-in estimates only:
with ``cmi_alpha > 0`` every cell of a pair's table changes with the number of values, and
TAN computes the weights from the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamnb.bn.margins import Margins
from streamnb.stats.pairwise import PairCounts
from streamnb.structure.counted import canonical_cells
from streamnb.structure.information import xlogx

__all__ = ["CMISums"]


class CMISums:
    """Per class and feature pair: ``S_joint``, ``S_marg``, the totals ``T`` and ``T log T``
    (feature ids of ``pairs.features``), with the ``t log t`` of the normalizers, ``GL``.
    Summed over the classes they give TAN's ``I(Xi; Xj | Y)``, one class at a time the
    per-class Chow-Liu trees' ``I(Xi; Xj)``."""

    def __init__(self, pairs: PairCounts, margins: Margins) -> None:
        self.pairs = pairs
        self.margins = margins
        self._changes = -1  # pairs.changes when the sums matched the counts (-1: never)
        self._tables: tuple | None = None  # (key, S_joint, D they were taken for, views): see tables()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_tables"] = None  # memoryviews: never copied (made again at the next event)
        return state

    # -- learning --------------------------------------------------------------------------
    def tables(self) -> tuple | None:
        """The arrays one event updates (:class:`~streamnb.stats.pair_cells.SumCells`):
        ``(S_joint, S_marg, GL, T, TL)`` as ``(flat view, strides...)``; None if the sums are
        not kept current now (then the event goes uncounted here and the next read rebuilds).
        After the event, call :meth:`counted`."""
        if self._changes < 0 or self.pairs.changes != self._changes:
            return None  # behind the counts: the next read rebuilds
        # a class or cell added since the last event may outgrow the counts' arrays: they grow
        # now (a new generation), before the key is read, so the sums are never handed out for
        # arrays smaller than the event's cells (the sums then rebuild at the next read)
        self.pairs.fit()
        m = self.margins
        key = (self.pairs.generation, len(m.fcells))
        cached = self._tables
        if cached is not None and cached[0] == key and cached[1] is self.S_joint and cached[2] is m.D:
            return cached[3]
        if not self._fits(self.pairs.raw("n"), m):
            return None
        views = []
        for a in (self.S_joint, self.S_marg, self.GL, self.T, self.TL):
            views.append((memoryview(a.reshape(-1)), *(s // a.itemsize for s in a.strides)))  # type: ignore[arg-type]
        self._tables = (key, self.S_joint, m.D, tuple(views))
        return self._tables[3]

    def counted(self) -> None:
        """The counts and these sums just learned one event together (through the views of
        :meth:`tables`)."""
        self._changes += 1

    # -- saving ----------------------------------------------------------------------------
    _ARRAYS = ("S_joint", "S_marg", "GL", "T", "TL")

    def to_state(self) -> dict[str, np.ndarray] | None:
        """The sums as kept event by event (feature order of the margins' state); None when
        the next read rebuilds them anyway."""
        m = self.margins
        if (self._changes < 0 or self.pairs.changes != self._changes or not m.is_current()
                or not self._fits(self.pairs.raw("n"), m)):
            return None
        c, f, k = m.n_classes, len(m.fcells), len(m.cf)
        out = {name: getattr(self, name)[:c, :f, :f].copy() for name in self._ARRAYS if name != "GL"}
        out["GL"] = self.GL[:c, :f, :k].copy()
        return out

    def _block(self, name: str, c: int, ids: np.ndarray, k: int) -> Any:
        return np.ix_(np.arange(c), ids, np.arange(k) if name == "GL" else ids)

    def holds(self, state: dict[str, np.ndarray], ids: np.ndarray) -> bool:
        """Whether these sums (brought up to date) hold exactly the saved ``state``."""
        self._current()
        c, k = len(state["T"]), state["GL"].shape[2]
        return all(np.array_equal(getattr(self, name)[self._block(name, c, ids, k)], state[name])
                   for name in self._ARRAYS)

    def resume(self, state: dict[str, np.ndarray] | None, ids: np.ndarray | None) -> None:
        """After a load (the margins resumed, with feature order ``ids``): rebuild from the
        counts, then take the saved sums' bits."""
        self._changes = -1
        self._current()
        if state is None or ids is None:
            return
        c, k = len(state["T"]), state["GL"].shape[2]
        for name in self._ARRAYS:
            getattr(self, name)[self._block(name, c, ids, k)] = state[name]

    # -- reading ---------------------------------------------------------------------------
    def _current(self) -> int:
        """Bring the sums up to date with the counts; the number of features."""
        m = self.margins.current()
        n = self.pairs.raw("n")
        if self._changes < 0 or self.pairs.changes != self._changes or not self._fits(n, m):
            self._rebuild(n, m)
        self._changes = self.pairs.changes
        return len(m.fcells)

    def _ratio(self, sj: np.ndarray, sc: np.ndarray, sm: np.ndarray, tot: np.ndarray) -> np.ndarray:
        """``(S_joint + S_class - S_marg - S_marg.T) / N``, symmetric, each pair taken from its
        entry whose first feature comes first in canonical order (so the same bits whatever
        the feature ids)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(tot > 0, (sj + sc - (sm + sm.T)) / np.where(tot > 0, tot, 1.0), 0.0)
        rank = canonical_cells(self.pairs)[1][: len(out)]
        first = rank[:, None] < rank[None, :]
        upper = np.where(first, np.maximum(out, 0.0), 0.0)  # rounding can leave -1e-17 where the truth is 0
        return upper + upper.T

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(I(Xi; Xj | Y) [F, F], co-observed weight N [F, F])`` over ``pairs.features``."""
        F = self._current()
        sj, sm, sc = (a[:, :F, :F].sum(axis=0) for a in (self.S_joint, self.S_marg, self.TL))
        tot = self.T[:, :F, :F].sum(axis=0)
        return self._ratio(sj, sc, sm, tot), tot

    def class_weights(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(I(Xi; Xj) [F, F] over the events of class k, their weight [F, F])``."""
        F = self._current()
        sj, sm, sc = (a[k, :F, :F] for a in (self.S_joint, self.S_marg, self.TL))
        tot = self.T[k, :F, :F]
        return self._ratio(sj, sc, sm, tot), tot.copy()

    def _fits(self, n: np.ndarray, m: Margins) -> bool:
        return (getattr(self, "GL", None) is not None and self.n_shape == n.shape
                and self.GL.shape == m.D.shape and len(m.fcells) <= self.S_joint.shape[1])

    def _rebuild(self, n: np.ndarray, m: Margins) -> None:
        """Everything from the table (``O(C K**2)``), summed in canonical cell order."""
        cf = np.asarray(m.cf, dtype=np.intp)
        K, Fr = len(cf), len(m.fcells)
        F = max(4, 2 * Fr)
        C = n.shape[0]
        L = xlogx(n)
        self.n_shape = n.shape
        self.GL = xlogx(m.D)
        self.S_joint = np.zeros((C, F, F))
        self.S_marg = np.zeros((C, F, F))
        self.T = np.zeros((C, F, F))
        if K:
            # summed in canonical order: the same bits whatever order features and values arrived in
            order, _ = canonical_cells(self.pairs)
            starts = np.flatnonzero(np.r_[True, cf[order][1:] != cf[order][:-1]])
            fids = cf[order][starts]                      # features in canonical order
            block = np.ix_(np.arange(C), fids, fids)

            def grouped(a: np.ndarray) -> np.ndarray:   # [C, K, K] -> [C, F', F'] block sums
                a = a[:, order][:, :, order]
                return np.add.reduceat(np.add.reduceat(a, starts, axis=1), starts, axis=2)

            self.S_joint[block] = grouped(L[:, :K, :K])
            self.T[block] = grouped(n[:, :K, :K])
            Cm = min(C, self.GL.shape[0])
            marg = np.add.reduceat(self.GL[:Cm, :Fr, order], starts, axis=2)   # [C, j, i]
            self.S_marg[np.ix_(np.arange(Cm), fids, np.arange(Fr))] = np.swapaxes(marg, 1, 2)
        self.TL = xlogx(self.T)
