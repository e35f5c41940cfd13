"""One event on the pair counts of a tree learner (TAN, per-class Chow-Liu), the per-event path
of :class:`~streamnb.bn.tree_part.TreePart`: :class:`PairCells` learns an event of categories
into the pair counts ``n[k, a, b]`` (:class:`~streamnb.stats.pairwise.PairCounts`) and the CPT
normalizers ``D[k, j, b]``, ``T[k, j]`` (:class:`~streamnb.bn.margins.Margins`), and with
:class:`SumCells` the entropy sums kept between relearns (:class:`~streamnb.bn.cmi_sums.CMISums`);
it also scores an event whose features all have their parent observed.

This plain-Python module is also the source of the compiled path: the build compiles it with
Cython (the C types are in ``pair_cells.pxd`` beside it), and :func:`streamnb.kernels.compiled`
gives the compiled module only if it was built from this very file. Both run the same
floating-point operations in the same order (the build turns fused multiply-add off), so they
give the same bits.

Every method reads the whole event and checks every cell it touches before it changes
anything: an event the caller must take through its general path (a value that is not a plain
category, a cell never seen, a parent to sum out) gets None (or False), having changed nothing;
ids outside the views (views and ids that disagree: a bug) raise IndexError before any write.
The views come from :meth:`~streamnb.stats.base.Statistic.flat` (and the margins' own) and are
valid while the arrays keep their generation: the owner makes a new object after that.
"""

from __future__ import annotations

import math
from array import array
from math import fsum
from typing import Any

from streamnb.stats.category_cells import Categories
from streamnb.stats.lidstone import lidstone_one, smoothed

__all__ = ["PairCells", "SumCells", "xlogx"]


#: ``log(i) * i`` for the whole numbers below its length (counts mostly are), by the same
#: expression as :func:`xlogx`'s.
_TABLE = array("d", [0.0] + [math.log(i) * i for i in range(1, 1 << 16)])


def xlogx(t: float) -> float:
    """``t log t``, 0 for ``t <= 0`` (as :func:`streamnb.structure.information.xlogx`).

    >>> xlogx(0.0), xlogx(1.0), xlogx(2.0) == 2.0 * math.log(2.0), xlogx(2.5) == math.log(2.5) * 2.5
    (0.0, 0.0, True, True)
    """
    if 0.0 <= t < 65536.0:
        i = int(t)
        if i == t:
            return _TABLE[i]
    return math.log(t) * t if t > 0.0 else 0.0


class SumCells:
    """The flat views of the sums one event changes (:meth:`CMISums.tables`), each with its
    three element strides: ``S_joint[k, i, j]``, ``S_marg[k, j, i]``, ``GL[k, j, c]`` (the
    ``t log t`` of ``D``), the pair totals ``P[k, i, j]`` and their ``t log t``, ``PL``."""

    def __init__(self, sj: Any, j0: int, j1: int, j2: int, sm: Any, m0: int, m1: int, m2: int,
                 gl: Any, g0: int, g1: int, g2: int, p: Any, p0: int, p1: int, p2: int,
                 pl: Any, l0: int, l1: int, l2: int) -> None:
        self.sj, self.j0, self.j1, self.j2 = sj, j0, j1, j2
        self.sm, self.m0, self.m1, self.m2 = sm, m0, m1, m2
        self.gl, self.g0, self.g1, self.g2 = gl, g0, g1, g2
        self.p, self.p0, self.p1, self.p2 = p, p0, p1, p2
        self.pl, self.l0, self.l1, self.l2 = pl, l0, l1, l2
        if min(j0, j1, j2, m0, m1, m2, g0, g1, g2, p0, p1, p2, l0, l1, l2) < 0:
            raise ValueError("streamnb: a negative stride")

    def check(self, k: int, fmax: int, amax: int) -> None:
        """An IndexError unless the cells of class ``k`` up to feature ``fmax`` and cell ``amax``
        are inside the views."""
        if (k * self.j0 + fmax * (self.j1 + self.j2) >= len(self.sj)
                or k * self.m0 + fmax * (self.m1 + self.m2) >= len(self.sm)
                or k * self.g0 + fmax * self.g1 + amax * self.g2 >= len(self.gl)
                or k * self.p0 + fmax * (self.p1 + self.p2) >= len(self.p)
                or k * self.l0 + fmax * (self.l1 + self.l2) >= len(self.pl)):
            raise IndexError("streamnb: a cell outside its sums")


class PairCells(Categories):
    """The flat views of the pair counts (cell ``(k, a, b)`` at ``n[k * n0 + a * n1 + b * n2]``)
    and of the normalizers (``D[k * d0 + j * d1 + b * d2]``, ``T[k * t0 + j * t1]``), over an
    event read (:class:`~streamnb.stats.category_cells.Categories`: cell ids in :attr:`cats`, their
    feature ids in :attr:`ids`)."""

    def __init__(self, n: Any, n0: int, n1: int, n2: int, d: Any, d0: int, d1: int, d2: int,
                 t: Any, t0: int, t1: int) -> None:
        self.n, self.n0, self.n1, self.n2 = n, n0, n1, n2
        self.d, self.d0, self.d1, self.d2 = d, d0, d1, d2
        self.t, self.t0, self.t1 = t, t0, t1
        if min(n0, n1, n2, d0, d1, d2, t0, t1) < 0:
            raise ValueError("streamnb: a negative stride")
        self.par = array("q")  # the parent's cell per entry (joint)
        self.memo = array("d")  # a normalizer's last value per entry, and its t log t (add)
        self.memo_x = array("d")
        self.amax = self.fmax = 0  # the largest cell id and feature id of the event read (check)
        super().__init__()

    def grow(self, size: int) -> None:
        """Room for an event of ``size`` entries: the read's, then the parents' and memos'."""
        Categories.grow(self, size)
        if size > len(self.par):
            self.par = array("q", bytes(8 * size))
            self.memo = array("d", bytes(8 * size))
            self.memo_x = array("d", bytes(8 * size))

    def read_cells(self, x: dict, cell_ids: dict, cf: list, exclude: dict | None, strings_only: bool) -> bool:
        """Read the event ``x`` (feature: category) with the cell ids ``cell_ids`` and their
        feature ids ``cf``; whether it is plain (:meth:`read_categories`) with every cell known."""
        if not self.read_categories(x, cell_ids, None, exclude, strings_only):
            return False
        ev_ids, ev_fids = self.cats, self.ids
        n_cf = len(cf)
        for i in range(self.size):
            cid = ev_ids[i]
            if cid < 0 or cid >= n_cf:  # a value never seen (or not in the margins yet)
                return False
            ev_fids[i] = cf[cid]
        return True

    def check(self, rows: int) -> None:
        """Every cell of the event read, for classes ``0 .. rows - 1``: an IndexError if one is
        outside the views; the largest feature id and cell id kept in :attr:`fmax` and
        :attr:`amax`."""
        ev_ids, ev_fids = self.cats, self.ids
        amax = fmax = 0
        for i in range(self.size):
            if ev_ids[i] < 0 or ev_fids[i] < 0:
                raise IndexError("streamnb: a negative cell or feature id")
            amax = ev_ids[i] if ev_ids[i] > amax else amax
            fmax = ev_fids[i] if ev_fids[i] > fmax else fmax
        k = rows - 1
        if (k < 0 or k * self.n0 + amax * (self.n1 + self.n2) >= len(self.n)
                or k * self.d0 + fmax * self.d1 + amax * self.d2 >= len(self.d)
                or k * self.t0 + fmax * self.t1 >= len(self.t)):
            raise IndexError("streamnb: a cell outside its statistic")
        self.amax, self.fmax = amax, fmax

    def add(self, k: int, w: float, sums: SumCells | None) -> None:
        """Learn the event read with class ``k``, weight ``w`` (its cells distinct): ``n[k, a, b]
        += w`` for every two of its cells (the table is symmetric: each unordered pair once,
        mirrored), the normalizers ``D[k, f(a), b] += w``, ``T[k, f(a)] += w`` (Margins); with
        ``sums``, ``S_joint[k, f(a), f(b)] += xlogx(n) - xlogx(n - w)``, ``P[k, f(a), f(b)] +=
        w``, ``PL = xlogx(P)``, and ``S_marg[k, f(b), f(a)]`` over ``D`` (its old ``t log t``
        kept in ``GL``). Every cell is checked before anything changes."""
        size = self.size
        ev_ids, ev_fids = self.cats, self.ids
        self.check(k + 1)
        if sums is not None:
            sums.check(k, self.fmax, self.amax)
        N, n0, n1, n2 = self.n, k * self.n0, self.n1, self.n2
        D, d0, d1, d2 = self.d, k * self.d0, self.d1, self.d2
        T, t0, t1 = self.t, k * self.t0, self.t1
        on = sums is not None
        SJ = SM = GL = P = PL = N  # the sums' views, if any (else never read)
        j0 = j1 = j2 = m0 = m1 = m2 = g0 = g1 = g2 = p0 = p1 = p2 = l0 = l1 = l2 = 0
        if sums is not None:
            SJ, j0, j1, j2 = sums.sj, k * sums.j0, sums.j1, sums.j2
            SM, m0, m1, m2 = sums.sm, k * sums.m0, sums.m1, sums.m2
            GL, g0, g1, g2 = sums.gl, k * sums.g0, sums.g1, sums.g2
            P, p0, p1, p2 = sums.p, k * sums.p0, sums.p1, sums.p2
            PL, l0, l1, l2 = sums.pl, k * sums.l0, sums.l1, sums.l2
        for i in range(size):
            a, fa = ev_ids[i], ev_fids[i]
            for j in range(i, size):
                b, fb = ev_ids[j], ev_fids[j]
                c = n0 + a * n1 + b * n2
                old = N[c]
                now = old + w
                N[c] = now
                if j != i:
                    N[n0 + b * n1 + a * n2] = now
                if on:
                    delta = xlogx(now) - xlogx(old)
                    SJ[j0 + fa * j1 + fb * j2] += delta
                    c = p0 + fa * p1 + fb * p2
                    pt = P[c] + w
                    px = xlogx(pt)
                    P[c] = pt
                    PL[l0 + fa * l1 + fb * l2] = px
                    if j != i:
                        SJ[j0 + fb * j1 + fa * j2] += delta
                        P[p0 + fb * p1 + fa * p2] = pt
                        PL[l0 + fb * l1 + fa * l2] = px
        memo, memo_x = self.memo, self.memo_x
        for j in range(size):
            memo[j] = -1.0
        for i in range(size):
            fa = ev_fids[i]
            for j in range(size):
                b = ev_ids[j]
                c = d0 + fa * d1 + b * d2
                dv = D[c] + w
                D[c] = dv
                if on:
                    # the margins D[k, ., b] of a cell mostly take one value across an event's
                    # features (every one, when nothing is missing): their t log t is reused
                    if memo[j] == dv:
                        tx = memo_x[j]
                    else:
                        tx = xlogx(dv)
                        memo[j] = dv
                        memo_x[j] = tx
                    c = g0 + fa * g1 + b * g2
                    SM[m0 + ev_fids[j] * m1 + fa * m2] += tx - GL[c]
                    GL[c] = tx
            T[t0 + fa * t1] += w

    def learn(self, x: dict, cell_ids: dict, cf: list, exclude: dict | None, strings_only: bool, k: int,
              w: float, sums: SumCells | None) -> bool:
        """Learn the event ``x`` with class ``k`` and weight ``w`` (:meth:`add`); False, having
        changed nothing, if it is not plain or has a cell not known yet."""
        if not (w > 0.0 and math.isfinite(w)) or not x:
            return False
        if not self.read_cells(x, cell_ids, cf, exclude, strings_only):
            return False
        self.add(k, w, sums)
        return True

    def learn_ids(self, ids: list, fids: list, k: int, w: float, sums: SumCells | None) -> None:
        """Learn an event already read and registered: its cell ids and their feature ids
        (:meth:`take`, then :meth:`add`)."""
        if not (w > 0.0 and math.isfinite(w)):
            raise ValueError("streamnb: expected a finite weight above 0")
        self.take(fids, ids)
        self.add(k, w, sums)

    def parents(self, pa: list, n_nv: int) -> bool:
        """Each entry's parent cell in :attr:`par` (-1: a root), the parent feature ids ``pa``
        (-1: none) given per feature; False if a feature has no parent entry or no count of
        values (``n_nv``), or its parent is missing (summed out on the general path)."""
        ev_ids, ev_fids, par = self.cats, self.ids, self.par
        size = self.size
        n_pa = len(pa)
        for i in range(size):
            j = ev_fids[i]
            if j >= n_pa or j >= n_nv:
                return False
            p = pa[j]
            par[i] = -1
            if p >= 0:
                for q in range(size):
                    if ev_fids[q] == p:
                        par[i] = ev_ids[q]
                        break
                if par[i] < 0:
                    return False
        return True

    def joint(self, x: dict, cell_ids: dict, cf: list, exclude: dict | None, strings_only: bool, parents: list,
              nv: list, alpha: float, n_classes: int, prior: float) -> list | None:
        """The log-likelihood per class of the event ``x``, whose observed features must all
        have their parent observed (None otherwise, or if it is not plain or has a cell not
        known): per class ``y`` the exact sum (:func:`math.fsum`) over its features ``j`` of
        :func:`~streamnb.stats.lidstone.lidstone_one` of ``n[y, j, p]`` over ``D[y, f(j), p]``,
        ``p`` the parent's cell, or of ``n[y, j, j]`` over ``T[y, f(j)]`` for a root, with
        ``|X_j|`` values. With ``prior`` s > 0 a feature with a parent is smoothed toward its
        marginal given the class (:func:`~streamnb.stats.lidstone.smoothed`).

        ``parents``: one list of parent feature ids (-1: none) shared by every class, or one per
        class; ``nv``: ``|X_j|`` per feature id (floats)."""
        groups = len(parents)
        if not alpha > 0.0 or n_classes < 1 or not x or (groups != 1 and groups != n_classes):
            return None
        if not self.read_cells(x, cell_ids, cf, exclude, strings_only):
            return None
        size = self.size
        ev_ids, ev_fids, par = self.cats, self.ids, self.par
        self.check(n_classes)
        N, n0, n1, n2 = self.n, self.n0, self.n1, self.n2
        D, d0, d1, d2 = self.d, self.d0, self.d1, self.d2
        T, t0, t1 = self.t, self.t0, self.t1
        n_nv = len(nv)
        out = [0.0] * n_classes
        terms = [0.0] * size
        for c in range(n_classes):
            if (c == 0 or groups > 1) and not self.parents(parents[0 if groups == 1 else c], n_nv):
                return None
            for i in range(size):
                a, j, b = ev_ids[i], ev_fids[i], par[i]
                if type(nv[j]) is not float:
                    return None
                v = float(nv[j])
                if b < 0:
                    terms[i] = lidstone_one(N[c * n0 + a * (n1 + n2)], T[c * t0 + j * t1], alpha, v, 0.0)
                elif prior > 0.0:
                    terms[i] = smoothed(N[c * n0 + a * n1 + b * n2], D[c * d0 + j * d1 + b * d2],
                                        N[c * n0 + a * (n1 + n2)], T[c * t0 + j * t1], alpha, v, prior)
                else:
                    terms[i] = lidstone_one(N[c * n0 + a * n1 + b * n2], D[c * d0 + j * d1 + b * d2], alpha, v, 0.0)
            out[c] = fsum(terms)
        return out
