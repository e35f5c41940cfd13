"""One event on a statistic's flat cells, the per-event path of the naive Bayes parts:
:class:`WelfordCells` (GaussianNB) and :class:`CountCells` (MultinomialNB), over the event read
once by :class:`Event` (the categorical ones are in :mod:`streamnb.stats.category_cells`); the
event's :func:`posterior` from the class counts; :func:`split_strings` of a mixed event.

This plain-Python module is also the source of the compiled path: the build compiles it with
Cython (the C types are in ``cells.pxd`` beside it), and :func:`streamnb.kernels.compiled` gives
the compiled module only if it was built from this very file. Both run the same floating-point
operations in the same order (the build turns fused multiply-add off), so they give the same
bits.

Every method reads the whole event and checks every cell it touches before it changes anything,
and answers None (or False), having changed nothing, for an event the caller must take through
its general path (a value that is not a plain finite number, an unknown or excluded feature, a
cell with no variance estimate, ...). The views come from
:meth:`~streamnb.stats.base.Statistic.flat` and are valid while the statistics keep their
generation: the owner makes a new object after that.
"""

from __future__ import annotations

import math
from array import array
from math import fsum
from typing import Any

from streamnb.stats.gaussian_density import log_density_sum
from streamnb.stats.normalize import exp_normalized
from streamnb.stats.lidstone import lidstone_log_count, lidstone_log_total
from streamnb.stats.welford import welford_one

__all__ = ["MAX_ABS", "ClassWeights", "CountCells", "Event", "WelfordCells", "number", "posterior",
           "split_strings"]

#: The largest magnitude of a plain value (as :data:`streamnb.naive_bayes.checks.MAX_ABS`).
MAX_ABS = 1e100
_NAN = float("nan")
_INF = math.inf


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


def split_strings(x: dict, kinds: dict | None = None) -> tuple | None:
    """``x`` as two events, in its order: its categories and the others. A category is a
    ``str`` value or, with ``kinds`` (feature: ``"categorical"`` or ``"gaussian"``), a value of
    a feature declared categorical; None if that value is not a ``str`` or an ``int``, or a
    ``str`` is of a feature declared gaussian (events for the caller's general path).

    >>> split_strings({"temp": 21.5, "sky": "sunny", "n": 3})
    ({'sky': 'sunny'}, {'temp': 21.5, 'n': 3})
    >>> split_strings({"temp": 21.5, "zip": 75001}, {"zip": "categorical"})
    ({'zip': 75001}, {'temp': 21.5})
    """
    strings: dict = {}
    others: dict = {}
    for key, value in x.items():
        t = type(value)
        kind = kinds.get(key) if kinds is not None else None
        if kind is None:  # not declared: a str is a category
            if t is str:
                strings[key] = value
            else:
                others[key] = value
        elif kind == "categorical":
            if t is not str and t is not int:
                return None
            strings[key] = value
        elif t is str:
            return None
        else:
            others[key] = value
    return strings, others


def posterior(jll: list, counts: Any, step: int) -> list | None:
    """The posterior of one event from its log-likelihoods ``jll`` (per class, without the
    prior) and the class counts (class ``c`` has weight ``counts[c * step]``): ``log P(y)`` plus
    the evidence less its maximum, normalized with one max-shifted exp and an exact sum, the
    same bits as :func:`~streamnb.naive_bayes.posterior.posterior_one`. None where that needs
    its general path: a value that is not finite (ruled-out classes, point masses), no class
    weight at all.

    >>> [round(p, 6) for p in posterior([-1e9, -1e9 - math.log(2)], memoryview(array("d", [1.0, 1.0])), 1)]
    [0.666667, 0.333333]
    """
    n_classes = len(jll)
    if n_classes < 1:
        return None
    if step < 0 or (n_classes - 1) * step >= len(counts):
        raise IndexError("streamnb: a class outside its counts")
    if n_classes == 2:  # one rounding: what fsum gives
        total = counts[0] + counts[step]
    else:
        total = fsum([counts[c * step] for c in range(n_classes)])
    if not (total > 0.0 and math.isfinite(total)):
        return None
    log_total = math.log(total)
    shift = -_INF
    for c in range(n_classes):
        v = jll[c]
        if not math.isfinite(v):
            return None
        if v > shift:
            shift = v
    u = [0.0] * n_classes
    top = -_INF
    for c in range(n_classes):
        m = counts[c * step]
        v = (math.log(m) - log_total if m > 0.0 else -_INF) + (jll[c] - shift)
        if not math.isfinite(v):
            return None
        u[c] = v
        if v > top:
            top = v
    return exp_normalized(u, top)


class ClassWeights:
    """The class counts' flat view (class ``c`` has weight ``counts[c * step]``), taken once and
    held while it is valid, for the :func:`posterior` of each event: compiled, the view is not
    acquired again per event.

    >>> ClassWeights(memoryview(array("d", [3.0, 1.0])), 1).posterior([0.0, 0.0])
    [0.75, 0.25]
    """

    def __init__(self, counts: Any, step: int) -> None:
        self.counts, self.step = counts, step

    def posterior(self, jll: list) -> list | None:
        """:func:`posterior` of ``jll`` with these class counts."""
        return posterior(jll, self.counts, self.step)


class Event:
    """One event read: the ids of its known features (:attr:`ids`) and their values
    (:attr:`xs`), the first :attr:`size` entries of each, in the event's order."""

    def __init__(self) -> None:
        self.ids = array("q")
        self.xs = array("d")
        self.size = self.unknown = 0  # entries read, and features left out as unknown
        self.acc = array("d")  # sums per class (zeroed)

    def zeroed(self, n_classes: int) -> Any:
        """:attr:`acc` with room for ``n_classes`` sums, the first ``n_classes`` set to 0."""
        if n_classes > len(self.acc):
            self.acc = array("d", bytes(8 * n_classes))
        out = self.acc
        for c in range(n_classes):
            out[c] = 0.0
        return out

    def read(self, x: dict, ids: dict, exclude: dict | None, raw: bool, nonnegative: bool) -> int:
        """Read the event ``x`` (feature: value) with the feature ids ``ids``: how many of its
        features ``ids`` does not know (left out), or -1 if it is not plain: a value that is not
        a plain number (or below 0, with ``nonnegative``), a feature in ``exclude`` (another
        part's), or with ``raw`` (keys not checked by the caller) a key that is not a ``str``."""
        if len(x) > len(self.xs):
            self.ids = array("q", bytes(8 * len(x)))
            self.xs = array("d", bytes(8 * len(x)))
        out_ids, out_xs = self.ids, self.xs
        size = unknown = self.size = 0  # (an event not plain leaves none read)
        for key, value in x.items():
            v = number(value)
            if v != v or (nonnegative and v < 0.0) or (raw and type(key) is not str):
                return -1
            if exclude is not None and key in exclude:
                return -1
            got = ids.get(key)
            if got is None:
                unknown += 1
                continue
            out_ids[size] = got
            out_xs[size] = v
            size += 1
        self.size, self.unknown = size, unknown
        return unknown


class WelfordCells(Event):
    """The flat views of a :class:`~streamnb.stats.Welford` and of its pooled row: cell ``(c, j)``
    (class ``c``, feature ``j``) is ``n[c * n0 + j * n1]`` (and the same in ``mean`` and
    ``m2``); feature ``j``'s pooled cell is ``pn[j * p1]``."""

    def __init__(self, n: Any, mean: Any, m2: Any, n0: int, n1: int, pn: Any, pmean: Any, pm2: Any, p1: int) -> None:
        self.n, self.mean, self.m2, self.n0, self.n1 = n, mean, m2, n0, n1
        self.pn, self.pmean, self.pm2, self.p1 = pn, pmean, pm2, p1
        super().__init__()

    def learn(self, x: dict, ids: dict, k: int, w: float, spread: list, top: float | None, top_id: int,
              exclude: dict | None, raw: bool, tracked: int) -> tuple[float | None, int] | None:
        """Learn the event ``x`` of class ``k`` with weight ``w`` (Chan's formula for one event,
        into the class's cells and the pooled ones); None if it is not plain.

        For the first ``tracked`` features of the event (-1: all), ``spread[j]`` becomes the
        pooled ``M2 / n`` of feature ``j``, and ``(top, top_id)``, the running maximum of
        ``spread`` and where it is (``top`` None: unknown), is kept current and returned: None
        when the feature holding it shrank and it must be counted again.
        """
        if not (w > 0.0 and math.isfinite(w)) or not x or self.read(x, ids, exclude, raw, False) != 0:
            return None
        return self.update(k, w, spread, top, top_id, tracked)

    def update(self, k: int, w: float, spread: list, top: float | None, top_id: int,
               tracked: int) -> tuple[float | None, int]:
        """:meth:`learn` of the event read (``w`` positive and finite): every cell checked (an
        IndexError if one is outside the views, nothing changed), then written."""
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
                n, _, m2 = welford_one(PN[i], PM[i], PS[i], ev_xs[f], w)
                s = m2 / n
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
            N[i], M[i], S[i] = welford_one(N[i], M[i], S[i], xv, w)
            i = j * p1
            PN[i], PM[i], PS[i] = welford_one(PN[i], PM[i], PS[i], xv, w)
        for f in range(tracked):
            spread[ev_ids[f]] = fresh[f]
        return answer

    def joint(self, x: dict, ids: dict, n_classes: int, ddof: float, eps: float, exclude: dict | None,
              raw: bool) -> list | None:
        """The Gaussian log-likelihood of the event ``x`` per class (its known features; the
        variance ``M2 / (n - ddof) + eps``); None if it is not plain, is empty, or a cell has
        no variance estimate or a variance below 1e-300 (the caller's careful path)."""
        if not x or n_classes < 1 or self.read(x, ids, exclude, raw, False) < 0:
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
            out[c] = log_density_sum(size, log_var, quad)
        return out


class CountCells(Event):
    """The flat views of a class-by-token :class:`~streamnb.stats.Counts` (cell ``(c, j)`` at
    ``counts[c * c0 + j * c1]``), of the class totals (class ``c`` at ``totals[c * t0]``) and of
    the tokens' zero weights (token ``j`` at ``zeros[j * z0]``: the weight of the events that
    gave it a count of 0, see :class:`~streamnb.naive_bayes.part.ZeroWeights`)."""

    def __init__(self, counts: Any, c0: int, c1: int, totals: Any, t0: int, zeros: Any, z0: int) -> None:
        self.counts, self.c0, self.c1, self.totals, self.t0 = counts, c0, c1, totals, t0
        self.zeros, self.z0 = zeros, z0
        super().__init__()

    def check(self, n_classes: int) -> None:
        """Every cell of the event read, for classes ``0 .. n_classes - 1``: an IndexError if one
        is outside the views (views that do not match the ids are a bug)."""
        last = (n_classes - 1) * self.c0
        n_cells, n_zeros = len(self.counts), len(self.zeros)
        for f in range(self.size):
            j = self.ids[f]
            if j < 0 or last < 0 or last + j * self.c1 >= n_cells or j * self.z0 >= n_zeros:
                raise IndexError("streamnb: a token outside its cells")
        if n_classes < 1 or (n_classes - 1) * self.t0 >= len(self.totals):
            raise IndexError("streamnb: a class outside its totals")

    def score(self, n_classes: int, alpha: float, n_tokens: int) -> list:
        """The log-likelihood per class of the event read: ``sum_t x_t log(n[c, t] + alpha) -
        (sum_t x_t) log(N[c] + alpha V)`` over its known tokens (``alpha > 0``; the total's log
        once per class: :func:`~streamnb.stats.lidstone.lidstone_log_count`)."""
        cv, tv, c0, c1, t0 = self.counts, self.totals, self.c0, self.c1, self.t0
        ev_ids, ev_xs = self.ids, self.xs
        out = self.zeroed(n_classes)
        mass = 0.0
        for f in range(self.size):
            xv = ev_xs[f]
            if xv == 0.0:
                continue
            mass += xv
            col = ev_ids[f] * c1
            for c in range(n_classes):
                out[c] += xv * lidstone_log_count(cv[c * c0 + col], alpha)
        if mass != 0.0:
            for c in range(n_classes):
                out[c] -= mass * lidstone_log_total(tv[c * t0], alpha, n_tokens)
        return [out[c] for c in range(n_classes)]

    def add(self, k: int, w: float) -> None:
        """Learn the event read (every token known, cells checked) with class ``k``, weight
        ``w``: ``n[k, t] += w x_t``, ``N[k] += w sum_t x_t``, and ``zeros[t] += w`` where
        ``x_t`` is 0."""
        cv, row, c1, zv, z0 = self.counts, k * self.c0, self.c1, self.zeros, self.z0
        ev_ids, ev_xs = self.ids, self.xs
        total = 0.0
        for f in range(self.size):
            xv = ev_xs[f]
            j = ev_ids[f]
            cv[row + j * c1] += w * xv
            if xv == 0.0:
                zv[j * z0] += w
            total += xv
        self.totals[k * self.t0] += w * total

    def learn(self, x: dict | None, ids: dict, k: int, w: float, raw: bool) -> bool:
        """Learn the event ``x`` (None: the event last read, by :meth:`joint`) with class ``k``
        and weight ``w``; False, having changed nothing, if it is not plain, is empty or has a
        token ``ids`` does not know."""
        if not (w > 0.0 and math.isfinite(w)) or (x is not None and self.read(x, ids, None, raw, True) < 0):
            return False
        if self.unknown != 0 or self.size == 0:
            return False
        self.check(k + 1)
        self.add(k, w)
        return True

    def joint(self, x: dict, ids: dict, n_classes: int, alpha: float, n_tokens: int, raw: bool) -> list | None:
        """The log-likelihood per class of ``x`` (unknown tokens left out; ``alpha > 0``), or
        None if ``x`` is not plain (``raw``: its keys were not checked, they must be ``str``)."""
        if n_classes < 1 or not alpha > 0.0 or self.read(x, ids, None, raw, True) < 0:
            return None
        self.check(n_classes)
        return self.score(n_classes, alpha, n_tokens)
