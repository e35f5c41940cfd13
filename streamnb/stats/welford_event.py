"""One event on the flat cells of a :class:`~streamnb.stats.Welford`: learning it into a class's
cells and into the pooled cells, and its Gaussian log-likelihood per class.

This plain-Python module is also the source of the compiled path: the build compiles it with
Cython (the types are in ``welford_event.pxd`` beside it), and :func:`streamnb.kernels.compiled`
gives the compiled module only if it was built from this very file. Both run the same
floating-point operations in the same order (the build turns fused multiply-add off), so they
give the same bits.

Every method reads the whole event and checks every cell it touches before it changes anything,
and answers None, having changed nothing, for an event the caller must take through its general
path (a value that is not a plain finite number, an unknown or excluded feature, a cell with no
variance estimate, ...).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

__all__ = ["MAX_ABS", "WelfordCells", "number"]

#: The largest magnitude of a plain value (as :data:`streamnb.naive_bayes.checks.MAX_ABS`).
MAX_ABS = 1e100
_LOG_2PI = 1.8378770664093453  # math.log(2 * math.pi)
_NAN = float("nan")


def number(value: object) -> float:
    """``value`` as a float if it is a plain number (a float, or an int) of magnitude at most
    :data:`MAX_ABS`; NaN otherwise.

    >>> number(2), number(0.5), number(True), number(10**400), number(float("inf"))
    (2.0, 0.5, nan, nan, nan)
    """
    if isinstance(value, float):
        x = float(value)
    elif type(value) is int and -MAX_ABS <= value <= MAX_ABS:
        x = float(value)
    else:
        return _NAN
    return x if abs(x) <= MAX_ABS else _NAN


class WelfordCells:
    """The flat views of a Welford statistic and of its pooled row, as
    :meth:`~streamnb.stats.base.Statistic.flat` gives them.

    Cell ``(c, j)`` (class ``c``, feature ``j``) is ``n[c * n0 + j * n1]`` (and the same in
    ``mean`` and ``m2``); feature ``j``'s pooled cell is ``pn[j * p1]``. The views are valid
    while the statistics keep their generation; the owner makes a new object after that.
    """

    def __init__(self, n: Any, mean: Any, m2: Any, n0: int, n1: int, pn: Any, pmean: Any, pm2: Any, p1: int) -> None:
        self.n, self.mean, self.m2, self.n0, self.n1 = n, mean, m2, n0, n1
        self.pn, self.pmean, self.pm2, self.p1 = pn, pmean, pm2, p1
        self.ids = array("q")  # the event read: feature ids and values
        self.xs = array("d")
        self.size = 0

    def read(self, x: dict, ids: dict, exclude: dict | None, raw: bool, all_known: bool) -> bool:
        """Read the event ``x`` (feature: value) into :attr:`ids`, :attr:`xs` and :attr:`size`;
        whether it is plain. ``ids``: the feature ids; a feature in ``exclude`` (another part's)
        makes the event not plain, so does an unknown feature with ``all_known`` (without, it
        is left out). ``raw``: the keys were not checked (they must be ``str``)."""
        if len(x) > len(self.xs):
            self.ids = array("q", bytes(8 * len(x)))
            self.xs = array("d", bytes(8 * len(x)))
        out_ids, out_xs = self.ids, self.xs
        size = 0
        for key, value in x.items():
            v = number(value)
            if v != v or (raw and type(key) is not str):
                return False
            if exclude is not None and key in exclude:
                return False
            got = ids.get(key)
            if got is None:
                if all_known:
                    return False
                continue
            out_ids[size] = got
            out_xs[size] = v
            size += 1
        self.size = size
        return True

    def learn(self, x: dict, ids: dict, k: int, w: float, spread: list, top: float | None, top_id: int,
              exclude: dict | None, raw: bool, tracked: int) -> tuple[float | None, int] | None:
        """Learn the event ``x`` of class ``k`` with weight ``w`` (Chan's formula for one event,
        into the class's cells and the pooled ones); None if it is not plain.

        For the first ``tracked`` features of the event (-1: all), ``spread[j]`` becomes the
        pooled ``M2 / n`` of feature ``j``, and ``(top, top_id)``, the running maximum of
        ``spread`` and where it is (``top`` None: unknown), is kept current and returned: None
        when the feature holding it shrank and it must be counted again.
        """
        if not (w > 0.0 and w <= 1.7976931348623157e308) or not x:
            return None
        if not self.read(x, ids, exclude, raw, True):
            return None
        size, base, n1, p1 = self.size, k * self.n0, self.n1, self.p1
        n_cells, n_pooled, n_spread = len(self.n), len(self.pn), len(spread)
        ev_ids, ev_xs = self.ids, self.xs
        N, M, S, PN, PM, PS = self.n, self.mean, self.m2, self.pn, self.pmean, self.pm2
        if tracked < 0 or tracked > size:
            tracked = size
        # 1: every cell checked, the new spread values and the answer made (all the allocations)
        has_top = top is not None
        t = top if top is not None else 0.0
        fresh = []
        for f in range(size):
            j = ev_ids[f]
            if j < 0 or j >= n_spread or base < 0 or base + j * n1 >= n_cells or j * p1 >= n_pooled:
                raise IndexError("streamnb: a feature outside its cells")
            if f < tracked:
                i = j * p1
                n_a = PN[i]
                n = n_a + w
                frac = w / n
                delta = ev_xs[f] - PM[i]
                s = (PS[i] + delta * delta * n_a * frac) / n
                fresh.append(s)
                if has_top:
                    if s >= t:
                        t, top_id = s, j
                    elif j == top_id:
                        has_top = False
        answer = (t if has_top else None), top_id
        # 2: the cells (Chan's formula for one event) and the spread; nothing can fail
        for f in range(size):
            j = ev_ids[f]
            xv = ev_xs[f]
            i = base + j * n1
            n_a = N[i]
            n = n_a + w
            frac = w / n
            delta = xv - M[i]
            M[i] += delta * frac
            S[i] += delta * delta * n_a * frac
            N[i] = n
            i = j * p1
            n_a = PN[i]
            n = n_a + w
            frac = w / n
            delta = xv - PM[i]
            PM[i] += delta * frac
            PS[i] += delta * delta * n_a * frac
            PN[i] = n
        for f in range(tracked):
            spread[ev_ids[f]] = fresh[f]
        return answer

    def joint(self, x: dict, ids: dict, n_classes: int, ddof: float, eps: float, exclude: dict | None,
              raw: bool) -> list | None:
        """The Gaussian log-likelihood of the event ``x`` per class (its known features; the
        variance ``M2 / (n - ddof) + eps``); None if it is not plain, is empty, or a cell has
        no variance estimate or a variance below 1e-300 (the caller's careful path)."""
        if not x or n_classes < 1 or not self.read(x, ids, exclude, raw, False):
            return None
        size, n1 = self.size, self.n1
        n_cells = len(self.n)
        ev_ids, ev_xs = self.ids, self.xs
        for f in range(size):
            j = ev_ids[f]
            if j < 0 or (n_classes - 1) * self.n0 + j * n1 >= n_cells:
                raise IndexError("streamnb: a feature outside its cells")
        N, M, S = self.n, self.mean, self.m2
        out = [0.0] * n_classes
        for c in range(n_classes):
            r = c * self.n0
            log_var = 0.0
            quad = 0.0
            for f in range(size):
                i = r + ev_ids[f] * n1
                n = N[i]
                if n <= ddof:
                    return None
                var = S[i] / (n - ddof) + eps
                if not var >= 1e-300:
                    return None
                d = ev_xs[f] - M[i]
                log_var += math.log(var)
                quad += d * d / var
            out[c] = -0.5 * (size * _LOG_2PI + log_var + quad)
        return out
