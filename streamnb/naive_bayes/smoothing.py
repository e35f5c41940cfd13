"""Smoothing of counted probabilities, shared by every counting part (categorical, multinomial,
Bernoulli, the tree CPTs): Lidstone/Laplace with its alpha -> 0 limit, epsilon smoothing, and
what a value never seen does at prediction time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.naive_bayes.part import Part
from streamnb.stats import Counts, Index

__all__ = ["UNSEEN_POLICIES", "SmoothedPart", "check_unseen", "lidstone", "lidstone_one"]

#: What an unseen category does at prediction time.
UNSEEN_POLICIES = ("ignore", "smooth")


def check_unseen(unseen: str) -> str:
    """``unseen`` if it is one of :data:`UNSEEN_POLICIES`, else ValueError."""
    if unseen not in UNSEEN_POLICIES:
        raise ValueError(f"unseen must be one of {UNSEEN_POLICIES}, got {unseen!r}")
    return unseen


class SmoothedPart(Part):
    """A part of counts smoothed by :func:`lidstone` (``alpha``, ``epsilon``), scoring a value
    never seen by ``unseen`` (one of :data:`UNSEEN_POLICIES`)."""

    def __init__(
        self, classes: Index, class_counts: Counts, alpha: float, unseen: str, epsilon: float = 0.0
    ) -> None:
        super().__init__(classes, class_counts)
        self.unseen = check_unseen(unseen)
        self.alpha = alpha
        self.epsilon = epsilon


def lidstone(num: np.ndarray, den: np.ndarray, alpha: float, n_values: Any, epsilon: float = 0.0) -> np.ndarray:
    """``log((num + alpha) / (den + alpha * n_values))``; for ``alpha = 0`` the limit alpha -> 0+.

    The limit is ``num / den`` where ``den > 0`` and ``1 / n_values`` where nothing was counted.
    With nothing counted and no value known at all (an empty vocabulary) the answer is ``log 1``.
    Epsilon smoothing: with ``epsilon > 0`` a probability that would be 0 (a value never counted
    where something was) is ``epsilon`` instead; choose ``epsilon < 1/N`` for ``N`` events so an
    unseen combination weighs less than one observation.

    >>> np.exp(lidstone(np.array([0.0, 1.0]), np.array([2.0, 2.0]), 0.0, 2, epsilon=0.01)).round(12).tolist()
    [0.01, 0.5]

    >>> np.exp(lidstone(np.array([0.0, 3.0]), np.array([4.0, 4.0]), 1.0, 3)).round(12).tolist()
    [0.142857142857, 0.571428571429]
    >>> np.exp(lidstone(np.array([0.0, 0.0]), np.array([0.0, 2.0]), 0.0, 4)).tolist()
    [0.25, 0.0]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if alpha > 0:
            total = den + alpha * n_values
            out = np.log(num + alpha) - np.log(total)
        else:
            total = np.broadcast_to(n_values, np.shape(den))
            out = np.where(den > 0, np.log(num) - np.log(den), -np.log(n_values))
    if epsilon > 0:
        out = np.where((num == 0) & (den > 0), math.log(epsilon), out)
    # nothing counted and no value known (an empty vocabulary): no information, log 1
    return np.where(np.asarray(total) > 0, out, 0.0) if np.any(np.asarray(total) == 0) else out


def lidstone_one(num: float, den: float, alpha: float, n_values: float, epsilon: float = 0.0) -> float:
    """:func:`lidstone` of one cell, in plain floats (the scalar path; same arithmetic).

    >>> [round(math.exp(lidstone_one(n, 4.0, 1.0, 3)), 12) for n in (0.0, 3.0)]
    [0.142857142857, 0.571428571429]
    >>> lidstone_one(0.0, 0.0, 0.0, 0), math.exp(lidstone_one(0.0, 0.0, 0.0, 4)), lidstone_one(0.0, 2.0, 0.0, 4)
    (0.0, 0.25, -inf)
    """
    if alpha > 0:
        total = den + alpha * n_values
        if total <= 0:
            return 0.0
        if epsilon > 0 and num == 0 and den > 0:
            return math.log(epsilon)
        return math.log(num + alpha) - math.log(total)
    if den > 0:
        if num == 0:
            return math.log(epsilon) if epsilon > 0 else -math.inf
        return math.log(num) - math.log(den)
    return -math.log(n_values) if n_values > 0 else 0.0
