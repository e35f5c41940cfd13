"""One event of categories on flat cells: :class:`Categories` reads it once (feature ids and
the cells of ``(feature, value)``), :class:`CategoryCells` scores and learns it on a categorical
naive Bayes table (CategoricalNB), and :class:`~streamnb.stats.pair_cells.PairCells` on a tree's
pair counts.

This plain-Python module is also the source of the compiled path: the build compiles it with
Cython (the C types are in ``category_cells.pxd`` beside it; its base class comes from the
compiled :mod:`streamnb.stats.cells`), and :func:`streamnb.kernels.compiled` gives the compiled
module only if it was built from this very file. Both give the same bits; every method checks
every cell it touches before it changes anything (see :mod:`streamnb.stats.cells`).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from streamnb.stats.cells import Event
from streamnb.stats.lidstone import lidstone_one

__all__ = ["Categories", "CategoryCells"]


class Categories(Event):
    """An event of categories read: per entry, its feature id in :attr:`ids` and its category's
    cell id in :attr:`cats` (-1 where unknown), the first :attr:`size` entries of each; a
    category's cell key is ``(feature, value)``. Shared by the naive Bayes tables and the tree's
    pair counts (:class:`~streamnb.stats.pair_cells.PairCells`)."""

    def __init__(self) -> None:
        self.cats = array("q")
        super().__init__()

    def grow(self, size: int) -> None:
        """Room for an event of ``size`` entries."""
        if size > len(self.cats):
            self.ids = array("q", bytes(8 * size))
            self.cats = array("q", bytes(8 * size))

    def read_categories(self, x: dict, cell_ids: dict, feat_ids: dict | None, exclude: dict | None,
                        strings_only: bool) -> bool:
        """Read the event ``x`` (feature: category); whether it is plain: ``str`` keys not in
        ``exclude``, and ``str`` values, or ``int`` ones (not ``bool``) unless ``strings_only``
        (a learner that takes ints as numbers). Without ``feat_ids`` the feature ids are left
        to the caller."""
        self.grow(len(x))
        ev_ids, ev_cats = self.ids, self.cats
        size = self.size = 0  # (an event not plain leaves none read)
        for key, value in x.items():
            if type(key) is not str or not (type(value) is str or (type(value) is int and not strings_only)):
                return False
            if exclude is not None and key in exclude:
                return False
            if feat_ids is not None:
                ev_ids[size] = feat_ids.get(key, -1)
            ev_cats[size] = cell_ids.get((key, value), -1)
            size += 1
        self.size = size
        return True

    def take(self, feat_ids: list, cell_ids: list) -> None:
        """Take an event already read by the caller: per entry its feature id and cell id (-1
        where unknown)."""
        size = len(feat_ids)
        if len(cell_ids) != size:
            raise ValueError("streamnb: feature ids and cell ids of different lengths")
        self.grow(size)
        ev_ids, ev_cats = self.ids, self.cats
        for f in range(size):
            ev_ids[f] = feat_ids[f]
            ev_cats[f] = cell_ids[f]
        self.size = size


class CategoryCells(Categories):
    """The flat views of a class-by-(feature, category) :class:`~streamnb.stats.Counts` (cell
    ``(c, v)`` at ``counts[c * c0 + v * c1]``) and of the class-by-feature totals (``(c, f)`` at
    ``totals[c * t0 + f * t1]``: the class's events in which ``f`` was observed), over an event
    read (:class:`Categories`)."""

    def __init__(self, counts: Any, c0: int, c1: int, totals: Any, t0: int, t1: int) -> None:
        self.counts, self.c0, self.c1, self.totals, self.t0, self.t1 = counts, c0, c1, totals, t0, t1
        super().__init__()

    def check(self, rows: int) -> None:
        """Every known cell of the event read, for classes ``0 .. rows - 1``: an IndexError if
        one is outside the views (views that do not match the ids are a bug)."""
        last_c, last_t = (rows - 1) * self.c0, (rows - 1) * self.t0
        for f in range(self.size):
            j, v = self.ids[f], self.cats[f]
            if rows < 1 or (j >= 0 and last_t + j * self.t1 >= len(self.totals)) or (
                    v >= 0 and last_c + v * self.c1 >= len(self.counts)):
                raise IndexError("streamnb: a category outside its cells")

    def score(self, nv: list, n_classes: int, alpha: float, smooth: bool) -> list | None:
        """The log-likelihood per class of the event read (``alpha > 0``): per known feature
        :func:`~streamnb.stats.lidstone.lidstone_one` of ``n[c, v]`` over ``n[c, f]`` and ``|X_f|``
        values; an unknown category left out, or with ``smooth`` scored as a count of 0. ``nv``:
        ``|X_f|`` per feature id (floats); None if a feature's is not counted yet."""
        cv, tv, c0, c1, t0, t1 = self.counts, self.totals, self.c0, self.c1, self.t0, self.t1
        ev_ids, ev_cats = self.ids, self.cats
        out = self.zeroed(n_classes)
        n_nv = len(nv)
        for f in range(self.size):
            j, v = ev_ids[f], ev_cats[f]
            if j < 0 or (v < 0 and not smooth):
                continue
            if j >= n_nv or type(nv[j]) is not float:
                return None
            nvj = float(nv[j])
            tf = j * t1
            if v < 0:
                for c in range(n_classes):
                    out[c] += lidstone_one(0.0, tv[c * t0 + tf], alpha, nvj, 0.0)
            else:
                vc = v * c1
                for c in range(n_classes):
                    out[c] += lidstone_one(cv[c * c0 + vc], tv[c * t0 + tf], alpha, nvj, 0.0)
        return [out[c] for c in range(n_classes)]

    def add(self, k: int, w: float) -> bool:
        """Learn the event read with class ``k``, weight ``w``: ``n[k, v] += w``, ``n[k, f] +=
        w``; False, having changed nothing, if a feature or category is unknown."""
        ev_ids, ev_cats = self.ids, self.cats
        for f in range(self.size):
            if ev_ids[f] < 0 or ev_cats[f] < 0:
                return False
        self.check(k + 1)
        cv, tv, kc, kt, c1, t1 = self.counts, self.totals, k * self.c0, k * self.t0, self.c1, self.t1
        for f in range(self.size):
            cv[kc + ev_cats[f] * c1] += w
            tv[kt + ev_ids[f] * t1] += w
        return True

    def learn(self, x: dict | None, cell_ids: dict, feat_ids: dict, k: int, w: float, exclude: dict | None,
              strings_only: bool) -> bool:
        """Learn the event ``x`` (None: the event last read, by :meth:`joint`) with class ``k``
        and weight ``w``; False, having changed nothing, if it is not plain, is empty or has a
        feature or category not known yet."""
        if not (w > 0.0 and math.isfinite(w)):
            return False
        if x is not None and not self.read_categories(x, cell_ids, feat_ids, exclude, strings_only):
            return False
        return self.size > 0 and self.add(k, w)

    def joint(self, x: dict, cell_ids: dict, feat_ids: dict, nv: list, n_classes: int, alpha: float,
              smooth: bool, exclude: dict | None, strings_only: bool) -> list | None:
        """The log-likelihood per class of ``x`` (:meth:`score`), or None if ``x`` is not plain
        or :meth:`score` is."""
        if n_classes < 1 or not alpha > 0.0:
            return None
        if not self.read_categories(x, cell_ids, feat_ids, exclude, strings_only):
            return None
        self.check(n_classes)
        return self.score(nv, n_classes, alpha, smooth)
