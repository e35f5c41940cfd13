"""Smoothing of counted probabilities, shared by every counting part (categorical, multinomial,
Bernoulli, the tree CPTs): Lidstone/Laplace with its alpha -> 0 limit and epsilon smoothing
(:func:`lidstone_one` for one cell, :func:`lidstone` for arrays), the trees' smoothing toward
the marginal (:func:`smoothed`, :func:`smoothed_rows`), and what a value never seen does at
prediction time.

The formulas are defined once, in :mod:`streamnb.stats.lidstone`; this module gives its compiled
build where there is one (:func:`streamnb.kernels.compiled`).
"""

from __future__ import annotations

from streamnb import kernels
from streamnb.naive_bayes.part import Part
from streamnb.stats import Counts, Index
from streamnb.stats import lidstone as source

__all__ = ["UNSEEN_POLICIES", "SmoothedPart", "check_unseen", "lidstone", "lidstone_log_count",
           "lidstone_log_odds", "lidstone_log_total", "lidstone_one", "lidstone_positive", "smoothed",
           "smoothed_rows"]

_ops = kernels.compiled(source)
lidstone, lidstone_one, smoothed, smoothed_rows = _ops.lidstone, _ops.lidstone_one, _ops.smoothed, _ops.smoothed_rows
lidstone_log_count, lidstone_log_total, lidstone_log_odds = (_ops.lidstone_log_count, _ops.lidstone_log_total,
                                                             _ops.lidstone_log_odds)
lidstone_positive = _ops.lidstone_positive

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
