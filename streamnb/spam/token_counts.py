"""The statistics of a :class:`~streamnb.spam.SpamFilter`: per class, the messages learned and
the messages each token is in (:class:`TokenCounts`), read so that a token never learned falls
back on its most telling learned degenerate form (:mod:`streamnb.text.degenerate`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from streamnb.exceptions import InvalidEventError
from streamnb.stats import Counts, Index, rarest, target
from streamnb.text.degenerate import degenerates

__all__ = ["TokenCounts", "message_counts"]


def message_counts(tokens: Index, n: np.ndarray, keys: list, degenerate: bool,
                   f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Message counts ``(n_spam, n_ham)`` of the tokens ``keys``, read from ``n`` (``[ham,
    spam]`` by id in ``tokens``). With ``degenerate``, a token never learned takes the counts
    of its learned degenerate form whose ``f(n_spam, n_ham)`` is farthest from 0.5 (the first
    such form on ties): at most :data:`~streamnb.text.degenerate.MAX_FORMS` lookups per unseen
    token."""
    ids = tokens.lookup(keys)
    known, safe = ids >= 0, np.maximum(ids, 0)
    n_ham = np.where(known, n[0, safe], 0.0)
    n_spam = np.where(known, n[1, safe], 0.0)
    if degenerate and not known.all():  # every unseen token's forms in one lookup
        owners, forms = [], []
        for i in np.flatnonzero(~known).tolist():
            if isinstance(keys[i], str):
                for form in degenerates(keys[i]):
                    owners.append(i)
                    forms.append(form)
        found = tokens.lookup(forms)
        hit = found >= 0
        if hit.any():
            found = found[hit]
            strength = np.abs(f(n[1, found], n[0, found]) - 0.5).tolist()
            best: dict[int, tuple[float, int]] = {}
            for i, strong, j in zip(np.asarray(owners)[hit].tolist(), strength, found.tolist()):
                if i not in best or strong > best[i][0]:  # the first of the strongest forms
                    best[i] = (strong, j)
            for i, (_, j) in best.items():
                n_spam[i], n_ham[i] = n[1, j], n[0, j]
    return n_spam, n_ham


class TokenCounts:
    """Per class of ``classes`` (id 0 ham, 1 spam), the messages learned (weighted) and the
    messages each token is in; past ``max_tokens`` tokens, those in the fewest messages are
    forgotten down to 90% of the cap (:mod:`streamnb.stats.prune`; None: no cap)."""

    def __init__(self, classes: Index, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens
        self.tokens = Index()
        self.messages = Counts([classes])
        self.counts = Counts([classes, self.tokens])

    def __len__(self) -> int:
        """The size of the vocabulary."""
        return len(self.tokens)

    def totals(self) -> tuple[float, float]:
        """Messages learned ``(spam, ham)`` (weighted; the two classes exist)."""
        n = self.messages.n
        return float(n[1]), float(n[0])

    def of(self, keys: list, degenerate: bool,
           f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Message counts ``(n_spam, n_ham)`` of the tokens ``keys`` (:func:`message_counts`;
        zeros before anything is learned)."""
        n = self.counts.n
        if not n.shape[1]:
            return np.zeros(len(keys)), np.zeros(len(keys))
        return message_counts(self.tokens, n, keys, degenerate, f)

    def add(self, k: int, keys: list, w: float) -> None:
        """A message of class ``k`` whose present tokens are ``keys``, of weight ``w``."""
        self.messages.add((k,), w)
        if keys:
            self.counts.add((k, self.tokens.lookup(keys, add=True)), w)
        if self.max_tokens is not None and len(self.tokens) > self.max_tokens:
            weights = self.counts.marginal(1)
            self.counts.drop(1, rarest(weights, len(weights) - target(self.max_tokens), self.tokens.keys))

    def remove(self, k: int, keys: list, w: float, y: Hashable) -> None:
        """Take back exactly what :meth:`add` added (tokens in no message any more are
        forgotten); :class:`~streamnb.exceptions.InvalidEventError`, changing nothing, if the
        message cannot have been learned as ``y`` (class ``k``)."""
        ids = self.tokens.lookup(keys)
        if self.messages.n[k] < w or (ids < 0).any() or (self.counts.n[k, ids] < w).any():
            raise InvalidEventError(f"this message was not learned as {y!r}: cannot unlearn it")
        self.messages.add((k,), -w)
        self.counts.add((k, ids), -w)
        self.counts.drop(1, self.counts.empty(1, ids))

    def decay(self, factor: float) -> None:
        """Multiply every count by ``factor``."""
        self.messages.decay(factor)
        self.counts.decay(factor)

    def to_state(self) -> dict[str, Any]:
        return {"messages": self.messages.to_state(), "counts": self.counts.to_state()}

    def load_state(self, state: dict[str, Any]) -> None:
        self.counts.load_state(state["counts"])
        self.messages.load_state(state["messages"])
