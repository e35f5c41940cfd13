"""Lidstone smoothing of counted probabilities, written once: :func:`lidstone_one` for one cell
(plain floats, the per-event path) and :func:`lidstone` for arrays (batches), side by side; its
parts for ``alpha > 0`` where a caller takes them apart (:func:`lidstone_log_count`,
:func:`lidstone_log_total`: the multinomial event's factored sum; :func:`lidstone_log_odds`: a
binary feature's present against absent; :func:`lidstone_positive`: :func:`lidstone` without
its checks); and the trees' smoothing toward the marginal built on it, :func:`smoothed` and
:func:`smoothed_rows`.

``log((n + alpha) / (N + alpha V))``, ``alpha = 1`` being Laplace, with its limit for
``alpha -> 0+``; optional epsilon smoothing of a probability that would be 0. The trees smooth a
feature given its parent's value toward its Lidstone-smoothed marginal given the class with
strength ``s`` (Friedman, Geiger & Goldszmidt 1997, section 3.3)::

    P(x | u, y) = (n(x, u, y) + s P(x | y)) / (n(u, y) + s),   P(x | y) = (n(x, y) + alpha) / (n(y) + alpha |X|)

Like :mod:`streamnb.stats.cells`, this plain-Python module is also the source of the compiled
path: the build compiles it with Cython (``lidstone.pxd``), the compiled cells take
:func:`lidstone_one` and :func:`smoothed` from that build (C calls), and
:func:`streamnb.kernels.compiled` gives the compiled module to Python callers only if it was
built from this very file. Both run the same floating-point operations in the same order: the
same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["lidstone", "lidstone_log_count", "lidstone_log_odds", "lidstone_log_total", "lidstone_one",
           "lidstone_positive", "smoothed", "smoothed_rows"]


def lidstone_one(num: float, den: float, alpha: float, n_values: float, epsilon: float = 0.0) -> float:
    """``log((num + alpha) / (den + alpha * n_values))`` of one cell (:func:`lidstone`'s
    arithmetic, in plain floats).

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


def lidstone(num: Any, den: Any, alpha: float, n_values: Any, epsilon: float = 0.0) -> np.ndarray:
    """``log((num + alpha) / (den + alpha * n_values))`` over arrays (broadcast); for ``alpha =
    0`` the limit alpha -> 0+.

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


def lidstone_log_count(num: float, alpha: float) -> float:
    """``log(num + alpha)``, the log of one smoothed count (``alpha > 0``); less
    :func:`lidstone_log_total`, :func:`lidstone_one`'s two logs. A multinomial event sums ``x_t
    lidstone_log_count(n_t)`` over its tokens and takes the total's log once per class, ``(sum_t
    x_t) lidstone_log_total(N)``: other bits than a sum of :func:`lidstone_one`.

    >>> round(math.exp(lidstone_log_count(3.0, 1.0) - lidstone_log_total(4.0, 1.0, 3)), 12)
    0.571428571429
    """
    return math.log(num + alpha)


def lidstone_log_total(den: float, alpha: float, n_values: float) -> float:
    """``log(den + alpha * n_values)``, the log of the smoothed total (``alpha > 0``): see
    :func:`lidstone_log_count`."""
    return math.log(den + alpha * n_values)


def lidstone_log_odds(num: float, den: float, alpha: float) -> float:
    """``log((num + alpha) / (den - num + alpha))`` (``alpha > 0``): a binary feature's
    :func:`lidstone_one` of present (``num`` of ``den``) less that of absent (``den - num``),
    their common total cancelled (so not the bits of that difference).

    >>> round(math.exp(lidstone_log_odds(3.0, 4.0, 1.0)), 12)   # (3 + 1) / (1 + 1)
    2.0
    """
    return lidstone_log_count(num, alpha) - lidstone_log_count(den - num, alpha)


def lidstone_positive(num: Any, den: Any, alpha: float, n_values: Any) -> np.ndarray:
    """:func:`lidstone` for ``alpha > 0`` where every total ``den + alpha * n_values`` is
    positive, without its checks (no ``errstate``, no zero total to look for): the same
    arithmetic, the same bits, for a caller that knows both (one event in numpy).

    >>> np.exp(lidstone_positive(np.array([0.0, 3.0]), np.array([4.0, 4.0]), 1.0, 3)).round(12).tolist()
    [0.142857142857, 0.571428571429]
    """
    return np.log(num + alpha) - np.log(den + alpha * n_values)


def smoothed(num: float, den: float, nx: float, t: float, alpha: float, nv: float, prior: float) -> float:
    """``log P(x | u, y)`` of a feature given its parent's value: ``num = n(x, u, y)``, ``den =
    n(u, y)`` (with the feature observed), ``nx = n(x, y)``, ``t = n(y)``; ``prior`` 0:
    :func:`lidstone_one`, else smoothed toward ``P(x | y)`` with that strength (the module
    text).

    >>> round(math.exp(smoothed(0.0, 0.0, 3.0, 4.0, 1.0, 3.0, 5.0)), 12)   # no event: P(x | y)
    0.571428571429
    >>> round(math.exp(smoothed(2.0, 2.0, 3.0, 4.0, 1.0, 3.0, 5.0)), 12)   # (2 + 5 * 4/7) / (2 + 5)
    0.69387755102
    """
    if prior <= 0:
        return lidstone_one(num, den, alpha, nv, 0.0)
    if alpha > 0:
        th = (nx + alpha) / (t + alpha * nv)
    else:
        th = nx / t if t > 0 else (1.0 / nv if nv > 0 else 1.0)
    p = num + prior * th
    return math.log(p) - math.log(den + prior) if p > 0 else -math.inf


def smoothed_rows(num: np.ndarray, den: np.ndarray, nx: np.ndarray, t: np.ndarray, alpha: float, nv: Any,
                  prior: float) -> np.ndarray:
    """:func:`smoothed` over arrays (broadcast)."""
    if prior <= 0:
        return lidstone(num, den, alpha, nv)
    with np.errstate(divide="ignore", invalid="ignore"):
        if alpha > 0:
            th = (nx + alpha) / (t + alpha * np.asarray(nv, dtype=float))
        else:
            nv = np.asarray(nv, dtype=float)
            th = np.where(t > 0, nx / np.where(t > 0, t, 1.0), np.where(nv > 0, 1.0 / np.where(nv > 0, nv, 1.0), 1.0))
        return np.log(num + prior * th) - np.log(den + prior)
