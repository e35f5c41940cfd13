"""Multinomial naive Bayes: per-class token counts (term frequencies, TF-IDF)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
from river.base import tags

from streamnb import kernels
from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.base import add_feature
from streamnb.naive_bayes.part import ZeroWeights
from streamnb.naive_bayes.blend import Blendable, BlendablePart, blended_counts
from streamnb.naive_bayes.smoothing import lidstone, lidstone_one
from streamnb.naive_bayes.values import (
    present,
    drop_impossible,
    first_seen,
    first_seen_sparse,
    frame_values,
    log_dot,
    numeric_items,
)
from streamnb.stats import Counts, Index, cells

__all__ = ["MultinomialNB", "MultinomialPart", "event_ops"]

#: The module of one event's count operations: compiled when built, the plain-Python one otherwise.
event_ops = kernels.compiled(cells)


class MultinomialPart(ZeroWeights, BlendablePart):
    """Non-negative frequencies of tokens from an open vocabulary.

    ``P(t | y) = (n[y, t] + alpha) / (N[y] + alpha * V)`` with ``N[y]`` the class's total
    frequency and ``V`` the tokens seen so far (also those seen with frequency 0), as in River.
    The log-likelihood of an event is ``sum_t x_t log P(t | y)``. A token never seen is
    ignored (``unseen="ignore"``, neutral; scikit-learn's vectorizers drop such tokens) or
    scored ``alpha / (N[y] + alpha * V)`` (``unseen="smooth"``, River's choice).
    """

    kind = "multinomial"
    #: The flat views and the CountCells over them (never pickled: see Part.__getstate__).
    _kernel: tuple = ((), None)

    def __init__(
        self, classes: Index, class_counts: Counts, alpha: float, unseen: str, epsilon: float = 0.0
    ) -> None:
        super().__init__(classes, class_counts, alpha, unseen, epsilon)
        self.finite = alpha > 0
        self.tokens = self.vocabulary = Index()
        self.counts = Counts([classes, self.tokens])
        self.totals = Counts([classes])
        #: Per token, the weight of the events that gave it a count of 0 (it joined the
        #: vocabulary without one): see :class:`ZeroWeights`.
        self.zeros = Counts([self.tokens])

    def prepare(self, x: Mapping) -> tuple[list, list]:
        return numeric_items(x, nonnegative=True)

    # -- the scalar path: one event, plain floats, the event's tokens only ------------------
    def viewed(self) -> tuple[Counts, Counts, Counts]:
        """Views ``(counts, counts strides, totals, totals strides, zeros, zeros strides)``."""
        return self.counts, self.totals, self.zeros

    def make_cells(self, views: tuple) -> cells.CountCells:
        """The count cells of the classes' tokens, totals and tokens' zero weights, for one event."""
        cv, (c0, c1), tv, (t0,), zv, (z0,) = views
        return event_ops.CountCells(cv, c0, c1, tv, t0, zv, z0)

    def learn_one(self, prepared: tuple[list, list], k: int, w: float) -> None:
        keys, values = prepared
        if not keys:
            return
        self._table = None
        ids = self.tokens.ids
        if any(key not in ids for key in keys):
            for key in keys:
                self.tokens.add(key)
            self.counts.fit()
            self.zeros.fit()
        learned = self._event_cells().learn(dict(zip(keys, values)), ids, k, w, False)
        assert learned, "a prepared event is plain"

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        cells = self._cells if read else self._event_cells()  # read: the cells hold x, read by joint_fast
        if not cells.learn(None if read else x, self.tokens.ids, k, w, True):
            return False
        self._table = None
        return True

    def _scored(self) -> bool:
        """Whether this part's settings are those of :meth:`CountCells.score`."""
        return self.alpha > 0 and self.epsilon == 0 and self.unseen == "ignore"

    def joint_fast(self, x: dict) -> list | None:
        if not self._scored():
            return None
        return self._event_cells().joint(x, self.tokens.ids, len(self.classes.keys), self.alpha,
                                         len(self.tokens.keys), True)

    def joint_features(self, prepared: tuple[list, list], n_classes: int) -> list:
        keys, values = prepared
        ids = self.tokens.ids
        if self._scored():  # every term finite
            got = self._event_cells().joint(dict(zip(keys, values)), ids, n_classes, self.alpha, len(self.tokens.keys),
                                            False)
            assert got is not None, "a prepared event is plain"
            return got
        out = [0.0] * n_classes
        cv, (c0, c1), tv, (t0,), _, _ = self._scalar()
        rows = [c * c0 for c in range(n_classes)]
        totals = [tv[c * t0] for c in range(n_classes)]
        alpha, n_tokens = self.alpha, len(self.tokens.keys)
        for key, x in zip(keys, values):
            j = ids.get(key)
            if (j is None and self.unseen == "ignore") or x == 0:
                continue
            add_feature(out, [
                x * lidstone_one(0.0 if j is None else cv[r + j * c1], total, alpha, n_tokens, self.epsilon)
                for r, total in zip(rows, totals)
            ])
        return out

    def blend_features(self, prepared: tuple[list, list], other: MultinomialPart, weight: float, mine: list,
                       theirs: list) -> Iterator[tuple[float, list, list, float]]:  # fmt: skip
        keys, values = prepared
        ids, their_ids = self.tokens.ids, other.tokens.ids
        cv, (c0, c1), tv, (t0,), _, _ = self._scalar()
        ov, (o0, o1), otv, (ot0,), _, _ = other._scalar()
        totals = blended_counts(mine, theirs, weight, tv, t0, 0, 0, otv, ot0, 0, 0)
        # V: this model's tokens, plus the event's that only the other knows
        n_tokens = len(self.tokens.keys) + sum(1 for key in keys if key not in ids and key in their_ids)
        for key, x in zip(keys, values):
            j, oj = ids.get(key), their_ids.get(key)
            if (j is None and oj is None and self.unseen == "ignore") or x == 0:
                continue
            yield x, blended_counts(mine, theirs, weight, cv, c0, c1, j, ov, o0, o1, oj), totals, n_tokens

    def check_unlearn(self, prepared: tuple[list, list], k: int, w: float) -> None:
        keys, values = prepared
        ids, v = self.tokens.lookup(keys), np.array(values, dtype=float) * w
        n = self.counts.n
        if ((ids < 0) & (v > 0)).any() or (n[k, ids[ids >= 0]] < v[ids >= 0]).any():
            raise InvalidEventError("this event was not learned with this class: cannot unlearn it")

    def unlearn(self, prepared: tuple[list, list], k: int, w: float) -> None:
        keys, values = prepared
        ids, v = self.tokens.lookup(keys), np.array(values, dtype=float)
        known = ids >= 0
        self.counts.add((k, ids[known]), -w * v[known])
        self.totals.add((k,), -w * float(v.sum()))
        self.counts.drop(1, self.unheld(ids[known], ids[known & (v == 0)], w))

    def frame_keys(self, X: pd.DataFrame) -> tuple[list, np.ndarray]:
        return list(X.columns), present(X)

    def feature_weights(self) -> np.ndarray:
        return self.counts.marginal(1)

    def forget(self, ids: np.ndarray) -> None:
        self.totals.raw("n")[: len(self.classes)] -= self.counts.n[:, ids].sum(axis=1)
        self.counts.drop(1, ids)

    @staticmethod
    def _convert(X: pd.DataFrame) -> Any:
        return frame_values(X, nonnegative=True, sparse=True)

    def check_frame(self, X: pd.DataFrame) -> None:
        self._memo = (X, self._convert(X))

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        v = self._converted(X, self._convert)
        names = list(X.columns)
        cols = self.tokens.lookup_columns(names)
        dense = isinstance(v, np.ndarray)
        new = np.flatnonzero(cols < 0)
        if len(new):  # new tokens, in the order a row-by-row reader meets them
            # (sparse: the stored entries are the tokens present)
            seen = new[first_seen((v == v)[:, new])] if dense else first_seen_sparse(v, among=new)
            if len(seen):
                cols = cols.copy()
                cols[seen] = self.tokens.extend([names[j] for j in seen.tolist()])
                cols = self.tokens.remember_columns(names, cols)  # the next batch's lookup
        if dense:  # per column, the weight of the rows that gave it a count of 0 (NaN: missing)
            off = (v == 0).T.astype(float) @ w
        else:  # a stored entry of 0
            stored = v.copy()
            stored.data = (stored.data == 0).astype(float)
            off = np.asarray(stored.T @ w).ravel()
        if dense and np.isnan(v).any():
            v = np.nan_to_num(v)
        n_classes = len(self.classes)
        Y = np.zeros((len(k), n_classes))
        Y[np.arange(len(k)), k] = w
        sums = np.ascontiguousarray(np.asarray(v.T @ Y).T)  # [classes, columns], row by row below
        if not (cols >= 0).all():
            known = np.flatnonzero(cols >= 0)
            sums, cols, off = np.ascontiguousarray(sums[:, known]), cols[known], off[known]
        self.zeros.raw("n")[cols] += off
        counts = self.counts.raw("n")
        for c in range(n_classes):
            counts[c, cols] += sums[c]
        self.totals.raw("n")[:n_classes] += sums.sum(axis=1)

    def _log_p(self, ids: np.ndarray) -> np.ndarray:
        """``log P(token | class)`` as ``[classes, len(ids)]``; ``ids < 0`` are unseen."""
        n = self.counts.raw("n")[: len(self.classes)]
        num = np.where(ids >= 0, n[:, np.maximum(ids, 0)], 0.0)
        return lidstone(num, self.totals.n[:, None], self.alpha, len(self.tokens), self.epsilon)

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        keys, values = prepared
        ids, v = self.tokens.lookup(keys), np.array(values, dtype=float)
        if self.unseen == "ignore" and (ids < 0).any():
            known = ids >= 0
            keys, ids, v = [f for f, ok in zip(keys, known) if ok], ids[known], v[known]
        with np.errstate(invalid="ignore"):
            ll = np.where(v == 0, 0.0, v * self._log_p(ids))
        return keys, ll.T

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        v = self._converted(X, self._convert)
        if isinstance(v, np.ndarray) and np.isnan(v).any():
            v = np.nan_to_num(v)
        ids = self.tokens.lookup_columns(X.columns if isinstance(X.columns, list) else list(X.columns))
        table, impossible = self._log_table()
        gathered = self._gathered
        if gathered is not None and gathered[0] is ids and gathered[1] is table:
            return log_dot(v, gathered[2], impossible)
        if np.array_equal(ids, np.arange(table.shape[1])):  # the vocabulary itself, in order
            log_p = table
        else:
            known = ids >= 0
            log_p = np.zeros((len(self.classes), len(ids)))  # unknown tokens: ignored ...
            log_p[:, known] = table[:, ids[known]]
            if self.unseen == "smooth" and not known.all():  # ... or smoothed
                log_p[:, ~known] = self._log_p(ids[~known])
                return log_dot(v, drop_impossible(log_p))
        self._gathered = (ids, table, log_p)  # for the next batch with these columns
        return log_dot(v, log_p, impossible)

    def _log_table(self) -> tuple[np.ndarray, bool]:
        """``log P(token | class)`` of the whole vocabulary (tokens impossible in every class
        dropped), and whether any entry is still ``-inf``; kept until the counts change."""
        cached = self._table
        if cached is None or cached[0].shape != (len(self.classes), len(self.tokens)):
            table = np.ascontiguousarray(drop_impossible(self._log_p(np.arange(len(self.tokens)))))
            cached = self._table = (table, bool(np.isneginf(table).any()))
        return cached

    #: ``_log_table()`` for batches, until the counts change.
    _table: tuple[np.ndarray, bool] | None = None
    #: ``(column ids, table, log P of those columns)`` of the last batch: a batch with the same
    #: columns (``lookup_columns`` gives the same ids object) and table reuses it.
    _gathered: tuple | None = None

    def changed(self) -> None:
        self._table = None

    def stats(self) -> dict[str, Counts]:
        return {"counts": self.counts, "totals": self.totals, "zeros": self.zeros}

    def tables(self) -> dict[str, pd.DataFrame]:
        classes = list(self.classes.keys)
        tokens = list(self.tokens.keys)
        p = np.exp(self._log_p(np.arange(len(tokens))))
        return {
            "p_token": pd.DataFrame(p.T, index=tokens, columns=classes),
            "token_counts": pd.DataFrame(self.counts.n.T, index=tokens, columns=classes),
        }


class MultinomialNB(Blendable):
    """Multinomial naive Bayes over token frequencies (word counts, TF-IDF).

    Parameters
    ----------
    alpha
        Additive (Laplace/Lidstone) smoothing; 0 for none.
    unseen
        ``"ignore"`` (default) or ``"smooth"`` (River's behaviour) for tokens never seen.
    epsilon
        Epsilon smoothing (with ``alpha=0``): a token never counted in a class gets
        probability ``epsilon`` there instead of 0. 0 turns it off.
    max_features
        Vocabulary cap: past it the rarest tokens are forgotten (as if never seen) down to 90%
        of the cap, see :mod:`streamnb.stats.prune`. None for no cap.

    Examples
    --------
    >>> model = MultinomialNB()
    >>> model.learn_one({"win": 2, "cash": 1}, "spam")
    >>> model.learn_one({"lunch": 1, "today": 1}, "ham")
    >>> model.predict_one({"cash": 1})
    'spam'

    A wrong label is corrected by unlearning the event, which restores the previous state:

    >>> model.learn_one({"cash": 1, "prize": 1}, "ham")
    >>> model.unlearn_one({"cash": 1, "prize": 1}, "ham")
    >>> model.tables()["token_counts"].index.tolist()
    ['win', 'cash', 'lunch', 'today']
    """

    sparse_batches = True

    one_part = ("multinomial", MultinomialPart, ("alpha", "unseen", "epsilon"))

    def __init__(
        self, alpha: float = 1.0, unseen: str = "ignore", epsilon: float = 0.0, max_features: int | None = None
    ) -> None:
        self.alpha = alpha
        self.unseen = unseen
        self.epsilon = epsilon
        self.max_features = max_features
        super().__init__()

    def _more_tags(self):
        return {tags.POSITIVE_INPUT}

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.0, "unseen": "smooth"}
        yield {"alpha": 0.0, "epsilon": 1e-4}
        yield {"max_features": 10}
