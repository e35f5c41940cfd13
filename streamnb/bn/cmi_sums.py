"""The conditional mutual information of every categorical pair, kept current between relearns.

TAN's weights are ``I(Xi; Xj | Y) = (S_joint + S_class - S_marg[i, j] - S_marg[j, i]) / N_ij``
(:mod:`streamnb.structure.information`), sums of ``t log t`` over the cells of each pair's
table: ``S_joint`` over ``n[y, u, v]``, ``S_marg[i, j]`` over ``G[y, u, j] = sum_{v in X_j}
n[y, u, v]`` for the cells ``u`` of ``i`` (the CPT normalizers ``D`` of
:class:`~streamnb.bn.margins.Margins`), ``S_class`` over the pair totals ``T[y, i, j]``.
Computing them from the table costs ``O(C K**2)`` for ``K`` cells, at every relearn: with
``relearn_every=100`` and 1,000 cells that is most of the cost of an event.

:class:`CMISums` keeps the sums instead. Learning logs each event's class, cells and weight
(``O(d)``); a relearn recomputes ``t log t`` only at the cells those events touched
(``d**2`` per event, vectorized) and adds the differences to the sums, so its cost is that of
the events learned since the last relearn, not of the table. Anything else that changes the
counts (a merge, a decay, a load, growth past the arrays' capacity) makes the next relearn
rebuild the sums from the table, once. The sums then differ from a fresh computation by
rounding only (about 1e-12 relative; ``tests/bn/test_cmi_sums.py``). Plug-in estimates only:
with ``cmi_alpha > 0`` every cell of a pair's table changes with the number of values, and
TAN computes the weights from the table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from streamnb.bn.margins import Margins
from streamnb.stats.pairwise import PairCounts
from streamnb.structure.counted import canonical_cells
from streamnb.structure.information import xlogx

__all__ = ["CMISums"]

#: Counts changes logged at most between two reads; past that the log is dropped and the next
#: read rebuilds (a learner that relearns rarely holds no unbounded log).
MAX_LOG = 4096


class CMISums:
    """Per class and feature pair: ``S_joint``, ``S_marg``, the totals ``T`` and ``T log T``
    (feature ids of ``pairs.features``), with the ``t log t`` caches they were summed from.
    Summed over the classes they give TAN's ``I(Xi; Xj | Y)``, one class at a time the
    per-class Chow-Liu trees' ``I(Xi; Xj)``."""

    def __init__(self, pairs: PairCounts, margins: Margins) -> None:
        self.pairs = pairs
        self.margins = margins
        self._log: list[tuple] = []  # (class ids, cell ids [rows, d], weights) per counts change
        self._changes = -1  # pairs.changes when the sums matched the counts (-1: never)
        self._tables: tuple | None = None  # (key, L, D it was taken for, views): see tables()
        self._l_stale = False  # the compiled path left L behind the counts (a replay rebuilds)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_log"], state["_changes"] = [], -1  # a copy rebuilds at its first read
        state["_tables"] = None  # memoryviews: never copied
        return state

    # -- learning --------------------------------------------------------------------------
    def note(self, k: int, ids: Sequence[int], w: float) -> None:
        """The pair counts just learned one event (one change of ``pairs.changes``)."""
        if self._changes >= 0:
            self._log.append((np.array([k]), np.array([ids], dtype=np.intp), np.array([w], dtype=float)))
            self._bound()

    def note_rows(self, k: np.ndarray, ids: np.ndarray, w: np.ndarray) -> None:
        """The pair counts just learned a batch (``update_many_ids``: one change)."""
        if self._changes >= 0:
            self._log.append((np.asarray(k), np.asarray(ids, dtype=np.intp), np.asarray(w, dtype=float)))
            self._bound()

    def tables(self) -> tuple | None:
        """The arrays one event updates, for the compiled path (``tree_learn``): ``(S_joint,
        S_marg, GL, T, TL)`` as ``(flat view, strides...)``; None if the sums are not kept
        current now (then the event goes uncounted here and the next read rebuilds). After the
        event, call :meth:`counted`."""
        if self._changes < 0 or self.pairs.changes != self._changes + len(self._log):
            return None  # behind the counts: the next read rebuilds
        m = self.margins
        key = (self.pairs.generation, len(m.fcells))
        cached = self._tables
        if cached is not None and cached[0] == key and cached[1] is self.L and cached[2] is m.D:
            return cached[3]
        if not self._fits(self.pairs.raw("n"), m):
            return None
        views = []
        for a in (self.S_joint, self.S_marg, self.GL, self.T, self.TL):
            views.append((memoryview(a.reshape(-1)), *(s // a.itemsize for s in a.strides)))  # type: ignore[arg-type]
        self._tables = (key, self.L, m.D, tuple(views))
        return self._tables[3]

    def counted(self) -> None:
        """The counts and these sums just learned one event together (``tree_learn``, which
        takes the old ``t log t`` of a pair cell from its count, not from ``L``)."""
        self._changes += 1
        self._l_stale = True

    def _bound(self) -> None:
        if len(self._log) > MAX_LOG:
            self._log, self._changes = [], -1

    # -- reading ---------------------------------------------------------------------------
    def _current(self) -> int:
        """Bring the sums up to date with the counts; the number of features."""
        m = self.margins.current()
        n = self.pairs.raw("n")
        if (self._changes < 0 or self.pairs.changes != self._changes + len(self._log)
                or not self._fits(n, m) or (self._log and self._l_stale)):
            self._rebuild(n, m)
        elif self._log:
            self._update(n, m)
        self._log = []
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
        return (getattr(self, "L", None) is not None and self.L.shape == n.shape
                and self.GL.shape == m.D.shape and len(m.fcells) <= self.S_joint.shape[1])

    def _rebuild(self, n: np.ndarray, m: Margins) -> None:
        """Everything from the table (``O(C K**2)``), summed in canonical cell order."""
        cf = np.asarray(m.cf, dtype=np.intp)
        K, Fr = len(cf), len(m.fcells)
        F = max(4, 2 * Fr)
        C = n.shape[0]
        self.L = xlogx(n)
        self.GL = xlogx(m.D)
        self.S_joint = np.zeros((C, F, F))
        self.S_marg = np.zeros((C, F, F))
        self.T = np.zeros((C, F, F))
        if K:
            order, crank = self._canonical(K)
            starts = np.flatnonzero(np.r_[True, cf[order][1:] != cf[order][:-1]])
            fids = cf[order][starts]                      # features in canonical order
            block = np.ix_(np.arange(C), fids, fids)

            def grouped(a: np.ndarray) -> np.ndarray:   # [C, K, K] -> [C, F', F'] block sums
                a = a[:, order][:, :, order]
                return np.add.reduceat(np.add.reduceat(a, starts, axis=1), starts, axis=2)

            self.S_joint[block] = grouped(self.L[:, :K, :K])
            self.T[block] = grouped(n[:, :K, :K])
            Cm = min(C, self.GL.shape[0])
            marg = np.add.reduceat(self.GL[:Cm, :Fr, order], starts, axis=2)   # [C, j, i]
            self.S_marg[np.ix_(np.arange(Cm), fids, np.arange(Fr))] = np.swapaxes(marg, 1, 2)
        self.TL = xlogx(self.T)
        self._l_stale = False

    def _canonical(self, K: int) -> tuple[np.ndarray, np.ndarray]:
        """The cells in canonical order and each cell's position in it: sums taken in this
        order are bit-identical whatever order features and values arrived in."""
        order, _ = canonical_cells(self.pairs)
        crank = np.empty(K, dtype=np.intp)
        crank[order] = np.arange(K)
        return order, crank

    def _update(self, n: np.ndarray, m: Margins) -> None:
        """Add the differences at the cells the logged events touched."""
        cf = np.asarray(m.cf, dtype=np.intp)
        ks, us, vs, ws = [], [], [], []
        for k, ids, w in self._log:
            for r in range(len(ids)):
                row = ids[r][ids[r] >= 0]
                d = len(row)
                ks.append(np.full(d * d, k[r]))
                us.append(np.repeat(row, d))
                vs.append(np.tile(row, d))
                ws.append(np.full(d * d, w[r]))
        if not ks:
            return
        k, u, v, w = np.concatenate(ks), np.concatenate(us), np.concatenate(vs), np.concatenate(ws)
        fu, fv = cf[u], cf[v]
        _, crank = self._canonical(len(cf))
        # joint cells n[k, u, v], added in canonical order (see _canonical)
        cells = np.unique(np.ravel_multi_index((k, u, v), n.shape))
        ck, cu, cv = np.unravel_index(cells, n.shape)
        at = np.lexsort((crank[cv], crank[cu], ck))
        ck, cu, cv = ck[at], cu[at], cv[at]
        new = xlogx(n[ck, cu, cv])
        np.add.at(self.S_joint, (ck, cf[cu], cf[cv]), new - self.L[ck, cu, cv])
        self.L[ck, cu, cv] = new
        # margins G[k, u, j] = D[k, j, u]
        D = m.D
        cells = np.unique(np.ravel_multi_index((k, fv, u), D.shape))
        gk, gj, gu = np.unravel_index(cells, D.shape)
        at = np.lexsort((crank[gu], gj, gk))
        gk, gj, gu = gk[at], gj[at], gu[at]
        new = xlogx(D[gk, gj, gu])
        np.add.at(self.S_marg, (gk, cf[gu], gj), new - self.GL[gk, gj, gu])
        self.GL[gk, gj, gu] = new
        # pair totals T[k, i, j]: each event adds its weight once to each of its feature pairs
        np.add.at(self.T, (k, fu, fv), w)
        cells = np.unique(np.ravel_multi_index((k, fu, fv), self.T.shape))
        tk, ti, tj = np.unravel_index(cells, self.T.shape)
        new = xlogx(self.T[tk, ti, tj])
        self.TL[tk, ti, tj] = new
