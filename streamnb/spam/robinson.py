"""Robinson's token probabilities and Fisher's inverse chi-square combining, as pure functions.

Gary Robinson, *A statistical approach to the spam problem*, Linux Journal 107 (2003), as used
by SpamBayes (``chi2_spamprob``) and bogofilter:

- per token, ``p(w) = b / (b + g)`` with ``b = n_spam(w) / N_spam`` and ``g = n_ham(w) / N_ham``
  (message frequencies), shrunk towards the unknown-word probability ``x`` with strength ``s``:
  ``f(w) = (s x + n p(w)) / (s + n)``, ``n = n_spam(w) + n_ham(w)``, when the classes are the
  same size. With unequal class sizes the shrinkage is done where the ``n`` observations are
  binomial (see below), which is Robinson's formula again when ``N_spam = N_ham``;
- ``H = C^-1(-2 sum ln f(w), 2m)`` and ``S = C^-1(-2 sum ln (1 - f(w)), 2m)`` over the ``m``
  significant tokens, where ``C^-1`` is the inverse chi-square (1 - its survival function
  :func:`chi2q`), and the indicator ``I = (1 + S - H) / 2``.

A worked example (see the tests for the same numbers by hand): one token seen in 3 of 4 spams
and 1 of 4 hams, ``s = 1, x = 0.5``: ``p = 0.75``, ``n = 4``, ``f = (0.5 + 3) / 5 = 0.7``.

>>> float(robinson(np.array([3.0]), np.array([1.0]), 4.0, 4.0, s=1.0, x=0.5)[0])
0.7
>>> [round(float(v), 4) for v in robinson(np.array([0.0, 1.0]), np.array([10.0, 0.0]), 3.0, 10.0, 1.0, 0.5)]
[0.0667, 0.8421]

>>> [round(v, 6) for v in fisher(np.array([0.7, 0.9]))]
[0.864803, 0.078918, 0.892943]

**Unequal class sizes.** Of the ``n`` messages that contain a token, the number that are spam
is binomial with parameter ``pi = b N_spam / (b N_spam + g N_ham)``, the token's share of spam
among its occurrences; ``p(w)`` is that share corrected for the class sizes,
``p / (1 - p) = (pi / (1 - pi)) (N_ham / N_spam)``. Robinson's Beta shrinkage with ``n``
observations is the conjugate update of ``pi``, so :func:`robinson` shrinks ``pi`` towards the
share ``pi0`` of a token with ``p = x``, ``pi = (s pi0 + n_spam) / (s + n)``, then converts it
to ``p``. Shrinking ``p(w)`` itself with weight ``n`` (the textbook formula) treats ``0`` of 3
spams as firmly as ``0`` of 3,000: after 3 spams and 10 hams a token in every ham and in no
spam gets ``f = 0.045`` (above: ``0.0667``), and a message of such tokens scores
as a sure ham although three spams say little about what spam contains.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["chi2_logcdf", "chi2_logsf", "chi2q", "combine", "cutoff_logit", "fisher", "fisher_logit", "robinson",
           "significant"]  # fmt: skip


def robinson(n_spam: np.ndarray, n_ham: np.ndarray, total_spam: float, total_ham: float, s: float, x: float) -> np.ndarray:
    """Robinson's ``f(w)`` for each token from its message counts in each class, shrunk on the
    binomial share of spam among the token's messages (see the module). While a class has no
    message, ``p(w)`` is undefined and every token is ``x`` (bogofilter's "we don't know")."""
    n_spam = np.asarray(n_spam, dtype=float)
    n_ham = np.asarray(n_ham, dtype=float)
    if not (total_spam > 0 and total_ham > 0):
        return np.full(np.broadcast(n_spam, n_ham).shape, float(x))
    ratio = total_ham / total_spam
    pi0 = x / (x + (1.0 - x) * ratio)  # the share of spam of a token with p = x
    n = n_spam + n_ham
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(s + n > 0, (s * pi0 + n_spam) / np.where(s + n > 0, s + n, 1.0), pi0)
        return pi * ratio / (pi * ratio + (1.0 - pi))


_LOG_FACTORIALS = np.zeros(1)  # ln i! for i = 0, 1, ...: grown on demand, never recomputed


def _log_factorials(upto: int) -> np.ndarray:
    """``ln i!`` for ``i < upto`` (a view of one table kept across calls)."""
    global _LOG_FACTORIALS
    if len(_LOG_FACTORIALS) < upto:
        size = max(upto, 2 * len(_LOG_FACTORIALS))
        _LOG_FACTORIALS = np.array([math.lgamma(i + 1.0) for i in range(size)])
    return _LOG_FACTORIALS[:upto]


def chi2_logsf(chi: float, df: int) -> float:
    """``ln P(X >= chi)`` for a chi-square with an even number ``df`` of degrees of freedom:
    ``ln [exp(-m) sum_{i < df/2} m^i / i!]`` with ``m = chi / 2``, summed in log space, so it
    stays finite far in the tail (where :func:`chi2q` is 0).

    >>> round(chi2_logsf(2.0, 2), 12), chi2_logsf(0.0, 4), round(chi2_logsf(4000.0, 4), 3)
    (-1.0, 0.0, -1992.399)
    """
    if df % 2 or df <= 0:
        raise ValueError(f"df must be even and positive, got {df}")
    if chi <= 0:
        return 0.0
    if math.isinf(chi):
        return -math.inf
    m = chi / 2.0
    k = df // 2
    log_terms = -m + np.arange(k) * math.log(m) - _log_factorials(k)
    top = log_terms.max()
    return min(0.0, float(top + math.log(np.exp(log_terms - top).sum())))


def chi2_logcdf(chi: float, df: int) -> float:
    """``ln P(X <= chi)``, accurate in the lower tail too: ``log1p(-sf)`` where the survival
    function is at most 1/2, else the series ``exp(-m) sum_{i >= df/2} m^i / i!`` in log space.

    >>> round(math.exp(chi2_logcdf(2.0, 2)), 12) == round(1 - math.exp(-1.0), 12)
    True
    >>> round(chi2_logcdf(1e-6, 40), 1), chi2_logcdf(0.0, 4)
    (-332.5, -inf)
    """
    if df % 2 or df <= 0:
        raise ValueError(f"df must be even and positive, got {df}")
    if chi <= 0:
        return -math.inf
    return _logcdf(chi, df, chi2_logsf(chi, df))


def _logcdf(chi: float, df: int, log_sf: float) -> float:
    """:func:`chi2_logcdf` given ``chi2_logsf(chi, df)`` (``chi > 0``)."""
    if log_sf <= -math.log(2.0):
        return math.log1p(-math.exp(log_sf))
    m, k = chi / 2.0, df // 2  # here m < k + 1: the terms decrease from i = k on
    end = k + int(12.0 * math.sqrt(k + m) + 60.0)
    log_terms = -m + np.arange(k, end) * math.log(m) - _log_factorials(end)[k:]
    top = log_terms.max()
    return min(0.0, float(top + math.log(np.exp(log_terms - top).sum())))


def chi2q(chi: float, df: int) -> float:
    """Survival function ``P(X >= chi)`` of a chi-square with an even number ``df`` of degrees
    of freedom (``exp`` of :func:`chi2_logsf`).

    >>> round(chi2q(2.0, 2), 12) == round(math.exp(-1.0), 12), chi2q(0.0, 4), chi2q(math.inf, 4)
    (True, 1.0, 0.0)
    """
    return math.exp(chi2_logsf(chi, df))


def _chis(f: np.ndarray) -> tuple[float, float, int]:
    with np.errstate(divide="ignore"):
        ham_chi = float(-2.0 * np.log(f).sum())
        spam_chi = float(-2.0 * np.log1p(-f).sum())
    return ham_chi, spam_chi, len(f)


def fisher(f: np.ndarray) -> tuple[float, float, float]:
    """``(S, H, I)`` of the token probabilities ``f``; ``(0, 0, 0.5)`` for no token."""
    return combine(f)[:3]


def fisher_logit(f: np.ndarray) -> float:
    """``ln I - ln (1 - I)`` of Fisher's indicator, computed from the log tails so that it
    keeps ordering messages where ``I`` itself has rounded to 0 or 1 (a ranking score):
    ``I = (Q_ham + S) / 2`` and ``1 - I = (H + Q_spam) / 2`` with ``Q`` the survival functions.

    >>> S, H, I = fisher(np.array([0.7, 0.9]))
    >>> round(fisher_logit(np.array([0.7, 0.9])), 9) == round(math.log(I / (1 - I)), 9)
    True
    >>> fisher(np.full(400, 0.999))[2], round(fisher_logit(np.full(400, 0.999)), 1)
    (1.0, 1596.4)
    """
    return combine(f)[3]


def combine(f: np.ndarray) -> tuple[float, float, float, float]:
    """``(S, H, I, logit)``: :func:`fisher` and :func:`fisher_logit` of ``f`` from one pass
    (each chi-square tail computed once)."""
    f = np.asarray(f, dtype=float)
    if not len(f):
        return 0.0, 0.0, 0.5, 0.0
    ham_chi, spam_chi, n = _chis(f)
    df = 2 * n
    ham_sf, spam_sf = chi2_logsf(ham_chi, df), chi2_logsf(spam_chi, df)
    ham_cdf = _logcdf(ham_chi, df, ham_sf) if ham_chi > 0 else -math.inf
    spam_cdf = _logcdf(spam_chi, df, spam_sf) if spam_chi > 0 else -math.inf
    H = 1.0 - math.exp(ham_sf)
    S = 1.0 - math.exp(spam_sf)
    logit = float(np.logaddexp(ham_sf, spam_cdf) - np.logaddexp(ham_cdf, spam_sf))
    return S, H, (1.0 + S - H) / 2.0, logit


def significant(f: np.ndarray, min_dev: float, max_tokens: int | None) -> np.ndarray:
    """Indices of the tokens used: ``|f - 0.5| >= min_dev``, the ``max_tokens`` farthest from
    0.5 (ties: first in the message first), in message order.

    >>> significant(np.array([0.5, 0.99, 0.3, 0.05, 0.58]), 0.1, 2).tolist()
    [1, 3]
    """
    dev = np.abs(f - 0.5)
    ok = np.flatnonzero(dev >= min_dev)
    if max_tokens is not None and len(ok) > max_tokens:
        ok = np.sort(ok[np.argsort(-dev[ok], kind="stable")[:max_tokens]])
    return ok


def cutoff_logit(p: float) -> float:
    """``ln p - ln (1 - p)``, infinite at 0 and 1 (a cut-off on the indicator ``I`` as a
    threshold on the logit of :func:`fisher_logit`)."""
    if p <= 0.0:
        return -np.inf
    if p >= 1.0:
        return np.inf
    return float(np.log(p) - np.log1p(-p))
