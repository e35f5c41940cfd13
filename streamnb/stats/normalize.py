"""Joint log-likelihoods to probabilities, written once: :func:`exp_normalized` for one event
(plain floats, the per-event path) and :func:`posterior` for arrays (batches), side by side.

Both shift by the maximum before ``exp`` and divide by the sum (an exact sum: ``fsum`` of one
event's values; numpy's left-to-right sum of a row's few classes, which gives the same bits).
Like :mod:`streamnb.stats.lidstone`, this plain-Python module is also the source of the compiled
path: the build compiles it with Cython (``normalize.pxd``) and the compiled cells take
:func:`exp_normalized` from that build (a C call); both run the same operations in the same
order: the same bits.
"""

from __future__ import annotations

import math
from math import fsum

import numpy as np

__all__ = ["exp_normalized", "posterior", "last_axis"]


def exp_normalized(u: list, top: float) -> list:
    """``exp(u - top)`` normalized to sum 1, for finite ``u`` whose maximum is ``top`` (a new
    list). Two classes add with one rounding, which is what ``fsum`` gives them.

    >>> [round(p, 6) for p in exp_normalized([0.0, -math.log(2)], 0.0)]
    [0.666667, 0.333333]
    """
    n = len(u)
    out = [0.0] * n
    total = 0.0
    for c in range(n):
        e = math.exp(u[c] - top)
        out[c] = e
        total += e
    if n > 2:
        total = fsum(out)
    for c in range(n):
        out[c] = out[c] / total
    return out


def posterior(jll: np.ndarray) -> np.ndarray:
    """Normalize joint log-likelihoods (last axis = classes) into probabilities.

    Non-finite values follow limits, never floors: ``+inf`` classes (point masses) share the
    mass, ``-inf`` classes get 0, and a row where every class is ``-inf`` (no class can have
    produced the event) is returned as NaN for the caller to resolve.

    >>> posterior(np.log([[0.25, 0.5]])).round(6).tolist()
    [[0.333333, 0.666667]]
    >>> posterior(np.array([-1e6, -1e6 - math.log(3)])).round(6).tolist()
    [0.75, 0.25]
    """
    jll = np.asarray(jll, dtype=float)
    top = last_axis(np.maximum, jll)
    if np.isfinite(top).all():
        p = np.exp(jll - top)
        p /= last_axis(np.add, p)
        return p
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = np.where(np.isposinf(top), np.where(np.isposinf(jll), 0.0, -np.inf), jll - top)
        p = np.exp(shifted)
        return p / p.sum(axis=-1, keepdims=True)


def last_axis(ufunc: np.ufunc, a: np.ndarray) -> np.ndarray:
    """``ufunc.reduce(a, axis=-1, keepdims=True)`` for ``np.maximum`` or ``np.add``.

    A row of a few classes is a short reduction, which numpy runs row by row (slow: see
    docs/benchmarks.md); below 8 classes the columns are combined instead, left to right: the
    same result, bit for bit (numpy's sum of fewer than 8 values adds them in order too).
    """
    n = a.shape[-1] if a.ndim else 0
    if a.ndim != 2 or not 1 < n < 8:
        return ufunc.reduce(a, axis=-1, keepdims=True)
    out = ufunc(a[:, 0], a[:, 1])
    for c in range(2, n):
        ufunc(out, a[:, c], out=out)
    return out[:, None]
