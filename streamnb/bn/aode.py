"""Averaged one-dependence estimators (AODE; Webb, Boughton & Wang 2005) from the pair counts."""

from __future__ import annotations

import numpy as np

from streamnb.bn.base import PHISHING_KINDS, TreeAugmentedNB
from streamnb.bn.tree_part import TreePart
from streamnb.naive_bayes.base import Part
from streamnb.naive_bayes.categorical import lidstone
from streamnb.stats import Counts, Index

__all__ = ["AODE"]


class _AODEPart(TreePart):
    """Every observed feature in turn is the super-parent of all the others; no structure."""

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, min_count: float) -> None:
        super().__init__(classes, class_counts, alpha, relearn_every=0)
        self.min_count = min_count

    def learn_structures(self) -> dict:
        return {}

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        n_c = len(self.classes)
        _, cells = prepared
        if not cells or not len(self.features) or not n_c:
            return [], np.zeros((0, n_c))
        obs = self._observed(cells)
        js = np.flatnonzero(obs >= 0)
        if not len(js):
            return [], np.zeros((0, n_c))
        n, _, fc, nv = self._tables()
        cj = obs[js]
        rows = fc[js]
        valid = rows >= 0
        rows0 = np.maximum(rows, 0)
        diag = np.where(valid[None], n[:, rows0, rows0], 0.0).sum(axis=2)        # [C, m]: n(j seen, y)
        n_i = n[:, cj, cj]                                                         # [C, m]: n(x_i, y)
        parents = np.flatnonzero(n_i.sum(axis=0) >= max(self.min_count, np.finfo(float).tiny))
        names = self.features.keys
        if not len(parents):  # no super-parent: naive Bayes over the observed features
            return [names[j] for j in js], self._direct(np.arange(n_c), np.full(len(obs), -1), js, obs)
        both = n[:, cj[:, None], cj[None, :]]                                      # [C, j, i]
        den = np.where(valid[None, :, :, None], n[:, rows0[:, :, None], cj[None, None, :]], 0.0).sum(axis=2)
        log_cond = lidstone(both, den, self.alpha, nv[js][None, :, None])          # log P(x_j | x_i, y)
        log_cond[:, np.arange(len(js)), np.arange(len(js))] = 0.0
        log_joint_i = lidstone(n_i, diag.sum(axis=0), self.alpha, n_c * nv[js])     # log P(y, x_i)
        spo = (log_joint_i + log_cond.sum(axis=1))[:, parents]                      # [C, parents]
        top = spo.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_avg = np.where(
                np.isfinite(top[:, 0]),
                top[:, 0] + np.log(np.exp(spo - np.where(np.isfinite(top), top, 0.0)).sum(axis=1))
                - np.log(len(parents)),
                -np.inf,
            )
            prior = np.log(self.class_counts.n) - np.log(self.class_counts.n.sum())
            term = np.where(np.isfinite(prior), log_avg - prior, -np.inf)
        return ["(aode)"], term[None, :]


class AODE(TreeAugmentedNB):
    """Averaged one-dependence estimators: every feature in turn is a parent of all the others.

    ``P(y, x) = mean_i P(y, x_i) prod_{j != i} P(x_j | x_i, y)`` over the observed features
    ``i`` whose value was seen at least ``min_count`` times (the super-parents); with none,
    naive Bayes. No structure is learned, so nothing is relearned; every term comes from the
    same :class:`~streamnb.stats.pairwise.PairCounts` as TAN, Lidstone-smoothed with ``alpha``:
    ``P(y, x_i) = (n(y, x_i) + alpha) / (n_i + alpha |Y| |X_i|)`` with ``n_i`` the events in which
    ``i`` was observed, and ``P(x_j | x_i, y)`` as in TAN. Missing values and values never seen
    are left out of the product and the average (exact marginalization: each one-dependence
    model has ``x_j`` as a leaf); numeric features are class-conditional Gaussians, a common
    factor of every one-dependence model.

    Parameters
    ----------
    alpha
        Lidstone smoothing.
    min_count
        Frequency limit of a super-parent value (1, as Weka's AODE; Webb et al. used 30).
    kinds, var_smoothing
        As in :class:`~streamnb.MixedNB`.

    Examples
    --------
    >>> model = AODE()
    >>> for i in range(200):
    ...     a, b, c = i % 2, (i // 2) % 2, (i // 4) % 2
    ...     model.learn_one({"a": str(a), "b": str(b), "c": str(c)}, a ^ b)
    >>> model.predict_one({"a": "1", "b": "0", "c": "1"}), model.predict_one({"a": "1", "b": "1"})
    (1, 0)
    """

    def __init__(
        self, alpha: float = 1.0, min_count: float = 1.0, kinds: dict | None = None, var_smoothing: float = 1e-9
    ) -> None:
        self.alpha = alpha
        self.min_count = min_count
        super().__init__(kinds=kinds, var_smoothing=var_smoothing)

    def _make_structured_part(self) -> Part:
        return _AODEPart(self._classes, self._class_counts, self.alpha, self.min_count)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "min_count": 5}
        yield {"kinds": PHISHING_KINDS}
