"""The normal log-density, written once: :func:`log_density` of one term (plain floats, the
per-event path), :func:`log_density_sum` of a sum of terms over an event, and
:func:`log_densities` over arrays (batches), side by side, with the constant :data:`LOG_2PI`::

    log N(x | mean, var) = -0.5 (log 2 pi + log var + d^2 / var),   d = x - mean

and :func:`log_density_factors`, the same density as ``log_norm + coef d^2`` per variance, for
the sums over a frame's values taken as matrix products (other operations: other last bits).

Like :mod:`streamnb.stats.lidstone`, this plain-Python module is also the source of the
compiled path: the build compiles it with Cython (``gaussian_density.pxd``), the compiled cells
take :func:`log_density` and :func:`log_density_sum` from that build (C calls), and
:func:`streamnb.kernels.compiled` gives the compiled module to Python callers only if it was
built from this very file. Both run the same floating-point operations in the same order: the
same bits. The three forms are the same operations too: ``log_density_sum(1, log(var), d * d /
var)`` and ``log_densities(d, var, log(var))`` are ``log_density(d, var)``, bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["LOG_2PI", "log_densities", "log_density", "log_density_factors", "log_density_sum"]

#: ``log(2 pi)``: ``math.log(2 * math.pi)``, written out so the compiled build holds it as a C double.
LOG_2PI = 1.8378770664093453


def log_density(d: float, var: float) -> float:
    """``log N(x | mean, var)`` of one value, from its deviation ``d = x - mean`` and the
    variance ``var > 0``.

    >>> log_density(0.0, 1.0) == -0.5 * math.log(2 * math.pi)
    True
    >>> round(log_density(2.0, 4.0), 12) == round(-0.5 * math.log(2 * math.pi * 4.0) - 0.5, 12)
    True
    """
    return -0.5 * (LOG_2PI + math.log(var) + d * d / var)


def log_density_sum(n: float, log_var: float, quad: float) -> float:
    """The sum of ``n`` terms :func:`log_density` (an event's features in one class), from the
    sum of their ``log var`` and of their ``d^2 / var``.

    >>> log_density_sum(1.0, math.log(4.0), 2.0 * 2.0 / 4.0) == log_density(2.0, 4.0)
    True
    >>> round(log_density_sum(2.0, 0.0, 1.0), 12) == round(2 * log_density(0.0, 1.0) - 0.5, 12)
    True
    """
    return -0.5 * (n * LOG_2PI + log_var + quad)


def log_densities(d: Any, var: Any, log_var: Any = None) -> np.ndarray:
    """:func:`log_density` over arrays (broadcast): ``log_var`` is ``log(var)`` where the caller
    holds it already (``math.log`` of a scalar variance keeps :func:`log_density`'s bits),
    computed otherwise.

    >>> log_densities(np.array([0.0, 2.0]), np.array([1.0, 4.0])).tolist() == [log_density(0.0, 1.0),
    ...                                                                      log_density(2.0, 4.0)]
    True
    """
    if log_var is None:
        log_var = np.log(var)
    return -0.5 * (LOG_2PI + log_var + d * d / var)


def log_density_factors(var: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(log_norm, coef)`` of variances ``var`` (arrays): ``log N(x | mean, var) = log_norm +
    coef d^2`` with ``log_norm = -0.5 (log 2 pi + log var)`` and ``coef = -0.5 / var``, so a sum
    over many values is a matrix product (:meth:`GaussianNB.predict_proba_many
    <streamnb.naive_bayes.base.BaseNB.predict_proba_many>` on a frame). Not the operations of
    :func:`log_density`: the last bits may differ.

    >>> log_norm, coef = log_density_factors(np.array([4.0]))
    >>> abs(float(log_norm[0] + coef[0] * 2.0 * 2.0) - log_density(2.0, 4.0)) < 1e-15
    True
    """
    return -0.5 * (LOG_2PI + np.log(var)), -0.5 / var
