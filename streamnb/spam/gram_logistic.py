"""The :class:`~streamnb.spam.SpamFilter`'s second model: an online logistic regression on the
byte n-grams of a message.

A :class:`~streamnb.text.Tokenizer` with ``char_grams`` adds the distinct byte n-grams of the
start of a raw message as features whose keys begin with
:data:`~streamnb.text.tokenizer.GRAM_PREFIX` (:func:`split_grams` tells them from the tokens).
:class:`GramLogistic` hashes them into ``2 ** bits`` float32 weights and learns one gradient
step of the logistic loss per message (Goodman and Yih, *Online discriminative spam filter
training*, 2006); the filter adds its log-odds to the Fisher logit of the tokens.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from itertools import compress
from operator import methodcaller, not_

import numpy as np

from streamnb.exceptions import StateError
from streamnb.naive_bayes.values import check_event, numeric_items
from streamnb.text.tokenizer import GRAM_PREFIX

__all__ = ["GramLogistic", "split_grams"]

_IS_GRAM = methodcaller("startswith", GRAM_PREFIX)


def split_grams(x: Mapping) -> tuple[list, list]:
    """The present tokens of ``x`` (values above 0) and its present byte n-grams."""
    check_event(x)
    keys, v = numeric_items(x)
    present = keys if min(v, default=1.0) > 0 else [key for key, value in zip(keys, v) if value > 0]
    if set(map(type, present)) <= {str}:  # the usual case, in C loops: thousands of n-grams a message
        gram = list(map(_IS_GRAM, present))
        if True not in gram:
            return present, []
        return list(compress(present, map(not_, gram))), list(compress(present, gram))
    gram = [type(key) is str and key.startswith(GRAM_PREFIX) for key in present]
    return list(compress(present, map(not_, gram))), list(compress(present, gram))


class GramLogistic:
    """Online logistic regression on binary byte n-gram features hashed into ``2 ** bits``
    weights (float32, allocated at the first step); ``rate`` the step (None: the features are
    ignored, no weight is learned)."""

    def __init__(self, rate: float | None, bits: int) -> None:
        if rate is not None and not rate > 0:
            raise ValueError(f"logistic_rate must be positive or None, got {rate}")
        if not (isinstance(bits, int) and 8 <= bits <= 26):
            raise ValueError(f"logistic_bits must be an int in [8, 26], got {bits!r}")
        self.rate = rate
        self.bits = bits
        self.weights: np.ndarray | None = None  # once an n-gram is learned

    def ids(self, grams: list) -> np.ndarray:
        """The weights' indices of byte n-gram features: a polynomial hash of the characters
        (the same in every process), in one pass over a character array; CRC-32 if a key is long."""
        if self.rate is None or not grams:
            return np.zeros(0, dtype=np.int64)
        if max(map(len, grams)) > 16:
            h = np.fromiter((zlib.crc32(g.encode("utf-8", "surrogatepass")) for g in grams), np.uint64, len(grams))
        else:
            chars = np.array(grams)  # fixed-width UCS-4: one row of code points per key
            codes = chars.view(np.uint32).reshape(len(grams), -1).astype(np.uint64)
            h = np.zeros(len(grams), dtype=np.uint64)
            for column in codes.T:  # at most 16 columns
                h = (h ^ column) * np.uint64(0x100000001B3)  # FNV-1a on code points, wrapping at 2^64
        return ((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - self.bits)).astype(np.int64)

    def log_odds(self, ids: np.ndarray) -> float:
        """The log-odds of spam for the n-gram indices ``ids``."""
        if self.weights is None or not len(ids):
            return 0.0
        return float(self.weights[ids].sum(dtype=np.float64))

    def step(self, ids: np.ndarray, spam: bool, z: float, w: float) -> None:
        """One gradient step of the logistic loss at log-odds ``z``, message weight ``w``."""
        if not len(ids) or self.rate is None:
            return
        if self.weights is None:
            self.weights = np.zeros(1 << self.bits, dtype=np.float32)
        p = 1.0 / (1.0 + math.exp(-min(50.0, max(-50.0, z))))
        np.add.at(self.weights, ids, np.float32(self.rate * w * (float(spam) - p)))

    def decay(self, factor: float) -> None:
        """Multiply every weight by ``factor``."""
        if self.weights is not None:
            self.weights *= np.float32(factor)

    def load(self, saved: object) -> None:
        """Take saved weights (:class:`~streamnb.exceptions.StateError` unless there are
        ``2 ** bits`` of them, all finite)."""
        weights = np.asarray(saved, dtype=np.float32)
        if weights.shape != (1 << self.bits,) or not np.isfinite(weights).all():
            raise StateError(f"invalid logistic weights of shape {weights.shape}")
        self.weights = weights.copy()
