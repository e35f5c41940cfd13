"""Bernoulli naive Bayes: per-class presence counts of binary features."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.categorical import lidstone
from streamnb.naive_bayes.values import (
    class_sums,
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


class BernoulliPart(Part):
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

    def prepare(self, x: Mapping) -> tuple[list, np.ndarray, list]:
        keys, v = numeric_items(x)
        missing = [f for f in x if is_missing(x[f])] if len(keys) < len(x) else []
        return keys, v, missing

    def learn(self, prepared: tuple[list, np.ndarray, list], k: int, w: float) -> None:
        keys, v, _ = prepared
        if keys:
            ids = self.features.lookup(keys, add=True)
            self.counts.add((k, ids[v > self.true_threshold]), w)

    def learn_batch(self, prepared: list, k: np.ndarray, w: np.ndarray) -> None:
        if len(prepared) == 1:  # no repeated cell: plain fancy-index adds
            self.learn(prepared[0], int(k[0]), float(w[0]))
            return
        sizes = [len(keys) for keys, _, _ in prepared]
        if not sum(sizes):
            return
        ids = self.features.lookup([f for keys, _, _ in prepared for f in keys], add=True)
        present = np.concatenate([v for _, v, _ in prepared]) > self.true_threshold
        self.counts.add_at((np.repeat(k, sizes)[present], ids[present]), np.repeat(w, sizes)[present])

    def _present_ids(self, prepared: tuple[list, np.ndarray, list]) -> tuple[np.ndarray, np.ndarray]:
        """Known ids of the event's features, and those of them that are present."""
        keys, v, _ = prepared
        ids = self.features.lookup(keys)
        present = v > self.true_threshold
        return ids, ids[present]

    def check_unlearn(self, prepared: tuple[list, np.ndarray, list], k: int, w: float) -> None:
        _, present = self._present_ids(prepared)
        if (present < 0).any() or (self.counts.n[k, present] < w).any():
            raise InvalidEventError("this event was not learned with this class: cannot unlearn it")

    def unlearn(self, prepared: tuple[list, np.ndarray, list], k: int, w: float) -> None:
        ids, present = self._present_ids(prepared)
        self.counts.add((k, present), -w)
        self.counts.drop(1, self.counts.empty(1, ids[ids >= 0]))

    def event_keys(self, prepared: tuple) -> list:
        return prepared[0]

    def frame_keys(self, X: pd.DataFrame) -> tuple[list, np.ndarray]:
        v = frame_values(X)
        return list(X.columns), v == v

    def feature_weights(self) -> np.ndarray:
        return self.counts.marginal(1)

    def forget(self, ids: np.ndarray) -> None:
        self.counts.drop(1, ids)

    def check_frame(self, X: pd.DataFrame) -> None:
        frame_values(X)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        v = frame_values(X)
        names = list(X.columns)
        self.features.lookup([names[j] for j in first_seen(v == v)], add=True)
        cols = self.features.lookup(names)
        known = cols >= 0
        present = (v[:, known] > self.true_threshold).astype(float)
        self.counts.raw("n")[: len(self.classes), cols[known]] += class_sums(k, w, present, len(self.classes))

    def _log_p(self) -> tuple[np.ndarray, np.ndarray]:
        """``log P(present | class)`` and ``log P(absent | class)``, ``[classes, features]``."""
        n = self.counts.n
        n_class = self.class_counts.n[:, None]
        yes = drop_impossible(lidstone(n, n_class, self.alpha, 2))
        return yes, drop_impossible(lidstone(n_class - n, n_class, self.alpha, 2))

    def log_likelihoods(self, prepared: tuple[list, np.ndarray, list]) -> tuple[list, np.ndarray]:
        keys, v, missing = prepared
        ids = self.features.lookup(keys)
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

    def joint(self, prepared: tuple[list, np.ndarray, list]) -> np.ndarray:
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
        return {"counts": self.counts}

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

    def __init__(self, alpha: float = 1.0, true_threshold: float = 0.0, max_features: int | None = None) -> None:
        self.alpha = alpha
        self.true_threshold = true_threshold
        self.max_features = max_features
        super().__init__()

    def _make_parts(self) -> dict[str, Part]:
        return {
            "bernoulli": BernoulliPart(self._classes, self._class_counts, self.alpha, self.true_threshold)
        }

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.0, "true_threshold": 0.5}
        yield {"max_features": 10}
