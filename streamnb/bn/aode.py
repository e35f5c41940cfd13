"""Averaged one-dependence estimators (AODE; Webb, Boughton & Wang 2005) from the pair counts."""

from __future__ import annotations

import math

import numpy as np

from streamnb.bn.base import PHISHING_KINDS, TreeAugmentedNB
from streamnb.bn.margins import Margins
from streamnb.bn.tree_inference import smoothing_prior
from streamnb.bn.tree_part import MAX_CELLS, TreePart
from streamnb.naive_bayes.base import Part
from streamnb.naive_bayes.smoothing import lidstone, lidstone_one, lidstone_positive, smoothed, smoothed_rows
from streamnb.stats import Counts, Index

__all__ = ["AODE"]


#: One event goes through plain floats when ``classes x observed features**2`` is at most this;
#: beyond it a dozen numpy calls cost less (the measurement behind it: docs/benchmarks.md).
SCALAR_TERMS = 96


class _AODEPart(TreePart):
    """Every observed feature in turn is the super-parent of all the others; no structure."""

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, min_count: float,
                 max_cells: int = MAX_CELLS, prior: float = 0.0) -> None:
        super().__init__(classes, class_counts, alpha, max_cells=max_cells, prior=prior)
        self.min_count = min_count

    def learn_structures(self, current: dict, on_log: frozenset = frozenset()) -> dict:
        return {}

    def _log_prior(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.class_counts.n) - np.log(self.class_counts.n.sum())

    # -- one event, plain floats ----------------------------------------------------------
    def joint_fast(self, x: dict) -> list | None:
        return None  # averaged one-dependence estimators: the Python path

    def joint_one(self, prepared: tuple[list, list],
                  evidence: tuple[dict, dict | None] | None = None) -> list:
        # (``evidence`` is always None: AODE's numeric features are leaves given the class)
        n_c = len(self.classes.keys)
        out = [0.0] * n_c
        _, cells = prepared
        if not cells or not n_c:
            return out
        m = self.margins.current()
        obs = self._observed_one(cells, m)
        if not obs:
            return out
        if n_c * len(obs) ** 2 > SCALAR_TERMS:  # numpy is cheaper
            return self._joint_numpy(obs, m) if self.alpha > 0 else self.joint(prepared).tolist()
        n, (s0, s1, s2) = self.pairs.flat("n")
        Dv, (d0, d1, d2) = m.Dv, m.ds
        Tv, (t0, t1) = m.Tv, m.ts
        nv, alpha, ks, prior = m.nv, self.alpha, range(n_c), self.prior
        items = list(obs.items())
        limit = max(self.min_count, np.finfo(float).tiny)
        parents = [(i, ci) for i, ci in items if sum(n[k * s0 + ci * (s1 + s2)] for k in ks) >= limit]
        if not parents:  # naive Bayes over the observed features
            for j, cj in items:
                vals = [lidstone_one(n[k * s0 + cj * (s1 + s2)], Tv[k * t0 + j * t1], alpha, nv[j])
                        for k in ks]
                if max(vals) > -math.inf:
                    out = [a + b for a, b in zip(out, vals)]
            return out
        counts, (step,) = self.class_counts.flat("n")
        cc = [counts[k * step] for k in ks]
        log_total = math.log(math.fsum(cc))
        seen = [sum(Tv[k * t0 + i * t1] for k in ks) for i, _ in parents]
        log_n = math.log(len(parents))
        for k in ks:
            spo = []
            for (i, ci), n_i in zip(parents, seen):
                t = lidstone_one(n[k * s0 + ci * (s1 + s2)], n_i, alpha, n_c * nv[i])
                col, dcol = k * s0 + ci * s2, k * d0 + ci * d2
                for j, cj in items:
                    if j != i:
                        t += smoothed(n[col + cj * s1], Dv[dcol + j * d1], n[k * s0 + cj * (s1 + s2)],
                                      Tv[k * t0 + j * t1], alpha, nv[j], prior)
                spo.append(t)
            top = max(spo)
            if top == -math.inf or cc[k] <= 0:
                out[k] = -math.inf
            else:
                log_avg = top + math.log(math.fsum(math.exp(v - top) for v in spo)) - log_n
                out[k] = log_avg - (math.log(cc[k]) - log_total)
        return out if max(out) > -math.inf else [0.0] * n_c

    def _joint_numpy(self, obs: dict, m: Margins) -> list:
        """:meth:`joint_one` of a large event in a dozen numpy calls (``alpha > 0``: every
        term finite, no limit to take)."""
        n_c, alpha = len(self.classes.keys), self.alpha
        js = np.fromiter(obs.keys(), dtype=np.intp, count=len(obs))
        cj = np.fromiter(obs.values(), dtype=np.intp, count=len(obs))
        n = self.pairs.raw("n")[:n_c]
        nv = np.asarray(m.nv)[js]
        both = n[:, cj[:, None], cj[None, :]]                                       # [C, j, i]
        diag = np.arange(len(js))
        n_i = both[:, diag, diag]                                                   # [C, i]
        den = m.D[:n_c, js[:, None], cj[None, :]]
        if self.prior > 0:
            log_cond = smoothed_rows(both, den, n_i[:, :, None], m.T[:n_c, js][:, :, None], alpha, nv[:, None],
                                     self.prior)
        else:
            log_cond = lidstone_positive(both, den, alpha, nv[:, None])
        log_cond[:, diag, diag] = 0.0
        parents = n_i.sum(axis=0) >= max(self.min_count, np.finfo(float).tiny)
        if not parents.any():  # naive Bayes over the observed features
            return lidstone_positive(n_i, m.T[:n_c, js], alpha, nv).sum(axis=1).tolist()
        log_joint = lidstone_positive(n_i, m.T[:n_c, js].sum(axis=0), alpha, n_c * nv)
        spo = (log_joint + log_cond.sum(axis=1))[:, parents]
        top = spo.max(axis=1)
        log_avg = top + np.log(np.exp(spo - top[:, None]).sum(axis=1)) - np.log(parents.sum())
        with np.errstate(divide="ignore"):
            prior = self._log_prior()
        out = np.where(np.isfinite(prior), log_avg - prior, -np.inf)
        return out.tolist() if np.isfinite(out).any() else [0.0] * n_c

    # -- many events, numpy ---------------------------------------------------------------
    def _rows(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the rows of ``obs``: the AODE term ``[rows, classes]``, whether the row has a
        super-parent ``[rows]``, and the naive Bayes terms ``[features, rows, classes]``
        (zeros where unobserved), used by rows without a super-parent."""
        m = self.margins.current()
        n_c, n_f = len(self.classes.keys), obs.shape[1]
        n = self.pairs.raw("n")[:n_c]
        D, T, nv = m.D[:n_c, :n_f], m.T[:n_c, :n_f], np.asarray(m.nv)
        observed = obs >= 0
        o = np.maximum(obs, 0)
        n_i = n[:, o, o]                                                            # [C, R, F]
        nb = np.where(observed[None], lidstone(n_i, T[:, None, :], self.alpha, nv[None, None, :]), 0.0)
        parents = observed & (n_i.sum(axis=0) >= max(self.min_count, np.finfo(float).tiny))
        has = parents.any(axis=1)
        avg = np.zeros((len(obs), n_c))
        rows = np.flatnonzero(has)
        if len(rows):
            o, observed, parents, n_i = o[rows], observed[rows], parents[rows], n_i[:, rows]
            log_joint = lidstone(n_i, T.sum(axis=0)[None, None, :], self.alpha, n_c * nv[None, None, :])
            both = n[:, o[:, :, None], o[:, None, :]]                               # [C, R, j, i]
            den = D[:, np.arange(n_f)[None, :, None], o[:, None, :]]
            log_cond = smoothed_rows(both, den, n_i[:, :, :, None], T[:, None, :, None], self.alpha,
                                     nv[None, None, :, None], self.prior)
            valid = observed[:, :, None] & observed[:, None, :] & ~np.eye(n_f, dtype=bool)[None]
            spo = log_joint + np.where(valid[None], log_cond, 0.0).sum(axis=2)     # [C, R, i]
            spo = np.where(parents[None], spo, -np.inf)
            top = spo.max(axis=2, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                log_avg = np.where(
                    np.isfinite(top[..., 0]),
                    top[..., 0] + np.log(np.exp(spo - np.where(np.isfinite(top), top, 0.0)).sum(axis=2))
                    - np.log(parents.sum(axis=1))[None, :],
                    -np.inf,
                )
            prior = self._log_prior()[:, None]
            avg[rows] = np.where(np.isfinite(prior), log_avg - prior, -np.inf).T
        return avg, has, nb.transpose(2, 1, 0)

    def log_likelihoods(self, prepared: tuple[list, list],
                        evidence: tuple[dict, dict | None] | None = None) -> tuple[list, np.ndarray]:
        n_c = len(self.classes)
        _, cells = prepared
        if not cells or not n_c:
            return [], np.zeros((0, n_c))
        m = self.margins.current()
        obs = self._encode_one(cells, m)
        js = np.flatnonzero(obs[0] >= 0)
        if not len(js):
            return [], np.zeros((0, n_c))
        avg, has, nb = self._rows(obs)
        if has[0]:
            return ["(aode)"], avg[:1]
        names = self.features.keys
        return [names[j] for j in js], nb[js, 0, :]

    def _floats_per_row(self, n_features: int, n_classes: int) -> int:
        return 4 * n_classes * n_features * n_features

    def _frame_rows(self, obs: np.ndarray) -> np.ndarray:
        avg, has, nb = self._rows(obs)
        nb = np.where(np.isneginf(nb).all(axis=2, keepdims=True), 0.0, nb).sum(axis=0)
        avg = np.where(np.isneginf(avg).all(axis=1, keepdims=True), 0.0, avg)
        return np.where(has[:, None], avg, nb)


class AODE(TreeAugmentedNB):
    """Averaged one-dependence estimators: every feature in turn is a parent of all the others.

    ``P(y, x) = mean_i P(y, x_i) prod_{j != i} P(x_j | x_i, y)`` over the observed features
    ``i`` whose value was seen at least ``min_count`` times (the super-parents); with none,
    naive Bayes. No structure is learned, so nothing is relearned; every term comes from the
    same :class:`~streamnb.stats.pairwise.PairCounts` as TAN, Lidstone-smoothed with ``alpha``:
    ``P(y, x_i) = (n(y, x_i) + alpha) / (n_i + alpha |Y| |X_i|)`` with ``n_i`` the events in which
    ``i`` was observed, and ``P(x_j | x_i, y)`` as in TAN (``smoothing``). Missing values and values never seen
    are left out of the product and the average (exact marginalization: each one-dependence
    model has ``x_j`` as a leaf); numeric features are class-conditional Gaussians, a common
    factor of every one-dependence model.

    Parameters
    ----------
    alpha
        Lidstone smoothing.
    min_count
        Frequency limit of a super-parent value (1, as Weka's AODE; Webb et al. used 30).
    smoothing
        ``"marginal"`` (default): ``P(x_j | x_i, y)`` smoothed toward ``P(x_j | y)``,
        ``"lidstone"``: toward uniform, as in :class:`~streamnb.TANClassifier`.
    kinds, var_smoothing
        As in :class:`~streamnb.MixedNB`.
    max_cells
        Most ``(feature, value)`` cells of the pair table, as in
        :class:`~streamnb.TANClassifier`.

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
        self, alpha: float = 1.0, min_count: float = 1.0, kinds: dict | None = None, var_smoothing: float = 1e-9,
        max_cells: int = MAX_CELLS, smoothing: str = "marginal",
    ) -> None:
        self._prior = smoothing_prior(smoothing)  # ValueError for an unknown smoothing
        self.smoothing = smoothing
        self.alpha = alpha
        self.min_count = min_count
        super().__init__(kinds=kinds, var_smoothing=var_smoothing, max_cells=max_cells)

    def _make_structured_part(self) -> Part:
        return _AODEPart(self._classes, self._class_counts, self.alpha, self.min_count, self.max_cells, self._prior)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "min_count": 5}
        yield {"smoothing": "lidstone"}
        yield {"kinds": PHISHING_KINDS}
