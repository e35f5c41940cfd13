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
from streamnb.structure.information import xlogx

__all__ = ["CMISums"]

#: Counts changes logged at most between two reads; past that the log is dropped and the next
#: read rebuilds (a learner that relearns rarely holds no unbounded log).
MAX_LOG = 4096


class CMISums:
    """Per feature pair: ``S_joint``, ``S_marg``, ``S_class`` and ``N`` (feature ids of
    ``pairs.features``), with the ``t log t`` caches they were summed from."""

    def __init__(self, pairs: PairCounts, margins: Margins) -> None:
        self.pairs = pairs
        self.margins = margins
        self._log: list[tuple] = []  # (class ids, cell ids [rows, d], weights) per counts change
        self._changes = -1  # pairs.changes when the sums matched the counts (-1: never)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_log"], state["_changes"] = [], -1  # a copy rebuilds at its first read
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

    def _bound(self) -> None:
        if len(self._log) > MAX_LOG:
            self._log, self._changes = [], -1

    # -- reading ---------------------------------------------------------------------------
    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(I(Xi; Xj | Y) [F, F], co-observed weight N [F, F])`` over ``pairs.features``."""
        m = self.margins.current()
        n = self.pairs.raw("n")
        if (self._changes < 0 or self.pairs.changes != self._changes + len(self._log)
                or not self._fits(n, m)):
            self._rebuild(n, m)
        elif self._log:
            self._update(n, m)
        self._log = []
        self._changes = self.pairs.changes
        F = len(m.fcells)
        sj, sm, sc, tot = self.S_joint[:F, :F], self.S_marg[:F, :F], self.S_class[:F, :F], self.N[:F, :F]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(tot > 0, (sj + sc - sm - sm.T) / tot, 0.0)
        out = np.maximum(out, 0.0)
        upper = np.triu(out, 1)
        return upper + upper.T, tot.copy()

    def _fits(self, n: np.ndarray, m: Margins) -> bool:
        return (getattr(self, "L", None) is not None and self.L.shape == n.shape
                and self.GL.shape == m.D.shape and len(m.fcells) <= self.S_joint.shape[0])

    def _rebuild(self, n: np.ndarray, m: Margins) -> None:
        """Everything from the table (``O(C K**2)``)."""
        cf = np.asarray(m.cf, dtype=np.intp)
        K, Fr = len(cf), len(m.fcells)
        F = max(4, 2 * Fr)
        hot = np.zeros((K, F))
        hot[np.arange(K), cf] = 1.0
        self.L = xlogx(n)
        self.GL = xlogx(m.D)
        self.S_joint = hot.T @ self.L[:, :K, :K].sum(axis=0) @ hot
        self.S_marg = np.zeros((F, F))
        self.S_marg[:, :Fr] = hot.T @ self.GL[:, :Fr, :K].sum(axis=0).T   # [i, j]: cells u of i
        self.T = np.zeros((n.shape[0], F, F))
        self.T[:, :, :] = np.einsum("ui,cuv,vj->cij", hot, n[:, :K, :K], hot)
        self.TL = xlogx(self.T)
        self.S_class = self.TL.sum(axis=0)
        self.N = self.T.sum(axis=0)

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
        # joint cells n[k, u, v]
        cells = np.unique(np.ravel_multi_index((k, u, v), n.shape))
        ck, cu, cv = np.unravel_index(cells, n.shape)
        new = xlogx(n[ck, cu, cv])
        np.add.at(self.S_joint, (cf[cu], cf[cv]), new - self.L[ck, cu, cv])
        self.L[ck, cu, cv] = new
        # margins G[k, u, j] = D[k, j, u]
        D = m.D
        cells = np.unique(np.ravel_multi_index((k, fv, u), D.shape))
        gk, gj, gu = np.unravel_index(cells, D.shape)
        new = xlogx(D[gk, gj, gu])
        np.add.at(self.S_marg, (cf[gu], gj), new - self.GL[gk, gj, gu])
        self.GL[gk, gj, gu] = new
        # pair totals T[k, i, j]: each event adds its weight once to each of its feature pairs
        np.add.at(self.T, (k, fu, fv), w)
        np.add.at(self.N, (fu, fv), w)
        cells = np.unique(np.ravel_multi_index((k, fu, fv), self.T.shape))
        tk, ti, tj = np.unravel_index(cells, self.T.shape)
        new = xlogx(self.T[tk, ti, tj])
        np.add.at(self.S_class, (ti, tj), new - self.TL[tk, ti, tj])
        self.TL[tk, ti, tj] = new
