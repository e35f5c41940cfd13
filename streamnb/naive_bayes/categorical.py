"""Categorical naive Bayes: per-class category counts with open vocabularies."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pandas as pd

from streamnb import kernels
from streamnb.naive_bayes.base import add_feature
from streamnb.naive_bayes.blend import Blendable, BlendablePart, blended_counts
from streamnb.naive_bayes.smoothing import lidstone, lidstone_one
from streamnb.naive_bayes.values import category_cells, cell_index, cell_key, drop_impossible, factorize
from streamnb.stats import Counts, Index
from streamnb.stats import category_cells as source

__all__ = ["CategoricalNB", "CategoricalPart", "event_ops"]

#: The module of one event's category operations: compiled when built, the plain-Python one otherwise.
event_ops = kernels.compiled(source)

class CategoricalPart(BlendablePart):
    """Features whose values are categories (any hashable value; None/NaN are missing).

    ``P(x_f = v | y) = (n[y, f, v] + alpha) / (n[y, f] + alpha * |X_f|)`` where ``n[y, f]``
    counts the class's events in which ``f`` was observed and ``|X_f|`` is the number of
    categories of ``f`` seen so far (by any class). A category never seen is, by ``unseen``:
    ``"ignore"`` (default): skipped like a missing value, so it favours no class;
    ``"smooth"``: scored ``alpha / (n[y, f] + alpha * |X_f|)``, which favours smaller classes.
    """

    kind = "categorical"

    def __init__(
        self, classes: Index, class_counts: Counts, alpha: float, unseen: str, epsilon: float = 0.0
    ) -> None:
        super().__init__(classes, class_counts, alpha, unseen, epsilon)
        self.finite = alpha > 0 or epsilon > 0
        self.cells = Index()  # (feature, category)
        self.features = Index()
        self.counts = Counts([classes, self.cells])
        self.totals = Counts([classes, self.features])
        self._n_values: np.ndarray | None = None
        self._nv: list = []  # |X_f| per feature id, kept current by learn_one
        self._nv_at: tuple = (0, 0)  # (cells, epoch) that _nv was counted for

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        return category_cells(x)

    def check_frame(self, X: pd.DataFrame) -> None:
        for f in X.columns:
            factorize(X[f], f)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        coded = [factorize(X[f], f) for f in X.columns]
        # register new cells and features in the order a row-by-row reader meets them
        firsts = []
        for pos, (f, (codes, uniques)) in enumerate(zip(X.columns, coded)):
            seen = (codes >= 0) & (w > 0)
            _, first = np.unique(np.where(seen, codes, -1), return_index=True)
            firsts += [(r, pos, f, uniques[codes[r]]) for r in first if seen[r]]
        firsts.sort(key=lambda t: (t[0], t[1]))
        self.cells.lookup([cell_key(f, u) for _, _, f, u in firsts], add=True)
        self.features.lookup([f for _, _, f, _ in firsts], add=True)
        for f, (codes, uniques) in zip(X.columns, coded):
            rows = np.flatnonzero((codes >= 0) & (w > 0))
            if not len(rows):
                continue
            cell_ids = self.cells.lookup([cell_key(f, u) for u in uniques])
            fid = self.features.get(f)
            self.counts.add_at((k[rows], cell_ids[codes[rows]]), w[rows])
            self.totals.add_at((k[rows], np.full(len(rows), fid)), w[rows])

    def changed(self) -> None:
        self._n_values = None

    # -- the scalar path: one event, plain floats, the event's cells only -------------------
    def viewed(self) -> tuple[Counts, Counts]:
        """Views ``(counts, counts strides, totals, totals strides)``."""
        return self.counts, self.totals

    def make_cells(self, views: tuple) -> source.CategoryCells:
        """The count cells of the classes' categories and feature totals, for one event."""
        cv, (c0, c1), tv, (t0, t1) = views
        return event_ops.CategoryCells(cv, c0, c1, tv, t0, t1)

    def _values_per_feature(self) -> list:
        """|X_f| per feature id as a list: counted once, then kept current by :meth:`learn_one`
        (counted again only after a batch, a merge, a drop or a load)."""
        if self._nv_at != (len(self.cells.keys), self.cells.epoch):
            self._nv = self.n_values().tolist()
            self._nv_at = (len(self.cells.keys), self.cells.epoch)
        return self._nv

    def learn_one(self, prepared: tuple[list, list], k: int, w: float) -> None:
        feats, cells = prepared
        if not feats:
            return
        cell_ids, feat_ids = self.cells.ids, self.features.ids
        for f, cell in zip(feats, cells):
            if cell not in cell_ids:  # a new category: register it, count it for |X_f|
                nv = self._values_per_feature()
                self.cells.add(cell)
                fid = feat_ids.get(f)
                if fid is None:
                    fid = self.features.add(f)
                    nv.append(0.0)
                nv[fid] += 1.0
                self._nv_at = (len(self.cells.keys), self.cells.epoch)
                self._n_values = None
                self.counts.fit()  # grow the arrays if the new keys need it
                self.totals.fit()
        event = self._event_cells()
        event.take([feat_ids[f] for f in feats], [cell_ids[cell] for cell in cells])
        learned = event.add(k, w)
        assert learned, "every category of a prepared event is registered"

    def _strings_only_refused(self, x: dict) -> bool:
        """Whether ``x`` is not for the cells-path methods: this part takes only strings
        there (a learner deciding a feature's kind by its value) and ``x`` is not."""
        return self.fast_strings_only and type(next(iter(x.values()), "")) is not str

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        if read:  # the cells hold x, read by joint_fast
            return self._cells.learn(None, None, None, k, w, None, False)
        if self._strings_only_refused(x):
            return False
        return self._event_cells().learn(x, self.cells.ids, self.features.ids, k, w, *self._fast_args())

    def joint_fast(self, x: dict) -> list | None:
        # the settings and events of CategoryCells.score (tested inline: this runs per event)
        if not (self.alpha > 0 and self.epsilon == 0) or (
                self.fast_strings_only and self._strings_only_refused(x)):
            return None
        self._scalar()  # the cells current
        return self._cells.joint(x, self.cells.ids, self.features.ids, self._values_per_feature(),
                                 len(self.classes.keys), self.alpha, self.unseen == "smooth",
                                 *self._fast_args())

    def joint_features(self, prepared: tuple[list, list], n_classes: int) -> list:
        feats, cells = prepared
        cell_ids, feat_ids = self.cells.ids, self.features.ids
        nv = self._values_per_feature()
        alpha, epsilon, smooth = self.alpha, self.epsilon, self.unseen == "smooth"
        if alpha > 0 and epsilon == 0:  # every term finite: no special cases
            event = self._event_cells()
            event.take([feat_ids.get(f, -1) for f in feats], [cell_ids.get(cell, -1) for cell in cells])
            event.check(n_classes)
            got = event.score(nv, n_classes, alpha, smooth)
            assert got is not None, "|X_f| is counted"
            return got
        out = [0.0] * n_classes
        cv, (c0, c1), tv, (t0, t1) = self._scalar()
        offsets = [(c * c0, c * t0) for c in range(n_classes)]
        for f, cell in zip(feats, cells):
            fid = feat_ids.get(f)
            if fid is None:
                continue
            cid = cell_ids.get(cell)
            if cid is None and not smooth:
                continue
            add_feature(out, [
                lidstone_one(0.0 if cid is None else cv[oc + cid * c1], tv[ot + fid * t1], alpha, nv[fid], epsilon)
                for oc, ot in offsets
            ])
        return out

    def blend_features(self, prepared: tuple[list, list], other: CategoricalPart, weight: float, mine: list,
                       theirs: list) -> Iterator[tuple[float, list, list, float]]:  # fmt: skip
        feats, cells = prepared
        cell_ids, feat_ids = self.cells.ids, self.features.ids
        their_cells, their_feats = other.cells.ids, other.features.ids
        nv = self._values_per_feature()
        cv, (c0, c1), tv, (t0, t1) = self._scalar()
        ov, (o0, o1), otv, (ot0, ot1) = other._scalar()
        smooth = self.unseen == "smooth"
        for f, cell in zip(feats, cells):
            fid, ofid = feat_ids.get(f), their_feats.get(f)
            if fid is None and ofid is None:
                continue
            cid, ocid = cell_ids.get(cell), their_cells.get(cell)
            if cid is None and ocid is None and not smooth:
                continue
            # |X_f|: this model's categories of f, plus the event's if only the other knows it
            n_values = (nv[fid] if fid is not None else 0.0) + (1.0 if cid is None and ocid is not None else 0.0)
            nums = blended_counts(mine, theirs, weight, cv, c0, c1, cid, ov, o0, o1, ocid)
            dens = blended_counts(mine, theirs, weight, tv, t0, t1, fid, otv, ot0, ot1, ofid)
            yield 1.0, nums, dens, n_values

    # -- prediction ------------------------------------------------------------------------
    def n_values(self) -> np.ndarray:
        """Number of categories seen per feature (derived from the cells, cached)."""
        if self._n_values is None:
            fids = self.features.lookup([c[0] for c in self.cells.keys])
            self._n_values = np.bincount(fids, minlength=len(self.features)).astype(float)
        return self._n_values

    def _log_p(self, fids: np.ndarray, cids: np.ndarray) -> np.ndarray:
        """``log P(category | class)`` as ``[len(fids), classes]``; ``cids < 0`` are unseen."""
        n = self.counts.raw("n")[: len(self.classes)]
        num = np.where(cids >= 0, n[:, np.maximum(cids, 0)], 0.0)
        den = self.totals.n[:, fids]
        return lidstone(num, den, self.alpha, self.n_values()[fids], self.epsilon).T

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        feats, cells = prepared
        fids = self.features.lookup(feats)
        cids = self.cells.lookup(cells)
        keep = (fids >= 0) & ((cids >= 0) | (self.unseen == "smooth"))
        if not keep.all():
            feats = [f for f, ok in zip(feats, keep) if ok]
            fids, cids = fids[keep], cids[keep]
        return feats, self._log_p(fids, cids)

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        out = np.zeros((len(X), len(self.classes)))
        for f in X.columns:
            fid = self.features.get(f)
            if fid < 0:
                continue
            codes, uniques = factorize(X[f], f)
            if not uniques:
                continue
            cids = self.cells.lookup([cell_key(f, u) for u in uniques])
            table = drop_impossible(self._log_p(np.full(len(uniques), fid), cids).T).T
            if self.unseen == "ignore":
                table[cids < 0] = 0.0
            out += np.where((codes >= 0)[:, None], table[np.maximum(codes, 0)], 0.0)
        return out

    # -- statistics and tables -------------------------------------------------------------
    def stats(self) -> dict[str, Counts]:
        return {"counts": self.counts, "totals": self.totals}

    def tables(self) -> dict[str, pd.DataFrame]:
        cells = self.cells.keys
        fids = self.features.lookup([c[0] for c in cells])
        p = np.exp(self._log_p(fids, np.arange(len(cells))))
        index = cell_index(cells)
        return {
            "p_category": pd.DataFrame(p, index=index, columns=list(self.classes.keys)),
            "category_counts": pd.DataFrame(self.counts.n.T, index=index, columns=list(self.classes.keys)),
        }


class CategoricalNB(Blendable):
    """Naive Bayes over categorical features with Laplace/Lidstone smoothing.

    Parameters
    ----------
    alpha
        Additive smoothing; 0 gives maximum-likelihood estimates (with limits where 0/0).
    unseen
        ``"ignore"`` (neutral, default) or ``"smooth"``: how a category never seen is scored.
    epsilon
        Epsilon smoothing (usually with ``alpha=0``): a zero probability becomes ``epsilon``;
        pick ``epsilon < 1/N`` for ``N`` events. 0 turns it off.

    Examples
    --------
    The seeds' example: ``P(Y=1 | X=1) = 2/3`` without smoothing.

    >>> model = CategoricalNB(alpha=0)
    >>> for x, y in [(1, 1), (1, 0), (1, 1), (0, 0)]:
    ...     model.learn_one({"X": x}, y)
    >>> round(model.predict_proba_one({"X": 1})[1], 12)
    0.666666666667
    """

    exact_batch = True  # counts: a batch adds exactly what its events add one by one

    one_part = ("categorical", CategoricalPart, ("alpha", "unseen", "epsilon"))

    def __init__(self, alpha: float = 1.0, unseen: str = "ignore", epsilon: float = 0.0) -> None:
        self.alpha = alpha
        self.unseen = unseen
        self.epsilon = epsilon
        super().__init__()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.0, "unseen": "smooth"}
        yield {"alpha": 0.0, "epsilon": 1e-4}
