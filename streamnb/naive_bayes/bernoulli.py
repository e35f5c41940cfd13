"""Bernoulli naive Bayes: per-class presence counts of binary features."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.part import ZeroWeights
from streamnb.naive_bayes.smoothing import (
    lidstone,
    lidstone_log_count,
    lidstone_log_odds,
    lidstone_log_total,
    lidstone_one,
)
from streamnb.naive_bayes.values import (
    first_seen_sparse,
    is_sparse_frame,
    present,
    drop_impossible,
    first_seen,
    frame_values,
    is_missing,
    log_dot,
    numeric_items,
)
from streamnb.stats import Counts, Index

__all__ = ["BernoulliNB", "BernoulliPart", "ABSENT"]

#: Name of the summed contribution of every known feature absent from an event.
ABSENT = "(absent features)"


class BernoulliPart(ZeroWeights, Part):
    """Binary features: present when the value is above ``true_threshold``.

    ``P(f present | y) = (n[y, f] + alpha) / (n[y] + 2 alpha)``. Every feature seen so far takes
    part in every prediction: a known feature absent from the event counts as absent (as in
    River and scikit-learn); a missing value (None, NaN) is skipped when predicting, and counts
    as absent when learning (presence counts share the class count as denominator). Features
    never seen are ignored.
    """

    kind = "bernoulli"

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, true_threshold: float) -> None:
        super().__init__(classes, class_counts)
        self.finite = alpha > 0
        self.alpha = alpha
        self.true_threshold = true_threshold
        self.features = self.vocabulary = Index()
        self.counts = Counts([classes, self.features])
        #: Per feature, the weight of the events that gave it a value but not present (at or
        #: below the threshold): see :class:`ZeroWeights`.
        self.zeros = Counts([self.features])
        self._hist: list | None = None  # see learn_one
        self._absent: list = []

    def prepare(self, x: Mapping) -> tuple[list, list, list]:
        keys, v = numeric_items(x)
        missing = [f for f in x if is_missing(x[f])] if len(keys) < len(x) else []
        return keys, v, missing

    def _learn_arrays(self, prepared: tuple[list, list, list], k: int, w: float) -> None:
        """One event counted with numpy (the path for ``alpha = 0``, see :meth:`learn_one`)."""
        keys, v, _ = prepared
        if keys:
            ids = self.features.lookup(keys, add=True)
            on = np.array(v) > self.true_threshold
            self.counts.add((k, ids[on]), w)
            self.zeros.add((ids[~on],), w)

    def changed(self) -> None:
        self._hist = None

    # -- the scalar path: one event, plain floats, the event's features only ----------------
    #
    # Every known feature takes part in a prediction, so the absent ones are summed once per
    # class: A[c] = sum_t log P(t absent | c) = sum_t log(N[c] - n[c, t] + alpha) - V log(N[c]
    # + 2 alpha). Its terms depend on the class count N[c], which every event of the class
    # changes, so it is kept as a histogram of the counts, H[c] = {m: features with n[c, t] = m},
    # updated by the event's present features, and A[c] = sum_m H[c][m] log(N[c] - m + alpha)
    # - V log(N[c] + 2 alpha), recomputed when class c changed: the cost is the number of
    # distinct counts (at most sqrt(2 x the class's presences) for unit weights), not the
    # vocabulary. An event then adds log(n + alpha) - log(N - n + alpha) per present feature.

    def viewed(self) -> tuple[Counts, Counts]:
        """Views ``(counts, counts strides, class counts, class counts strides)``."""
        return self.counts, self.class_counts

    def _histograms(self) -> list:
        """Per class, ``{count: number of features with that count}`` (built from the counts
        after anything but :meth:`learn_one` changed them)."""
        hist = self._hist
        if hist is None:
            hist = self._hist = []
            self._absent = []
            for row in self.counts.n:
                values, times = np.unique(row, return_counts=True)
                hist.append(dict(zip(values.tolist(), times.tolist())))
                self._absent.append(None)
        while len(hist) < len(self.classes.keys):  # a new class: every feature counted 0 times
            hist.append({0.0: len(self.features.keys)} if len(self.features.keys) else {})
            self._absent.append(None)
        return hist

    def learn_one(self, prepared: tuple[list, list, list], k: int, w: float) -> None:
        keys, values, _ = prepared
        if not self.alpha > 0:  # the scalar prediction needs alpha > 0: count the numpy way
            self._learn_arrays(prepared, k, w)
            self.changed()
            return
        hist = self._histograms()
        absent = self._absent
        absent[k] = None  # the class count changed
        if not keys:
            return
        ids = self.features.ids
        if any(key not in ids for key in keys):
            for key in keys:
                if key not in ids:
                    self.features.add(key)
                    for c, h in enumerate(hist):
                        h[0.0] = h.get(0.0, 0) + 1
                        absent[c] = None
            self.counts.fit()
        cv, (c0, c1), _, _ = self._scalar()
        row, threshold, h = k * c0, self.true_threshold, hist[k]
        zv = None
        for key, x in zip(keys, values):
            if not x > threshold:
                if zv is None:
                    zv, (z0,) = self.zeros.flat("n")
                zv[ids[key] * z0] += w
            else:
                i = row + ids[key] * c1
                m = cv[i]
                n = cv[i] = m + w
                left = h[m] - 1
                if left:
                    h[m] = left
                else:
                    del h[m]
                h[n] = h.get(n, 0) + 1

    def joint_one(self, prepared: tuple[list, list, list]) -> list:
        if not self.alpha > 0:
            return super().joint_one(prepared)
        keys, values, missing = prepared
        hist = self._histograms()
        absent = self._absent
        cv, (c0, c1), nv, (n0,) = self._scalar()
        alpha, n_features = self.alpha, len(self.features.keys)
        n_classes = len(self.classes.keys)
        classes = [(c * c0, nv[c * n0]) for c in range(n_classes)]
        for c, (_, n_c) in enumerate(classes):
            if absent[c] is None:
                absent[c] = math.fsum(
                    times * lidstone_log_count(n_c - m, alpha) for m, times in hist[c].items()
                ) - n_features * lidstone_log_total(n_c, alpha, 2)
        out = list(absent[:n_classes])
        ids, threshold = self.features.ids, self.true_threshold
        for key, x in zip(keys, values):
            j = ids.get(key)
            if j is not None and x > threshold:
                col = j * c1
                for c, (r, n_c) in enumerate(classes):
                    out[c] += lidstone_log_odds(cv[r + col], n_c, alpha)
        for key in missing:  # skipped: take their absence back out
            j = ids.get(key)
            if j is not None:
                col = j * c1
                for c, (r, n_c) in enumerate(classes):
                    out[c] -= lidstone_one(n_c - cv[r + col], n_c, alpha, 2)
        return out

    def _present_ids(self, prepared: tuple[list, list, list]) -> tuple[np.ndarray, np.ndarray]:
        """Known ids of the event's features, and those of them that are present."""
        keys, v, _ = prepared
        ids = self.features.lookup(keys)
        present = np.array(v, dtype=float) > self.true_threshold
        return ids, ids[present]

    def check_unlearn(self, prepared: tuple[list, list, list], k: int, w: float) -> None:
        _, present = self._present_ids(prepared)
        if (present < 0).any() or (self.counts.n[k, present] < w).any():
            raise InvalidEventError("this event was not learned with this class: cannot unlearn it")

    def unlearn(self, prepared: tuple[list, list, list], k: int, w: float) -> None:
        ids, present = self._present_ids(prepared)
        self.counts.add((k, present), -w)
        known = ids[ids >= 0]
        self.counts.drop(1, self.unheld(known, np.setdiff1d(known, present), w))

    def frame_keys(self, X: pd.DataFrame) -> tuple[list, np.ndarray]:
        return list(X.columns), present(X)

    def feature_weights(self) -> np.ndarray:
        return self.counts.marginal(1)

    def forget(self, ids: np.ndarray) -> None:
        self.counts.drop(1, ids)

    def check_frame(self, X: pd.DataFrame) -> None:
        frame_values(X)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        names = list(X.columns)
        if is_sparse_frame(X):  # the stored entries are the features of each row
            v = frame_values(X, sparse=True)
            order = first_seen_sparse(v)
            on = v > self.true_threshold
        else:
            v = frame_values(X)
            order = first_seen(v == v)
            on = v > self.true_threshold
        self.features.lookup([names[j] for j in order], add=True)
        cols = self.features.lookup(names)
        known = np.flatnonzero(cols >= 0)
        Y = np.zeros((len(k), len(self.classes)))
        Y[np.arange(len(k)), k] = w
        sums = np.asarray((on.T.astype(float) @ Y).T)[:, known]  # [classes, known columns]
        self.counts.raw("n")[: len(self.classes), cols[known]] += sums
        if is_sparse_frame(X):  # a value not present: a stored entry at or below the threshold
            stored = v.copy()
            stored.data[:] = 1.0
            off = np.asarray(stored.T @ w - on.T.astype(float) @ w).ravel()
        else:
            off = ((v == v) & ~on).T.astype(float) @ w
        self.zeros.raw("n")[cols[known]] += off[known]

    def _log_p(self) -> tuple[np.ndarray, np.ndarray]:
        """``log P(present | class)`` and ``log P(absent | class)``, ``[classes, features]``."""
        n = self.counts.n
        n_class = self.class_counts.n[:, None]
        yes = drop_impossible(lidstone(n, n_class, self.alpha, 2))
        return yes, drop_impossible(lidstone(n_class - n, n_class, self.alpha, 2))

    def log_likelihoods(self, prepared: tuple[list, list, list]) -> tuple[list, np.ndarray]:
        keys, values, missing = prepared
        ids, v = self.features.lookup(keys), np.array(values, dtype=float)
        known = ids >= 0
        keys, ids, v = [f for f, ok in zip(keys, known) if ok], ids[known], v[known]
        log_yes, log_no = self._log_p()
        rows = np.where(v > self.true_threshold, log_yes[:, ids], log_no[:, ids]).T
        rest = np.ones(len(self.features), dtype=bool)
        rest[ids] = False
        if missing:
            mids = self.features.lookup(missing)
            rest[mids[mids >= 0]] = False
        absent = np.where(rest, log_no, 0.0).sum(axis=1)
        return keys + [ABSENT], np.vstack([rows, absent[None, :]])

    def joint(self, prepared: tuple[list, list, list]) -> np.ndarray:
        # features that rule out every class are already dropped (drop_impossible), feature by
        # feature; the absent features' row is a sum of several, so it is not dropped as one
        _, ll = self.log_likelihoods(prepared)
        return ll.sum(axis=0)

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        v = frame_values(X)
        ids = self.features.lookup(list(X.columns))
        known = ids >= 0
        v, ids = v[:, known], ids[known]
        log_yes, log_no = self._log_p()
        present = (v > self.true_threshold).astype(float)
        absent = ((v <= self.true_threshold) & (v == v)).astype(float)
        rest = np.ones(len(self.features), dtype=bool)
        rest[ids] = False
        out = log_dot(present, log_yes[:, ids]) + log_dot(absent, log_no[:, ids])
        return out + np.where(rest, log_no, 0.0).sum(axis=1)

    def stats(self) -> dict[str, Counts]:
        return {"counts": self.counts, "zeros": self.zeros}

    def tables(self) -> dict[str, pd.DataFrame]:
        log_yes, _ = self._log_p()
        return {
            "p_present": pd.DataFrame(
                np.exp(log_yes).T, index=list(self.features.keys), columns=list(self.classes.keys)
            ),
            "presence_counts": pd.DataFrame(
                self.counts.n.T, index=list(self.features.keys), columns=list(self.classes.keys)
            ),
        }


class BernoulliNB(BaseNB):
    """Bernoulli naive Bayes over binary (or binarized) features.

    Parameters
    ----------
    alpha
        Additive smoothing; 0 for none.
    true_threshold
        A value above this is "present" (River's ``true_threshold``, scikit-learn's
        ``binarize``).
    max_features
        Vocabulary cap: past it the features present least often are forgotten down to 90% of
        the cap (see :mod:`streamnb.stats.prune`). None for no cap.

    Notes
    -----
    River adds ``1e-9`` to each probability before taking its log; this model does not, so
    they differ by about ``1e-9 / p`` per feature (shown by a test). scikit-learn agrees to
    rounding when it is given every feature from the start.

    Examples
    --------
    >>> model = BernoulliNB()
    >>> model.learn_one({"free": 1, "meet": 0}, "spam")
    >>> model.learn_one({"free": 0, "meet": 1}, "ham")
    >>> model.predict_one({"free": 1})
    'spam'
    """

    sparse_batches = True

    exact_batch = True  # counts: a batch adds exactly what its events add one by one

    one_part = ("bernoulli", BernoulliPart, ("alpha", "true_threshold"))

    def __init__(self, alpha: float = 1.0, true_threshold: float = 0.0, max_features: int | None = None) -> None:
        self.alpha = alpha
        self.true_threshold = true_threshold
        self.max_features = max_features
        super().__init__()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.0, "true_threshold": 0.5}
        yield {"max_features": 10}
