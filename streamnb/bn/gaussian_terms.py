"""The terms of one event in a forest of conditional linear Gaussians, as plain functions.

**Conditional probabilities**: a numeric feature ``j`` whose parent is the numeric ``p`` is
``N(a_y + b_y x_p, s_y**2 + eps)`` in class ``y``, the least-squares line of ``x_j`` on ``x_p``
over the events of class ``y`` where both were observed (``b = c / m2_p``, ``a = mean_j - b
mean_p``), with residual variance ``s**2 = (RSS + PRIOR v_j) / (n + PRIOR)``: the residual sum
of squares shrunk toward ``v_j``, the variance of ``x_j`` in class ``y`` (one pseudo-event,
:data:`PRIOR`), so two events on a line do not make a point mass. ``eps`` is the Gaussian
part's variance smoothing. A pair with no co-observed event of the class has ``b = 0``. A
feature without a parent is the Gaussian of :class:`~streamnb.GaussianNB` (same numbers). A
numeric feature with a categorical parent is scored by the learner's numeric children
(:mod:`streamnb.bn.numeric_children`), which see the parent.

**Missing values** are summed out exactly: an observed feature whose parent is missing is
evidence of the missing cluster above it, and the likelihood of that evidence is the Gaussian
integral over the cluster, computed by one upward pass of canonical forms
``exp(-K x**2 / 2 + h x + g)`` (a linear Gaussian child of a Gaussian is Gaussian: closed form,
no sampling, no grid). :meth:`~streamnb.bn.linear_gaussian.LinearGaussianPart.evidence` hands that form to the categorical
part when the cluster hangs from a categorical feature.

The functions read the statistics through flat views: ``wf``, the Gaussian part's Welford and
pooled views ``(N, M, S, (n0, n1), PN, PM, PS, (p0, p1))``, and ``co``, the co-moment views
``(N, M, S, C, (s0, s1, s2))``; feature ``j`` of class ``k`` is cell ``k * n0 + j * n1``.
"""

from __future__ import annotations

import math

import numpy as np

from streamnb.bn.gaussian_pairs import PRIOR
from streamnb.naive_bayes.gaussian import log_density, log_density_sum

__all__ = ["TINY", "root_gaussian", "regression_line", "evidence_below", "tree_terms", "dense_joint"]

_log = math.log

#: Smallest variance used by the tree terms (a point mass is out of a Gaussian tree's reach).
TINY = 1e-300


def root_gaussian(k: int, j: int, eps: float, wf: tuple) -> tuple[float, float] | None:
    """Mean and variance of feature ``j`` in class ``k`` (GaussianNB's), None: no estimate."""
    N, M, S, (n0, n1), PN, PM, PS, (_, p1) = wf
    i = k * n0 + j * n1
    n = N[i]
    if n > 0:
        return M[i], max(S[i] / n + eps, TINY)
    i = j * p1
    if PN[i] > 0:
        return PM[i], max(PS[i] / PN[i] + eps, TINY)
    return None


def regression_line(k: int, j: int, p: int, eps: float, wf: tuple, co: tuple) -> tuple[float, float, float]:
    """``(a, b, s2)``: ``x_j ~ N(a + b x_p, s2)`` in class ``k``."""
    N, M, S, C, (s0, s1, s2) = co
    jp, pj = k * s0 + j * s1 + p * s2, k * s0 + p * s1 + j * s2
    n = N[jp]
    WN, WM, WS, (n0, n1) = wf[:4]
    wi = k * n0 + j * n1
    v_j = WS[wi] / WN[wi] if WN[wi] > 0 else 0.0
    if n <= 0:
        root = root_gaussian(k, j, eps, wf)
        return (root[0], 0.0, root[1]) if root is not None else (0.0, 0.0, 1.0)
    spp = S[pj]
    b = C[jp] / spp if spp > 0 else 0.0
    a = M[jp] - b * M[pj]
    rss = max(S[jp] - b * C[jp], 0.0)
    return a, b, max((rss + PRIOR * v_j) / (n + PRIOR) + eps, TINY)


def evidence_below(k: int, t: int, obs: dict, children: list, eps: float, wf: tuple, co: tuple,
                   logs: frozenset) -> tuple[float, float, float] | None:
    """The evidence below the missing ``t`` as ``exp(-K x**2 / 2 + h x + g)`` of ``x_t``."""
    K = h = g = 0.0
    found = False
    for c in children[t]:
        a, b, r = regression_line(k, c, t, eps, wf, co)
        if c in obs:
            d = obs[c] - a
            K += b * b / r
            h += b * d / r
            g += log_density(d, r) - (obs[c] if c in logs else 0.0)
            found = True
            continue
        sub = evidence_below(k, c, obs, children, eps, wf, co, logs)
        if sub is None:
            continue
        Kc, hc, gc = sub
        q = 1.0 + r * Kc
        K += Kc * b * b / q
        h += b * (hc - Kc * a) / q
        g += gc - 0.5 * _log(q) + (hc * a + 0.5 * r * hc * hc - 0.5 * Kc * a * a) / q
        found = True
    return (K, h, g) if found else None


def tree_terms(obs: dict, parents: list, children: list, eps: float, wf: tuple, co: tuple, logs: frozenset,
               n_c: int) -> dict:
    """``{feature id: [term per class]}`` for the observed ``{feature id: value}``, given the
    tree (``parents``, ``children`` by id: -1 the class only, -2 a categorical parent, whose
    part has that term), the variance smoothing ``eps``, the Welford views ``wf``, the
    co-moment views ``co``, the ids of the log slots in use ``logs`` and the number of classes."""
    out: dict = {}
    tops: list[int] = []
    for j, x in obs.items():
        p = parents[j]
        if p == -2:  # a categorical parent: the numeric children have this term
            continue
        if p >= 0 and p not in obs:
            t = p
            while parents[t] >= 0 and parents[t] not in obs:
                t = parents[t]
            if parents[t] != -2 and t not in tops:  # else the numeric children sum it out
                tops.append(t)
            continue
        row = []
        for k in range(n_c):
            if p < 0:
                root = root_gaussian(k, j, eps, wf)
                if root is None:
                    row.append(0.0)
                    continue
                mean, var = root
            else:
                a, b, var = regression_line(k, j, p, eps, wf, co)
                mean = a + b * obs[p]
            d = x - mean
            row.append(log_density(d, var) - (x if j in logs else 0.0))
        out[j] = row
    for t in tops:
        row = []
        for k in range(n_c):
            lam = evidence_below(k, t, obs, children, eps, wf, co, logs)
            p = parents[t]
            if p < 0:
                root = root_gaussian(k, t, eps, wf)
                m, v = root if root is not None else (0.0, 1.0)
            else:
                a, b, v = regression_line(k, t, p, eps, wf, co)
                m = a + b * obs[p]
            K, h, g = lam if lam is not None else (0.0, 0.0, 0.0)
            q = 1.0 + v * K
            row.append(g - 0.5 * _log(q) + (h * m + 0.5 * v * h * h - 0.5 * K * m * m) / q)
        out[t] = row
    return out


def dense_joint(values: list, index: tuple, eps: float) -> list | None:
    """The summed terms per class of an event with every feature, in id order, as arrays, from
    its cells ``index`` (see :meth:`LinearGaussianPart._dense_index
    <streamnb.bn.linear_gaussian.LinearGaussianPart._dense_index>`); None if a cell has no
    estimate yet (then the scalar path decides)."""
    J, P, R, jp, pj, wj, wr, (N, M, S, C, WN, WM, WS) = index
    n, nj, nr = N[jp], WN[wj], WN[wr]
    if not (n.size == 0 or n.min() > 0) or not (nr.size == 0 or nr.min() > 0):
        return None
    x = np.array(values)
    spp, cjp = S[pj], C[jp]
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(spp > 0, cjp / spp, 0.0)
    a = M[jp] - b * M[pj]
    rss = np.maximum(S[jp] - b * cjp, 0.0)
    s2 = np.maximum((rss + PRIOR * WS[wj] / nj) / (n + PRIOR) + eps, TINY)
    d = x[J] - (a + b * x[P])
    var = np.maximum(WS[wr] / nr + eps, TINY)
    e = x[R] - WM[wr]
    log_var = (np.log(s2).sum(axis=1) + np.log(var).sum(axis=1)).tolist()
    quad = ((d * d / s2).sum(axis=1) + (e * e / var).sum(axis=1)).tolist()
    return [log_density_sum(len(values), a, q) for a, q in zip(log_var, quad)]

