"""Bounded vocabularies: which keys to forget when an open axis outgrows its cap.

Policy (:func:`rarest`): when a vocabulary holds more than ``cap`` keys it is cut back to
:func:`target` ``(cap)`` = 90% of the cap, dropping the keys with the smallest total weight
(with exponential decay, the weight of a key no longer seen shrinks, so rarity is recent
rarity). Heavy hitters therefore stay. Among keys of equal weight at the boundary the choice
depends on the keys only (their encoded form, sorted), never on the order in which they
arrived, so shuffling the features of an event changes nothing. Cutting to 90% rather than to
the cap amortizes a compaction (``O(cap)``) over ``cap / 10`` new keys; the vocabulary never
holds more than ``cap`` keys after an update.

>>> rarest(np.array([5.0, 1.0, 3.0, 1.0, 9.0]), 2).tolist()
[1, 3]
>>> rarest(np.array([2.0, 1.0, 1.0]), 1, keys=["a", "zz", "b"]).tolist()
[2]
>>> target(1000)
900
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from streamnb.stats.index import encode_key

__all__ = ["rarest", "target"]


def target(cap: int) -> int:
    """Size a vocabulary is cut back to once it exceeds ``cap``."""
    return cap - max(1, cap // 10) if cap > 1 else cap


def rarest(weights: np.ndarray, n_drop: int, keys: Sequence | None = None) -> np.ndarray:
    """Sorted ids of the ``n_drop`` smallest ``weights``.

    Ties at the boundary are broken by the keys' encoded form (:func:`encode_key`, as JSON) when
    ``keys`` are given, else by id.
    """
    weights = np.asarray(weights, dtype=float)
    n_drop = max(0, min(int(n_drop), len(weights)))
    if n_drop == 0:
        return np.empty(0, dtype=np.intp)
    if n_drop == len(weights):
        return np.arange(len(weights))
    order = np.argsort(weights, kind="stable")
    edge = weights[order[n_drop - 1]]
    below = np.flatnonzero(weights < edge)
    tied = np.flatnonzero(weights == edge)
    if keys is not None and len(tied) > n_drop - len(below):
        names = [json.dumps(encode_key(keys[i]), sort_keys=True) for i in tied.tolist()]
        tied = tied[np.argsort(np.array(names, dtype=object), kind="stable")]
    return np.sort(np.concatenate([below, tied[: n_drop - len(below)]]))
