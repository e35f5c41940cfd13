"""Complement naive Bayes (Rennie et al., 2003): weights from the counts of the *other* classes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from river.base import tags

from streamnb.naive_bayes.base import BaseNB, Part, posterior_one
from streamnb.naive_bayes.smoothing import check_unseen
from streamnb.naive_bayes.multinomial import MultinomialPart
from streamnb.naive_bayes.values import frame_values
from streamnb.stats import Counts, Index

__all__ = ["ComplementNB", "ComplementPart"]


def sum_of_others(a: np.ndarray) -> np.ndarray:
    """For each row (class), the sum of the other rows, without subtracting (so a huge count in
    one class cannot cancel the others to 0 or below).

    >>> sum_of_others(np.array([[1e50, 1.0], [1.0, 2.0], [3.0, 4.0]])).tolist()
    [[4.0, 6.0], [1e+50, 5.0], [1e+50, 3.0]]
    """
    zero = np.zeros_like(a[:1])
    before = np.concatenate([zero, np.cumsum(a, axis=0)[:-1]])
    after = np.concatenate([np.cumsum(a[::-1], axis=0)[::-1][1:], zero])
    return before + after


class ComplementPart(MultinomialPart):
    """Token frequencies scored against each class's complement.

    With ``n[c, t]`` the frequency of token ``t`` in class ``c``, ``F[t] = sum_c n[c, t]`` and
    ``V`` the tokens seen so far, the complement of class ``c`` gives token ``t`` the smoothed
    probability ``theta[c, t] = (F[t] - n[c, t] + alpha) / D[c]`` where
    ``D[c] = sum_t (F[t] - n[c, t] + alpha)``. The weight of ``t`` for ``c`` is
    ``w[c, t] = -log theta[c, t]`` or, with ``norm``, ``log theta[c, t] / sum_t' log theta[c, t']``
    (Rennie et al.'s weight normalization), and the score of an event is
    ``sum_t x_t w[c, t]``, used as a joint log-likelihood (no class prior), as scikit-learn and
    River do. The statistics are those of :class:`MultinomialPart`; ``D[c]`` is derived from
    the class totals: ``D[c] = N - N[c] + alpha V``.
    """

    kind = "complement"

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, unseen: str, norm: bool) -> None:
        if not alpha > 0:
            raise ValueError(f"ComplementNB needs alpha > 0 (a token seen in one class only would weigh inf), got {alpha}")
        super().__init__(classes, class_counts, alpha, unseen)
        self.norm = norm
        self._log_d: np.ndarray | None = None
        self._sum_log: np.ndarray | None = None

    def changed(self) -> None:
        super().changed()
        self._log_d = self._sum_log = None

    def learn_one(self, prepared: tuple[list, list], k: int, w: float) -> None:
        super().learn_one(prepared, k, w)
        self.changed()

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        if not super().learn_fast(x, k, w, read):
            return False
        self.changed()
        return True

    def joint_fast(self, x: dict) -> list | None:
        return None  # the complement weights: the Python path

    def joint_one(self, prepared: tuple[list, list]) -> list:
        """The scalar path: ``sum_t x_t w[c, t]`` from the event's tokens, the class totals and
        the vocabulary size. With ``norm`` every weight is divided by a sum over the whole
        vocabulary, re-derived after each learned event: that case takes the array path."""
        if self.norm:
            return Part.joint_one(self, prepared)
        keys, values = prepared
        n_classes = len(self.classes.keys)
        out = [0.0] * n_classes
        n_tokens = len(self.tokens.keys)
        if not keys or not n_tokens:
            return out
        ids, alpha, log = self.tokens.ids, self.alpha, math.log
        cv, (c0, c1), tv, (t0,), _, _ = self._scalar()
        rows = [c * c0 for c in range(n_classes)]
        totals = [tv[c * t0] for c in range(n_classes)]
        # complement totals summed over the other classes, never by subtraction
        log_d = [log(sum(totals[:c]) + sum(totals[c + 1 :]) + alpha * n_tokens) for c in range(n_classes)]
        smooth = self.unseen == "smooth"
        for key, x in zip(keys, values):
            j = ids.get(key)
            if j is None:
                if not smooth:
                    continue
                counts = [0.0] * n_classes
            else:
                counts = [cv[r + j * c1] for r in rows]
            for c in range(n_classes):
                comp = sum(counts[:c]) + sum(counts[c + 1 :]) + alpha
                out[c] -= x * (log(comp) - log_d[c])
        return out

    def _log_denominator(self) -> np.ndarray:
        """``log D[c]``, the complement totals (derived lazily)."""
        if self._log_d is None:
            totals = self.totals.n
            with np.errstate(divide="ignore"):
                self._log_d = np.log(sum_of_others(totals) + self.alpha * len(self.tokens))
        return self._log_d

    def _sum_log_theta(self) -> np.ndarray:
        """``sum_t log theta[c, t]`` over the vocabulary, for ``norm`` (derived lazily)."""
        if self._sum_log is None:
            n = self.counts.n
            comp = sum_of_others(n) + self.alpha
            self._sum_log = np.log(comp).sum(axis=1) - len(self.tokens) * self._log_denominator()
        return self._sum_log

    def _weights(self, ids: np.ndarray) -> np.ndarray:
        """``w[c, t]`` as ``[classes, len(ids)]``; ``ids < 0`` are unseen tokens."""
        if not len(self.tokens):  # nothing known: every weight is 0
            return np.zeros((len(self.classes), len(ids)))
        n = self.counts.raw("n")[: len(self.classes)]
        cols = n[:, np.maximum(ids, 0)]
        comp = np.where(ids >= 0, sum_of_others(cols) + self.alpha, self.alpha)
        log_theta = np.log(comp) - self._log_denominator()[:, None]
        if self.norm:  # a sum of 0 (one token, one class: log 1): no information, weight 0
            total = np.broadcast_to(self._sum_log_theta()[:, None], log_theta.shape)
            return np.divide(log_theta, total, out=np.zeros_like(log_theta), where=total != 0)
        return -log_theta

    def _known(self, keys: list, values: list) -> tuple[list, np.ndarray, np.ndarray]:
        ids, v = self.tokens.lookup(keys), np.array(values, dtype=float)
        if self.unseen == "ignore" and (ids < 0).any():
            known = ids >= 0
            keys, ids, v = [f for f, ok in zip(keys, known) if ok], ids[known], v[known]
        return keys, ids, v

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        keys, ids, v = self._known(prepared[0], prepared[1])
        return keys, (v * self._weights(ids)).T

    def joint(self, prepared: tuple[list, list]) -> np.ndarray:
        _, ids, v = self._known(prepared[0], prepared[1])
        return self._weights(ids) @ v

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        v = np.nan_to_num(frame_values(X, nonnegative=True))
        ids = self.tokens.lookup(list(X.columns))
        if self.unseen == "ignore":
            v, ids = v[:, ids >= 0], ids[ids >= 0]
        return v @ self._weights(ids).T

    def tables(self) -> dict[str, pd.DataFrame]:
        classes, tokens = list(self.classes.keys), list(self.tokens.keys)
        w = self._weights(np.arange(len(tokens)))
        return {
            "weights": pd.DataFrame(w.T, index=tokens, columns=classes),
            "token_counts": pd.DataFrame(self.counts.n.T, index=tokens, columns=classes),
        }


class ComplementNB(BaseNB):
    """Complement naive Bayes over token frequencies, for imbalanced text classes.

    Each class is scored by how *unlike* its complement (all the other classes) the event is,
    which uses more data per weight than :class:`MultinomialNB` when a class is rare
    (Rennie, Shih, Teevan & Karger, *Tackling the poor assumptions of naive Bayes text
    classifiers*, ICML 2003). Probabilities are the normalized exponentials of the scores, and
    equal scikit-learn's ``ComplementNB(alpha, norm)`` fitted on the same events over the tokens
    seen so far, and River's ``ComplementNB(alpha)`` with ``unseen="smooth"``.

    Parameters
    ----------
    alpha
        Additive smoothing of the complement counts (must be positive).
    norm
        Normalize each class's weights by their sum (Rennie et al.'s step 7; scikit-learn's
        ``norm=True``).
    unseen
        ``"ignore"`` (default): tokens never seen count for nothing; ``"smooth"``: they get
        the weight of a zero count (River's behaviour).
    max_features
        Vocabulary cap: past it the rarest tokens are forgotten down to 90% of the cap (see
        :mod:`streamnb.stats.prune`). None for no cap.

    Examples
    --------
    River's example (its documented probabilities for ``"test"``, an unseen token, smoothed):

    >>> docs = [({"Chinese": 2, "Beijing": 1}, "yes"), ({"Chinese": 2, "Shanghai": 1}, "yes"),
    ...         ({"Chinese": 1, "Macao": 1}, "maybe"), ({"Tokyo": 1, "Japan": 1, "Chinese": 1}, "no")]
    >>> model = ComplementNB(unseen="smooth")
    >>> for x, y in docs:
    ...     model.learn_one(x, y)
    >>> {c: round(p, 3) for c, p in model.predict_proba_one({"test": 1}).items()}
    {'yes': 0.275, 'maybe': 0.375, 'no': 0.35}
    >>> model.predict_one({"Chinese": 1, "Shanghai": 1})
    'yes'
    """

    sparse_batches = True

    one_part = ("complement", ComplementPart, ("alpha", "unseen", "norm"))

    def __init__(
        self, alpha: float = 1.0, norm: bool = False, unseen: str = "ignore", max_features: int | None = None
    ) -> None:
        self.unseen = check_unseen(unseen)
        self.alpha = alpha
        self.norm = norm
        self.max_features = max_features
        super().__init__()

    def _log_prior(self) -> np.ndarray:
        """No class prior: the scores are the whole posterior (as in scikit-learn and River)."""
        if self._log_prior_cache is None:
            self._log_prior_cache = np.zeros(len(self._classes))
        return self._log_prior_cache

    def _log_prior_one(self) -> list:
        return [0.0] * len(self._classes)

    def _proba(self, jll: list) -> dict:
        return dict(zip(self._classes.keys, posterior_one(jll, self._log_prior_one())))

    def _more_tags(self):
        return {tags.POSITIVE_INPUT}

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "norm": True, "unseen": "smooth"}
        yield {"max_features": 10}

