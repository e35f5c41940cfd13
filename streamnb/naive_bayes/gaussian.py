"""Gaussian naive Bayes: a Welford mean/variance per class and numeric feature."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from streamnb import kernels
from streamnb.naive_bayes.base import BaseNB, Part, add_feature
from streamnb.naive_bayes.posterior import sum_features
from streamnb.naive_bayes.values import first_seen, frame_values, numeric_items
from streamnb.stats import Counts, Index, Welford, cells, gaussian_density
from streamnb.stats.base import Statistic
from streamnb.stats.gaussian_density import log_density_factors

__all__ = ["GaussianNB", "GaussianPart", "event_ops", "log_density", "log_density_sum"]

#: The one key of the pooled statistics' row axis.
_ALL = "(all classes)"

#: The module of one event's Welford operations: compiled when built, the plain-Python one otherwise.
event_ops = kernels.compiled(cells)

#: The normal log-density of one value and of an event's sum of them
#: (:mod:`streamnb.stats.gaussian_density`), compiled when built: for every Gaussian scored in Python.
_density = kernels.compiled(gaussian_density)
log_density, log_density_sum = _density.log_density, _density.log_density_sum


class GaussianPart(Part):
    """Numeric features, each ``N(mean, var + eps)`` per class.

    Variance smoothing follows scikit-learn's definition, ``eps = var_smoothing * max_j
    var_j`` with ``var_j`` the variance of feature ``j`` over all classes, but from the running
    statistics of everything learned so far, never from the last batch: one-by-one learning
    and batch learning give the same model, equal to scikit-learn's ``fit`` on the same prefix.

    A class with no observation of a feature (or no more than ``ddof``) uses the feature's
    pooled Gaussian over all classes. A cell whose variance is still 0 (possible only when
    ``eps`` is 0) is a point mass: the class wins on an exact match and is ruled out otherwise.
    """

    kind = "gaussian"

    def __init__(self, classes: Index, class_counts: Counts, var_smoothing: float, ddof: int) -> None:
        super().__init__(classes, class_counts)
        self.var_smoothing = var_smoothing
        self.ddof = ddof
        self.features = Index()
        self.welford = Welford([classes, self.features])
        # every class merged, per feature: what variance smoothing and thin cells read. Kept as a
        # statistic of its own (one row) so one event updates it in O(features of the event)
        self.pooled = Welford([Index([_ALL]), self.features])
        self._derived: tuple | None = None
        self._var = np.zeros((0, 0))
        self._spread: list | None = None  # pooled M2 / n per feature, kept current by learn_one
        self._top: float | None = None  # max of _spread (None: to be recomputed)
        self._top_id = -1

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        return numeric_items(x)

    def _known(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray, np.ndarray]:
        """Known features of an event, their values and ids."""
        keys, v = prepared
        ids = self.features.lookup(keys)
        values = np.array(v, dtype=float)
        known = ids >= 0
        if known.all():
            return keys, values, ids
        return [f for f, ok in zip(keys, known.tolist()) if ok], values[known], ids[known]

    # -- the scalar path: one event, plain floats, the event's cells only -------------------
    def viewed(self) -> tuple[Statistic, ...]:
        return self.welford, self.pooled

    def take_views(self) -> tuple:
        """Flat views ``(n, mean, m2, strides, pooled n, pooled mean, pooled m2, pooled
        strides)`` of the Welford cells and of the pooled statistics."""
        wf, pool = self.welford, self.pooled
        return (*[wf.flat(f)[0] for f in Welford.fields], wf.flat("n")[1],
                *[pool.flat(f)[0] for f in Welford.fields], pool.flat("n")[1])  # fmt: skip

    def make_cells(self, views: tuple) -> cells.WelfordCells:
        """The Welford cells of the class rows and of the pooled row, for one event."""
        N, M, S, (n0, n1), PN, PM, PS, (_, p1) = views[:8]
        return event_ops.WelfordCells(N, M, S, n0, n1, PN, PM, PS, p1)

    def _spreads(self) -> list:
        """Pooled ``M2 / n`` per feature (what variance smoothing takes the max of)."""
        if self._spread is None:
            n, m2 = self.pooled.count()[0], self.pooled.m2()[0]
            with np.errstate(invalid="ignore", divide="ignore"):
                self._spread = np.where(n > 0, m2 / np.where(n > 0, n, 1.0), 0.0).tolist()
            self._top = None
        return self._spread

    def _eps(self) -> float:
        """``var_smoothing * max_j spread_j`` (the max kept current; recounted only when the
        feature holding it shrinks)."""
        if self._top is None:
            spread = self._spreads()
            self._top = max(spread) if spread else 0.0
            self._top_id = spread.index(self._top) if spread else -1
        return self.var_smoothing * self._top

    def learn_one(self, prepared: tuple[list, list], k: int, w: float) -> None:
        """One event (``w > 0``): its features into the Welford cells and the variance smoothing."""
        keys, values = prepared
        if not keys:
            return
        spread = self._spreads()
        ids = self.features.ids
        if len(ids) < len(keys) or any(key not in ids for key in keys):
            for key in keys:
                if key not in ids:
                    self.features.add(key)
                    spread.append(0.0)
            self.welford.fit()
            self.pooled.fit()
        got = self._event_cells().learn(dict(zip(keys, values)), ids, k, w, spread, self._top, self._top_id, None,
                                        False, -1)
        assert got is not None, "a prepared event is plain"
        self._top, self._top_id = got
        self._derived = None

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        if type(next(iter(x.values()), 0.0)) is str:  # categories: not this part's
            return False
        got = self._learn_cells(x, k, w)
        if got is None:
            return False
        self._top, self._top_id = got
        self._derived = None
        return True

    def _learn_cells(self, x: dict, k: int, w: float) -> tuple[float | None, int] | None:
        """The raw event ``x`` learned into the cells
        (:meth:`~streamnb.stats.cells.WelfordCells.learn`): the spread's maximum and where it is,
        or None, having changed nothing, if ``x`` is not plain."""
        return self._event_cells().learn(x, self.features.ids, k, w, self._spreads(), self._top, self._top_id,
                                         self._fast_args()[0], True, -1)

    def joint_fast(self, x: dict) -> list | None:
        if type(next(iter(x.values()), 0.0)) is str:  # categories: not this part's
            return None
        return self._event_cells().joint(x, self.features.ids, len(self.classes.keys), self.ddof, self._eps(),
                                         self._fast_args()[0], True)

    def joint_one(self, prepared: tuple[list, list]) -> list:
        keys, values = prepared
        n_classes = len(self.classes.keys)
        if not keys:
            return [0.0] * n_classes
        ids, eps = self.features.ids, self._eps()
        got = self._event_cells().joint(dict(zip(keys, values)), ids, n_classes, self.ddof, eps, None, False)
        if got is not None:
            return got
        n1 = self._scalar()[3][1]
        return self._joint_careful([(j * n1, x) for j, x in zip(map(ids.get, keys), values) if j is not None])

    def _joint_careful(self, event: list) -> list:
        """:meth:`joint_one` with thin cells (the pooled Gaussian), features with no variance
        estimate and point masses."""
        n_classes = len(self.classes.keys)
        out = [0.0] * n_classes
        eps, ddof = self._eps(), self.ddof
        N, M, S, (n0, n1), PN, PM, PS, (_, p1) = self._scalar()
        inf = math.inf
        ll = [0.0] * n_classes
        for col, x in event:
            j = col // n1
            finite = True
            for c in range(n_classes):
                i = c * n0 + col
                n = N[i]
                if n > ddof:
                    mean, var = M[i], S[i] / (n - ddof) + eps
                elif PN[j * p1] > ddof:  # no estimate in this class: the feature's pooled Gaussian
                    mean, var = PM[j * p1], PS[j * p1] / (PN[j * p1] - ddof) + eps
                else:  # no variance estimate at all: no information
                    ll[c] = 0.0
                    continue
                if not (var > 0 and -0.5 / var > -inf):  # zero (or subnormal) variance: a point mass
                    ll[c] = inf if x == mean else -inf
                    finite = False
                else:
                    ll[c] = log_density(x - mean, var)
            if finite:
                for c in range(n_classes):
                    out[c] += ll[c]
            else:
                add_feature(out, ll)
        return out

    def check_frame(self, X: pd.DataFrame) -> None:
        self._memo = (X, frame_values(X))

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        v = self._converted(X, frame_values)
        names = list(X.columns)
        self.features.lookup([names[j] for j in first_seen(v == v)], add=True)
        cols = self.features.lookup(names)
        if (cols < 0).any():  # columns with no value at all
            v, cols = v[:, cols >= 0], cols[cols >= 0]
        if len(cols):
            summaries: list = []
            if self.welford.update_matrix(k, cols, v, w, summaries):
                self.pooled.merge_summaries(0, summaries)  # every class merged: no second pass
            else:
                self.pooled.update_matrix(np.zeros(len(k), dtype=np.intp), cols, v, w)

    def changed(self) -> None:
        self._derived = None
        self._spread = None
        self._top = None  # the variance smoothing's max, recounted with the spreads
        self._top_id = -1

    # -- prediction ------------------------------------------------------------------------
    def _params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Per (class, feature): mean, ``-1 / (2 var)``, ``-log(2 pi var) / 2`` and the mask of
        point masses (None if there is none); derived lazily from the statistics.

        A feature with no variance estimate at all (a single event with ``ddof=1``) gets zero
        coefficients: it contributes nothing to any class.
        """
        if self._derived is None:
            n, mean, var = self.welford.count(), self.welford.mean(), self.welford.var(self.ddof)
            pn, pmean, pm2 = self.pooled.count()[0], self.pooled.mean()[0], self.pooled.m2()[0]
            with np.errstate(invalid="ignore", divide="ignore"):
                pvar = np.where(pn > self.ddof, pm2 / (pn - self.ddof), np.nan)
                spread = pm2 / np.where(pn > 0, pn, 1.0)
            eps = self.var_smoothing * float(spread.max()) if spread.size else 0.0
            thin = n <= self.ddof
            mean = np.where(thin, pmean, mean)
            var = np.where(thin, pvar, var) + eps
            unknown = np.isnan(var)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                zero = (var == 0) | np.isinf(-0.5 / var)  # a subnormal variance is a point mass too
                log_norm, coef = log_density_factors(var)
                coef = np.where(unknown | zero, 0.0, coef)
                log_norm = np.where(unknown | zero, 0.0, log_norm)
            self._derived = (mean, coef, log_norm, zero if zero.any() else None)
            self._var = var
        return self._derived

    def _log_pdfs(self, v: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        """``log N(v | class)`` as ``[classes, features]``."""
        mean, coef, log_norm, zero = self._params()
        if ids is not None:
            mean, coef, log_norm = mean[:, ids], coef[:, ids], log_norm[:, ids]
        d = v - mean
        ll = log_norm + coef * (d * d)
        if zero is not None:
            ll = _point_masses(ll, d, zero if ids is None else zero[:, ids])
        return ll

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        keys, v, ids = self._known(prepared)
        return keys, self._log_pdfs(v, ids).T

    def joint(self, prepared: tuple[list, list]) -> np.ndarray:
        _, v, ids = self._known(prepared)
        ll = self._log_pdfs(v, ids)
        if self._params()[3] is None:  # no point mass: no +inf, so no NaN in the sum
            total = ll.sum(axis=1)
            if math.isfinite(total.sum()):
                return total
        return sum_features(ll.T)

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        v = self._converted(X, frame_values)
        ids = self.features.lookup(list(X.columns))
        known = ids >= 0
        out = np.zeros((len(X), len(self.classes)))
        if not known.any():
            return out
        v, ids = v[:, known], ids[known]
        mean, coef, log_norm, zero = self._params()
        missing = np.isnan(v)
        any_missing = bool(missing.any())
        observed = (~missing).astype(float) if any_missing else None
        with np.errstate(over="ignore", invalid="ignore"):
            if zero is None:  # one class at a time, sums as matrix products
                for k in range(len(self.classes)):
                    d = v - mean[k, ids]
                    if any_missing:
                        d[missing] = 0.0
                        out[:, k] = (d * d) @ coef[k, ids] + observed @ log_norm[k, ids]
                    else:
                        out[:, k] = (d * d) @ coef[k, ids] + log_norm[k, ids].sum()
                bad = ~np.isfinite(out).all(axis=1)
            else:
                bad = np.ones(len(X), dtype=bool)
            if bad.any():  # point masses or overflow: per feature, with sum_features
                vb = v[bad]
                d = vb[:, :, None] - mean[:, ids].T  # [rows, features, classes]
                ll = log_norm[:, ids].T + coef[:, ids].T * (d * d)
                if zero is not None:
                    ll = _point_masses(ll, d, zero[:, ids].T)
                ll = np.where(np.isnan(vb)[:, :, None], 0.0, ll)
                total = ll.sum(axis=1)
                fine = np.isfinite(total).all(axis=1)
                total[~fine] = sum_features(ll[~fine])
                out[bad] = total
        return out

    # -- statistics and tables -------------------------------------------------------------
    def stats(self) -> dict[str, Statistic]:
        return {"welford": self.welford, "pooled": self.pooled}

    def complete_state(self, name: str, saved: dict) -> None:
        """States saved before the pooled statistics were kept: derive them from the cells."""
        if f"{name}.welford" in saved and f"{name}.pooled" not in saved:
            cells = Welford.from_state(saved[f"{name}.welford"])
            pooled = Welford([Index([_ALL]), Index(cells.axes[1].keys)])
            n, mean, m2 = cells.pooled()
            pooled.fit()
            for field, values in (("n", n), ("mean", mean), ("m2", m2)):
                pooled.raw(field)[0, : len(values)] = values
            saved[f"{name}.pooled"] = pooled.to_state()

    def tables(self) -> dict[str, pd.DataFrame]:
        mean = self._params()[0]
        var = self._var
        idx = pd.Index(self.classes.keys, name="class")
        cols = list(self.features.keys)
        return {
            "mean": pd.DataFrame(mean, index=idx, columns=cols),
            "var": pd.DataFrame(var, index=idx, columns=cols),
            "count": pd.DataFrame(self.welford.count(), index=idx, columns=cols),
        }


def _point_masses(ll: np.ndarray, d: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """Zero-variance cells are point masses: +inf on an exact match, -inf elsewhere."""
    return np.where(zero, np.where(d == 0, np.inf, -np.inf), ll)


class GaussianNB(BaseNB):
    """Gaussian naive Bayes for numeric features, learned one event at a time.

    Parameters
    ----------
    var_smoothing
        Fraction of the largest feature variance (over all classes, from the running
        statistics) added to every variance, as in scikit-learn.
    ddof
        0 for the maximum-likelihood variance (scikit-learn, River), 1 for the sample
        variance (Weka).

    Notes
    -----
    Differences with the references, each shown by a test: scikit-learn computes the variance
    smoothing from the last ``partial_fit`` batch, so its results depend on batching (equal to
    this model only for ``fit`` on the same prefix); River adds ``1e-9`` to every density, so it
    answers ~50/50 for ``N(0, 1)`` against ``N(100, 1)`` at ``x = 60`` where the truth is ~1.

    Examples
    --------
    >>> model = GaussianNB()
    >>> for x, y in [({"t": 1.0}, "a"), ({"t": 1.2}, "a"), ({"t": 3.0}, "b"), ({"t": 3.4}, "b")]:
    ...     model.learn_one(x, y)
    >>> model.predict_one({"t": 1.1})
    'a'
    >>> f"{model.predict_proba_one({'t': 1.9})['a']:.8e}"   # scikit-learn: 3.78496926e-05
    '3.78496926e-05'
    """

    one_part = ("gaussian", GaussianPart, ("var_smoothing", "ddof"))

    def __init__(self, var_smoothing: float = 1e-9, ddof: int = 0) -> None:
        self.var_smoothing = var_smoothing
        self.ddof = ddof
        super().__init__()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"var_smoothing": 0.0, "ddof": 1}
