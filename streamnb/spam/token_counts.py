"""The message counts a :class:`~streamnb.spam.SpamFilter` scores a message's tokens by: a token
never learned falls back on its most telling learned degenerate form
(:mod:`streamnb.text.degenerate`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streamnb.stats import Index
from streamnb.text.degenerate import degenerates

__all__ = ["message_counts"]


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
