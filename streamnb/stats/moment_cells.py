"""One event on the numeric tree's cells (:class:`~streamnb.bn.linear_gaussian.LinearGaussianPart`):
:class:`MomentCells`, a Welford mean and variance per class and feature (with the pooled row,
as :class:`~streamnb.stats.cells.WelfordCells`) and the :class:`~streamnb.stats.CoMoments` of
every pair of features of the event, learned in one call and scored through the tree.

Like :mod:`streamnb.stats.cells`, this plain-Python module is also the source of the compiled
path: the build compiles it with Cython (types in ``moment_cells.pxd``, which takes
:class:`~streamnb.stats.cells.WelfordCells` from the compiled ``cells``), and
:func:`streamnb.kernels.compiled` gives the compiled module only if it was built from this very
file and ``cells``. Both run the same floating-point operations in the same order: the same
bits.

The views: the Welford ones as :class:`~streamnb.stats.cells.WelfordCells`; the co-moments'
four flat views share their strides, cell ``(k, a, b)`` at ``k * s0 + a * s1 + b * s2``.

**Log slots** (:mod:`streamnb.bn.scales`): ``scales`` is None (no log slots), or a bytearray,
one byte per feature id: 0 no log slot (or the id is a log slot), 1 the feature has its
log slot at id + 1 and stands on its linear scale, 2 it stands on its log scale.

Every method reads the whole event and checks every cell it touches before it changes anything;
None, having changed nothing, for an event the caller must take through its general path.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from streamnb.stats.cells import WelfordCells
from streamnb.stats.gaussian_density import log_density
from streamnb.stats.welford import comoment

__all__ = ["PRIOR", "TINY", "MomentCells"]

#: The pseudo-event shrinking a residual variance (as :data:`streamnb.bn.gaussian_pairs.PRIOR`).
PRIOR = 1.0
#: The smallest variance of a term (as :data:`streamnb.bn.gaussian_terms.TINY`).
TINY = 1e-300


class MomentCells(WelfordCells):
    """The Welford views of :class:`~streamnb.stats.cells.WelfordCells` and the co-moments'
    views ``cn, cm, cs, cc`` (weight, mean, ``M2``, co-moment) with their strides."""

    def __init__(self, n: Any, mean: Any, m2: Any, n0: int, n1: int, pn: Any, pmean: Any, pm2: Any, p1: int,
                 cn: Any, cm: Any, cs: Any, cc: Any, s0: int, s1: int, s2: int) -> None:
        super().__init__(n, mean, m2, n0, n1, pn, pmean, pm2, p1)
        self.cn, self.cm, self.cs, self.cc, self.s0, self.s1, self.s2 = cn, cm, cs, cc, s0, s1, s2
        self.par = array("q")  # per entry read, its parent's id (-1: none)
        self.parx = array("d")  # and the parent's value
        self.jac = array("d")  # log1p of the value of an entry read on its log scale, else 0

    def grow(self, size: int) -> None:
        """Room for ``size`` entries in every per-entry array."""
        if size > len(self.xs):
            self.ids = array("q", bytes(8 * size))
            self.xs = array("d", bytes(8 * size))
        if size > len(self.jac):
            self.par = array("q", bytes(8 * size))
            self.parx = array("d", bytes(8 * size))
            self.jac = array("d", bytes(8 * size))

    # -- learning --------------------------------------------------------------------------
    def learn_moments(self, x: dict, ids: dict, k: int, w: float, spread: list, top: float | None,
                      top_id: int, exclude: dict | None, raw: bool, limit: int,
                      scales: bytearray | None) -> tuple[float | None, int] | None:
        """Learn the event ``x`` (every feature known) of class ``k`` with weight ``w``: its
        features and the log slots of its values (:meth:`add_log_slots`) into the Welford cells
        (:meth:`~streamnb.stats.cells.WelfordCells.update`, the features tracked in ``spread``,
        not their log slots), then the co-moments of every pair of them with id below
        ``limit``. ``(top, top_id)`` as ``update`` answers; None if it is not plain."""
        if not (w > 0.0 and math.isfinite(w)) or not x:
            return None
        if scales is not None and type(scales) is not bytearray:
            raise TypeError("streamnb: the scales are a bytearray")
        self.grow(2 * len(x))
        if self.read(x, ids, exclude, raw, False) != 0:
            return None
        read = self.size
        if scales is not None and not self.add_log_slots(scales):
            return None
        self.check_pairs(k, limit)
        got = self.update(k, w, spread, top, top_id, read)
        self.add_pairs(k, w, limit)
        return got

    def add_log_slots(self, scales: bytearray) -> bool:
        """After the entries read, each value >= 0 of a feature with a log slot as ``(id + 1,
        log1p(value))``, in order, while the slot has the feature's pooled weight (after a
        value below 0 the slot is empty and learns nothing). False (nothing changed but the
        event read) if a feature is newer than ``scales``, its slot is outside the pooled
        views, or its first value below 0 is here (the caller's path empties the slot)."""
        ev_ids, ev_xs, PN, p1 = self.ids, self.xs, self.pn, self.p1
        size, ns, n_pooled = self.size, len(scales), len(self.pn)
        out = size
        for f in range(size):
            j = ev_ids[f]
            if j < 0 or j * p1 >= n_pooled:
                raise IndexError("streamnb: a feature outside its cells")
            if j >= ns:
                return False
            if not scales[j]:
                continue
            q = (j + 1) * p1
            if q >= n_pooled:
                return False
            slot = PN[q]
            feature = PN[j * p1]
            if slot < feature:  # emptied: a value below 0 came before
                continue
            v = ev_xs[f]
            if v >= 0.0:
                ev_ids[out] = j + 1
                ev_xs[out] = math.log1p(v)
                out += 1
            elif feature > 0.0:
                return False
        self.size = out
        return True

    def check_pairs(self, k: int, limit: int) -> None:
        """The co-moment cells of class ``k`` of the event read: an IndexError if one is outside
        the views."""
        ev_ids = self.ids
        top = -1
        for f in range(self.size):
            j = ev_ids[f]
            if j < limit and j > top:
                top = j
        if top >= 0:
            i = k * self.s0 + top * (self.s1 + self.s2)
            if k < 0 or i >= len(self.cn) or i >= len(self.cm) or i >= len(self.cs) or i >= len(self.cc):
                raise IndexError("streamnb: a pair outside its co-moments")

    def add_pairs(self, k: int, w: float, limit: int) -> None:
        """Chan's formula for one event on every pair ``(a, b)`` of the event read (cells
        checked) with ids below ``limit`` (the event is compacted to them): ``n += w``, ``mean
        += d_ab w / n``, ``m2 += d_ab**2 n_a w / n``, ``c += d_ab d_ba n_a w / n`` with ``d_ab
        = x_a - mean[k, a, b]`` (:func:`~streamnb.stats.welford.comoment`), as
        :meth:`~streamnb.stats.CoMoments.update_ids`. A pair's two
        cells share the weight of ``(a, b)``."""
        ev_ids, ev_xs = self.ids, self.xs
        d = 0
        for f in range(self.size):
            if ev_ids[f] < limit:
                ev_ids[d] = ev_ids[f]
                ev_xs[d] = ev_xs[f]
                d += 1
        self.size = d
        N, M, S, C, s1, s2 = self.cn, self.cm, self.cs, self.cc, self.s1, self.s2
        base = k * self.s0
        last = 0.0  # the pairs mostly share their weight: the last step kept, reused for the same n_a > 0
        n = frac = kk = 0.0
        for f in range(d):
            a = ev_ids[f]
            xa = ev_xs[f]
            row = base + a * s1
            col = a * s2
            for g in range(f, d):
                b = ev_ids[g]
                ab = row + b * s2
                n_a = N[ab]
                if not (n_a == last and n_a > 0.0):  # (the same operands: the same results)
                    last = n_a
                    n = n_a + w
                    frac = w / n
                    kk = n_a * frac
                if g == f:
                    da = xa - M[ab]
                    M[ab] += da * frac
                    S[ab] = comoment(S[ab], da, da, kk)
                    C[ab] = comoment(C[ab], da, da, kk)
                    N[ab] = n
                else:
                    ba = base + b * s1 + col
                    dab = xa - M[ab]
                    dba = ev_xs[g] - M[ba]
                    M[ab] += dab * frac
                    M[ba] += dba * frac
                    S[ab] = comoment(S[ab], dab, dab, kk)
                    S[ba] = comoment(S[ba], dba, dba, kk)
                    C[ab] = comoment(C[ab], dab, dba, kk)
                    C[ba] = comoment(C[ba], dba, dab, kk)
                    N[ab] = n
                    N[ba] = n

    # -- scoring ---------------------------------------------------------------------------
    def joint_tree(self, x: dict, ids: dict, parents: list, exclude: dict | None, raw: bool,
                   eps: float, n_classes: int, scales: bytearray | None) -> list | None:
        """The log-likelihood per class of the event ``x`` through the tree: the exact sum
        (``math.fsum``) over its known features of ``log N(x_j; a + b x_p, s2)`` for a feature
        with a numeric parent ``p`` (the least-squares line of ``x_j`` on ``x_p`` and its
        shrunk residual variance, :func:`~streamnb.bn.gaussian_terms.regression_line`) and
        ``log N(x_j; mean, var)`` for a root (:func:`~streamnb.bn.gaussian_terms.root_gaussian`).
        ``parents``: per feature id, -1 (the class only), -2 (a categorical parent) or the
        parent's id, by slot. A feature on its log scale is read as its log slot, its term less
        ``log1p(x)``. None if ``x`` is not plain, or a feature's parent is missing or
        categorical (the caller's path sums it out or has that term)."""
        if n_classes < 1 or not x:
            return None
        if scales is not None and type(scales) is not bytearray:
            raise TypeError("streamnb: the scales are a bytearray")
        self.grow(len(x))
        if self.read(x, ids, exclude, raw, False) < 0:
            return None
        if not self.use_log_slots(scales):
            return None
        if not self.find_parents(parents):
            return None
        self.check_tree(n_classes)
        return self.tree_scores(n_classes, eps)

    def use_log_slots(self, scales: bytearray | None) -> bool:
        """Each entry read on its log scale as its log slot ``(id + 1, log1p(value))`` with
        :attr:`jac` ``log1p(value)``, or dropped if its value is below 0 (outside that scale);
        :attr:`jac` 0 for the others. False if a feature is newer than ``scales``."""
        ev_ids, ev_xs, jac = self.ids, self.xs, self.jac
        has = scales is not None
        ns = len(scales) if scales is not None else 0
        d = 0
        for f in range(self.size):
            j = ev_ids[f]
            v = ev_xs[f]
            t = 0.0
            if has:
                if j < 0 or j >= ns:
                    return False
                if scales[j] == 2:  # type: ignore[index]
                    if not v >= 0.0:
                        continue
                    j += 1
                    v = t = math.log1p(v)
            ev_ids[d] = j
            ev_xs[d] = v
            jac[d] = t
            d += 1
        self.size = d
        return True

    def find_parents(self, parents: list) -> bool:
        """Each entry's parent (:attr:`par`, -1 the class only) and its value (:attr:`parx`);
        False if one has a categorical parent or a numeric one not in the event."""
        ev_ids, ev_xs, par, parx = self.ids, self.xs, self.par, self.parx
        size, n_pa = self.size, len(parents)
        for f in range(size):
            j = ev_ids[f]
            if j < 0 or j >= n_pa:
                return False
            p = parents[j]
            if p < -1:  # a categorical parent: its part has this term
                return False
            par[f] = p
            if p >= 0:
                q = 0
                while q < size and ev_ids[q] != p:
                    q += 1
                if q == size:  # the parent is missing: summed out on the caller's path
                    return False
                parx[f] = ev_xs[q]
        return True

    def check_tree(self, n_classes: int) -> None:
        """Every cell the terms read, for classes ``0 .. n_classes - 1``: an IndexError if one
        is outside the views (strides are >= 0: a cell at the largest ids is the farthest)."""
        ev_ids, par = self.ids, self.par
        top = 0  # the largest id
        pair = -1  # the largest id of a pair (j, p)
        for f in range(self.size):
            j = ev_ids[f]
            p = par[f]
            if j > top:
                top = j
            if p >= 0:
                if p > top:
                    top = p
                if p > pair:
                    pair = p
                if j > pair:
                    pair = j
        last = n_classes - 1
        i = last * self.n0 + top * self.n1
        q = top * self.p1
        if (i >= len(self.n) or i >= len(self.mean) or i >= len(self.m2) or q >= len(self.pn)
                or q >= len(self.pmean) or q >= len(self.pm2)):
            raise IndexError("streamnb: a feature outside its cells")
        if pair >= 0:
            i = last * self.s0 + pair * (self.s1 + self.s2)
            if i >= len(self.cn) or i >= len(self.cm) or i >= len(self.cs) or i >= len(self.cc):
                raise IndexError("streamnb: a pair outside its co-moments")

    def tree_scores(self, n_classes: int, eps: float) -> list:
        """Per class, the exact sum of the terms of the entries (cells checked)."""
        ev_ids, ev_xs, par, parx, jac = self.ids, self.xs, self.par, self.parx, self.jac
        N, M, S, PN, PM, PS = self.n, self.mean, self.m2, self.pn, self.pmean, self.pm2
        CN, CM, CS, CC, s0, s1, s2 = self.cn, self.cm, self.cs, self.cc, self.s0, self.s1, self.s2
        n1, p1 = self.n1, self.p1
        out = [0.0] * n_classes
        terms = [0.0] * self.size
        for k in range(n_classes):
            row = k * self.n0
            for f in range(self.size):
                j = ev_ids[f]
                p = par[f]
                mean = 0.0
                var = 1.0
                have = True
                if p < 0 or CN[k * s0 + j * s1 + p * s2] <= 0.0:  # the root's Gaussian
                    i = row + j * n1
                    n = N[i]
                    if n > 0.0:
                        mean = M[i]
                        var = S[i] / n + eps
                        var = TINY if TINY > var else var  # max(var, TINY)
                    elif PN[j * p1] > 0.0:
                        i = j * p1
                        mean = PM[i]
                        var = PS[i] / PN[i] + eps
                        var = TINY if TINY > var else var
                    else:
                        have = False
                    if p < 0 and not have:  # no estimate: no information
                        terms[f] = 0.0
                        continue
                    if p >= 0:  # a line without co-observed events: b = 0
                        mean = mean + 0.0 * parx[f]
                else:  # the least-squares line of x_j on x_p
                    jp = k * s0 + j * s1 + p * s2
                    pj = k * s0 + p * s1 + j * s2
                    n = CN[jp]
                    i = row + j * n1
                    v_j = S[i] / N[i] if N[i] > 0.0 else 0.0
                    spp = CS[pj]
                    cjp = CC[jp]
                    b = cjp / spp if spp > 0.0 else 0.0
                    a = CM[jp] - b * CM[pj]
                    rss = CS[jp] - b * cjp
                    if 0.0 > rss:  # max(rss, 0.0)
                        rss = 0.0
                    var = (rss + PRIOR * v_j) / (n + PRIOR) + eps
                    var = TINY if TINY > var else var
                    mean = a + b * parx[f]
                d = ev_xs[f] - mean
                terms[f] = log_density(d, var) - jac[f]
            out[k] = math.fsum(terms)
        return out
