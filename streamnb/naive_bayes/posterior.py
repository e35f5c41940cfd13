"""The posterior maths of one event and of a batch: log-likelihoods per class to probabilities.

The posterior is computed with a max-shifted log-sum-exp (:mod:`streamnb.stats.normalize`, where
it is written once); non-finite log-likelihoods (point masses, impossible classes) follow limits,
never floors.
"""

from __future__ import annotations

import math

import numpy as np

from streamnb.stats.normalize import exp_normalized, last_axis, posterior

__all__ = ["posterior", "posterior_one", "last_axis", "shifted_evidence", "sum_features", "add_feature"]


def _normalize(jll: list, log_prior: list) -> list:
    """Probabilities from one event's joint log-likelihoods (max-shifted); if every class is
    ruled out, the prior."""
    top = max(jll)
    if top == -math.inf or top != top:
        if top == top:  # every class impossible: fall back on the prior
            return _normalize(log_prior, log_prior)
        return posterior(np.array(jll)).tolist()
    if top == math.inf:
        return posterior(np.array(jll)).tolist()
    return exp_normalized(jll, top)


def posterior_one(jll: list, log_prior: list) -> list:
    """The posterior of one event from its log-likelihoods ``jll`` and ``log P(y)`` (lists per
    class): the evidence is shifted by its maximum before the prior is added; if every class
    is ruled out, the prior.

    >>> [round(p, 6) for p in posterior_one([-1e9, -1e9 - math.log(2)], [math.log(0.5)] * 2)]
    [0.666667, 0.333333]
    """
    top = max(jll)
    if math.isfinite(top):
        jll = [v - top for v in jll]
    return _normalize([a + b for a, b in zip(log_prior, jll)], log_prior)


def shifted_evidence(ll: np.ndarray) -> np.ndarray:
    """Each row of log-likelihoods ``[rows, classes]`` less its maximum, where that is finite.

    The evidence is shifted before the log prior is added: a large log-likelihood shared by
    every class (a feature far out in every class) would otherwise absorb the prior's digits
    (``-1e10 + log(2/3)`` keeps 6 of them), where the posterior does not depend on it at all.
    """
    top = last_axis(np.maximum, ll) if ll.shape[1] else np.zeros((len(ll), 1))
    return np.where(np.isfinite(top), ll - np.where(np.isfinite(top), top, 0.0), ll)


def sum_features(jll_parts: np.ndarray) -> np.ndarray:
    """Sum per-feature log-likelihoods ``[..., features, classes]`` when some are not finite.

    Per feature: if some class has ``+inf`` (a zero-variance Gaussian hit exactly) those classes
    get 0 and the others ``-inf``; a feature for which every class is ``-inf`` tells nothing
    apart and is dropped. Finite features are shifted by their maximum (which leaves the
    posterior unchanged).
    """
    top = jll_parts.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        out = np.where(
            np.isposinf(top),
            np.where(np.isposinf(jll_parts), 0.0, -np.inf),
            np.where(np.isneginf(top), 0.0, jll_parts - top),
        )
    return out.sum(axis=-2)


def add_feature(total: list, ll: list) -> None:
    """Add one feature's log-likelihoods ``ll`` (per class) to ``total``, in place, with the
    rules of :func:`sum_features`: a feature for which every class is ``-inf`` is dropped;
    one where some class is ``+inf`` (a point mass hit) leaves only those classes possible."""
    top = max(ll)
    if top == math.inf:
        for c, v in enumerate(ll):
            if v != math.inf:
                total[c] = -math.inf
    elif top != -math.inf:
        for c, v in enumerate(ll):
            total[c] += v
