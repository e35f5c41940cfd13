"""Exact inference in a tree-augmented model: one event in plain Python, many events in numpy.

Both paths compute, per class ``y``, the log-likelihood of the observed features under a
forest (each feature has the class and at most one feature as parents), every missing
feature summed out exactly:

- an observed feature whose parent is observed (or who has none) contributes
  ``log P(x_j | x_parent, y)`` (its *direct* term);
- a missing feature ``t`` whose parent is observed (or who has none) and whose subtree holds
  evidence contributes ``log sum_v P(t = v | x_parent, y) lambda_t(v, y)``, where
  ``lambda_t(v, y)`` is the probability of the evidence below ``t`` given ``t = v``
  (one upward pass over the cluster of missing features under ``t``).

Probabilities are smoothed ratios of pair counts over the normalizers kept by
:class:`~streamnb.bn.margins.Margins`: a feature without a feature parent Lidstone-smoothed
(``alpha``), a feature given its parent either Lidstone-smoothed too (``prior`` 0) or, with
``prior = s > 0``, smoothed toward its own Lidstone-smoothed marginal given the class (Friedman,
Geiger & Goldszmidt 1997, section 3.3; :func:`~streamnb.naive_bayes.smoothing.smoothed`)::

    P(x | u, y) = (n(x, u, y) + s P(x | y)) / (n(u, y) + s),   P(x | y) = (n(x, y) + alpha) / (n(y) + alpha |X|)

``n(x, y)`` is the diagonal of the pair counts and ``n(y)`` the normalizer ``T``, both kept:
a direct term costs a few lookups per class and the
scalar path costs ``O(d C)`` for ``d`` observed features and ``C`` classes, plus
``O(C sum V_parent V_child)`` over the edges of the missing clusters (the values summed out),
whatever the number of cells of the table. The array path computes the same terms vectorized
over rows (rows with missing clusters are grouped by their pattern of observed features).
The two agree to rounding (tested to 1e-12).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.bn.margins import Margins
from streamnb.naive_bayes.smoothing import lidstone, lidstone_one, smoothed, smoothed_rows

__all__ = ["MARGINAL_PRIOR", "SMOOTHINGS", "smoothing_prior", "tree_terms_one", "tree_terms_rows"]

_log, _exp, _inf = math.log, math.exp, math.inf

#: Smoothings of the CPTs of a feature given a feature parent: ``"marginal"`` toward the
#: feature's marginal given the class, ``"lidstone"`` toward uniform.
SMOOTHINGS = ("marginal", "lidstone")

#: Strength ``s`` (in events) of the pull toward the marginal, Friedman et al.'s ``N0 = 5``.
MARGINAL_PRIOR = 5.0


def smoothing_prior(smoothing: str) -> float:
    """The ``prior`` of the inference functions for a learner's ``smoothing`` (0: Lidstone)."""
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
    return MARGINAL_PRIOR if smoothing == "marginal" else 0.0


# -- one event, plain floats -----------------------------------------------------------------
def tree_terms_one(
    n: Any, ns: tuple, m: Margins, alpha: float, obs: dict, parents: list, children: list, ks: Any,
    extra: dict | None = None, prior: float = 0.0,
) -> dict:
    """``{feature id: [term per class of ks]}`` for one event.

    ``n``/``ns``: the pair counts' flat view and strides; ``obs``: ``{feature id: cell}`` of
    the observed (and known) features; ``parents[j]`` (-1: the class only) and ``children[j]``
    the structure. ``extra``: evidence from outside the table at *missing* features,
    ``{feature id: {class: (log scale, [likelihood per value of the feature, over
    m.fcells])}}`` (a numeric child's density given each value): it enters the cluster of
    that feature like the evidence of an observed child. ``prior``: see :func:`~streamnb.naive_bayes.smoothing.smoothed`.
    """
    s0, s1, s2 = ns
    Dv, (d0, d1, d2) = m.Dv, m.ds
    Tv, (t0, t1) = m.Tv, m.ts
    nv = m.nv
    out: dict = {}
    tops = []
    for j, cj in obs.items():
        p = parents[j]
        if p < 0:
            a, b, v = cj * (s1 + s2), j * t1, nv[j]
            out[j] = [lidstone_one(n[k * s0 + a], Tv[k * t0 + b], alpha, v) for k in ks]
            continue
        cp = obs.get(p, -1)
        if cp < 0:  # the parent is missing: j is evidence of the cluster above it
            t = p
            while parents[t] >= 0 and parents[t] not in obs:
                t = parents[t]
            if t not in tops:
                tops.append(t)
            continue
        a, b, v = cj * s1 + cp * s2, j * d1 + cp * d2, nv[j]
        if prior > 0:
            a2, b2 = cj * (s1 + s2), j * t1
            out[j] = [smoothed(n[k * s0 + a], Dv[k * d0 + b], n[k * s0 + a2], Tv[k * t0 + b2], alpha, v, prior)
                      for k in ks]
        else:
            out[j] = [lidstone_one(n[k * s0 + a], Dv[k * d0 + b], alpha, v) for k in ks]
    for p in extra or ():
        t = p
        while parents[t] >= 0 and parents[t] not in obs:
            t = parents[t]
        if t not in tops:
            tops.append(t)
    for t in tops:
        out[t] = [_cluster_one(n, ns, m, alpha, obs, parents, children, t, k, extra, prior) for k in ks]
    return out


def _cluster_one(n: Any, ns: tuple, m: Margins, alpha: float, obs: dict, parents: list,
                 children: list, t: int, k: int, extra: dict | None = None, prior: float = 0.0) -> float:
    """``log sum_v P(t = v | parent, y=k) lambda_t(v)`` for the missing top ``t``."""
    s0, s1, s2 = ns
    Dv, (d0, d1, d2) = m.Dv, m.ds
    scale = [0.0]
    lam = _lambda_one(n, ns, m, alpha, obs, children, t, k, extra, scale, prior)
    vt, nvt = m.fcells[t], m.nv[t]
    p = parents[t]
    tt = m.Tv[k * m.ts[0] + t * m.ts[1]]
    if p >= 0:
        cp = obs[p]
        den = Dv[k * d0 + t * d1 + cp * d2]
        top = [_exp(smoothed(n[k * s0 + v * s1 + cp * s2], den, n[k * s0 + v * (s1 + s2)], tt, alpha, nvt, prior))
               for v in vt]
    else:
        top = [_exp(lidstone_one(n[k * s0 + v * (s1 + s2)], tt, alpha, nvt)) for v in vt]
    total = math.fsum(a * b for a, b in zip(top, lam))  # type: ignore[arg-type]
    return _log(total) + scale[0] if total > 0 else -_inf


def _lambda_one(n: Any, ns: tuple, m: Margins, alpha: float, obs: dict, children: list,
                t: int, k: int, extra: dict | None = None, scale: list | None = None,
                prior: float = 0.0) -> list | None:
    """``P(evidence below the missing t | t = v, y=k)`` over t's values, divided by
    ``exp(scale[0])`` (what ``extra`` evidence adds to it); None: no evidence."""
    s0, s1, s2 = ns
    Dv, (d0, d1, d2) = m.Dv, m.ds
    vt = m.fcells[t]
    lam = None
    if extra and t in extra:
        log_scale, lam = extra[t][k]
        scale[0] += log_scale  # type: ignore[index]
    for c in children[t]:
        nvc = m.nv[c]
        dc = k * d0 + c * d1
        tc = m.Tv[k * m.ts[0] + c * m.ts[1]]
        cc = obs.get(c, -1)
        if cc >= 0:
            row = k * s0 + cc * s1
            nx = n[row + cc * s2]
            msg = [_exp(smoothed(n[row + v * s2], Dv[dc + v * d2], nx, tc, alpha, nvc, prior)) for v in vt]
        else:
            sub = _lambda_one(n, ns, m, alpha, obs, children, c, k, extra, scale, prior)
            if sub is None:
                continue
            vc = m.fcells[c]
            marg = [n[k * s0 + u * (s1 + s2)] for u in vc]
            msg = []
            for v in vt:
                den = Dv[dc + v * d2]
                col = k * s0 + v * s2
                msg.append(math.fsum(_exp(smoothed(n[col + u * s1], den, nu, tc, alpha, nvc, prior)) * s
                                     for u, nu, s in zip(vc, marg, sub)))
        lam = msg if lam is None else [a * b for a, b in zip(lam, msg)]
    return lam


# -- many events, numpy ----------------------------------------------------------------------
def tree_terms_rows(
    n: np.ndarray, m: Margins, alpha: float, obs: np.ndarray, parents: list, children: list,
    ks: np.ndarray, terms: np.ndarray, present: np.ndarray, prior: float = 0.0,
) -> None:
    """Fill ``terms[j, rows, ks]`` (``[features, rows, classes]``) and ``present[j, rows]``
    with the terms of the rows of ``obs`` (``[rows, features]`` cell ids, -1: missing);
    ``prior``: see :func:`~streamnb.naive_bayes.smoothing.smoothed`."""
    D, T, nv = m.D, m.T, np.asarray(m.nv)
    observed = obs >= 0
    kk = ks[:, None]
    for j in range(obs.shape[1]):
        rows = np.flatnonzero(observed[:, j])
        p = parents[j]
        if p >= 0 and len(rows):
            rows = rows[observed[rows, p]]
        if not len(rows):
            continue
        cj = obs[rows, j]
        nx = n[kk, cj[None, :], cj[None, :]]
        if p < 0:
            terms[j][np.ix_(rows, ks)] = lidstone(nx, T[kk, j], alpha, nv[j]).T
        else:
            cp = obs[rows, p]
            num, den = n[kk, cj[None, :], cp[None, :]], D[kk, j, cp[None, :]]
            terms[j][np.ix_(rows, ks)] = smoothed_rows(num, den, nx, T[kk, j], alpha, nv[j], prior).T
        present[j, rows] = True
    pa = np.asarray(parents, dtype=np.intp)
    child = np.flatnonzero(pa >= 0)
    if not len(child):
        return
    orphan = observed[:, child] & ~observed[:, pa[child]]   # observed, parent missing
    need = np.flatnonzero(orphan.any(axis=1))
    if not len(need):
        return
    patterns, group = np.unique(observed[need], axis=0, return_inverse=True)
    for g, mask in enumerate(patterns):
        rows = need[group.reshape(-1) == g]
        tops: list[int] = []
        for j in child[mask[child] & ~mask[pa[child]]]:
            t = int(pa[j])
            while pa[t] >= 0 and not mask[pa[t]]:
                t = int(pa[t])
            if t not in tops:
                tops.append(t)
        sub = obs[rows]
        for t in tops:
            lam = _lambda_rows(n, m, alpha, sub, mask, children, t, ks, prior)
            vt = np.asarray(m.fcells[t], dtype=np.intp)
            p = int(pa[t])
            nx = n[kk, vt[None, :], vt[None, :]][:, None, :]                            # [k, 1, V]
            tt = T[ks, t][:, None, None]
            if p >= 0:
                cp = sub[:, p]
                num = n[ks[:, None, None], vt[None, None, :], cp[None, :, None]]        # [k, r, V]
                den = D[kk, t, cp[None, :]][:, :, None]
                top = np.exp(smoothed_rows(num, den, nx, tt, alpha, nv[t], prior))
            else:
                top = np.exp(lidstone(nx, tt, alpha, nv[t]))
            with np.errstate(divide="ignore"):
                term = np.log((top * lam).sum(axis=2))                                    # [k, r]
            terms[t][np.ix_(rows, ks)] = term.T
            present[t, rows] = True


def _lambda_rows(n: np.ndarray, m: Margins, alpha: float, obs: np.ndarray, mask: np.ndarray,
                 children: list, t: int, ks: np.ndarray, prior: float = 0.0) -> np.ndarray | None:
    """``[k, rows, V_t]``: P(evidence below the missing t | t = v, y); None: no evidence."""
    D, T, nv = m.D, m.T, m.nv
    vt = np.asarray(m.fcells[t], dtype=np.intp)
    kk = ks[:, None]
    lam = None
    for c in children[t]:
        den = D[kk, c, vt[None, :]][:, None, :]                                          # [k, 1, Vt]
        tc = T[ks, c][:, None, None]
        if mask[c]:
            cc = obs[:, c]
            num = n[ks[:, None, None], cc[None, :, None], vt[None, None, :]]              # [k, r, Vt]
            nx = n[kk, cc[None, :], cc[None, :]][:, :, None]                              # [k, r, 1]
            msg = np.exp(smoothed_rows(num, den, nx, tc, alpha, nv[c], prior))
        else:
            sub = _lambda_rows(n, m, alpha, obs, mask, children, c, ks, prior)
            if sub is None:
                continue
            vc = np.asarray(m.fcells[c], dtype=np.intp)
            nx = n[kk, vc[None, :], vc[None, :]][:, :, None]                              # [k, Vc, 1]
            num = n[ks[:, None, None], vc[None, :, None], vt[None, None, :]]              # [k, Vc, Vt]
            cpt = np.exp(smoothed_rows(num, den, nx, tc, alpha, nv[c], prior))
            msg = np.einsum("kcm,krc->krm", cpt, sub)
        lam = msg if lam is None else lam * msg
    return lam
