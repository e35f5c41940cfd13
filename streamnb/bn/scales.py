"""The scale of each numeric feature in TAN's tree: ``x`` itself, or ``log(1 + x)``.

A count or an amount (zero-inflated, heavy-tailed, never below 0: an income, a number of
events, a duration) fits a Gaussian badly: a few large values inflate the variance, so the
common small values read as evidence for the wrong class, and a Gaussian per parent value
fits it on fewer events still. Such a feature is often Gaussian on a log scale. With
``scales="auto"`` (:class:`~streamnb.TANClassifier`'s default) every numeric feature ``f`` has
a second numeric slot, its **log slot** (key :func:`log_key`), learned from ``log1p(x_f)`` for
every value ``x_f >= 0`` until the first value below 0: the same statistics as any numeric
feature (Welford per class, co-moments with every other slot, Welford per categorical value),
so either scale of either feature of a pair is at hand, exactly, for every edge weight and
CPT. (After a value below 0 the slot learns nothing more: that feature stays linear, and a
stream of signed features costs little more than without log slots.) The variance smoothing
``eps`` stays that of the features (their largest pooled variance): log slots left out.

**The choice** (at every structure recompute): a feature whose every value so far was
``>= 0`` (:func:`unsigned`: its log slot has the weight of the feature itself) takes the scale
under which its class-conditional Gaussians give its values the higher likelihood. Both are
densities of ``x``: on the log scale ``log p(x | y) = log N(log1p(x); m_y, v_y) - log1p(x)``
(the change of variables), so

``L_log - L_lin = sum_y n_y [log v_y(x) - log v_y(log1p x)] / 2 - sum log1p(x)``

from the statistics alone (:func:`log_gains`; the variances are the model's, with the Gaussian
part's ``eps``, which adds a term; the last sum is ``sum_y n_y mean_y(log1p x)``). Both scales
have the same parameters, so no price; to keep the model still on a stationary stream a
feature changes scale only when the other one is ahead by :data:`SWITCH_NATS`, a likelihood
ratio of about 225 (:func:`log_features`). A feature never leaves the linear scale before the
first recompute, and a value below 0 sends it back for good (it is no longer a count or an
amount).

On the log scale a feature's term is the log density of ``x`` (that of ``log1p(x)`` less
``log1p(x)``), a value below 0 is outside the model and summed out like a missing value, and a
missing feature is integrated over its log scale (the same Gaussian integrals).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LOG_SLOT", "SCALES", "SWITCH_NATS", "is_log_key", "log_features", "log_gains", "log_key", "unsigned"]

#: The values of ``TANClassifier(scales=...)``.
SCALES = ("auto", "linear")

#: The first item of a log slot's key: no event can name a slot (a key starting so is refused).
LOG_SLOT = "\x00log1p"

#: Log-likelihood (nats) the other scale of a feature must be ahead by to take over: half the
#: 0.999 quantile of chi-squared with one degree of freedom, the level of an edge's price.
SWITCH_NATS = 5.4138


def log_key(feature: Any) -> tuple:
    """The key of ``feature``'s log slot."""
    return (LOG_SLOT, feature)


def is_log_key(key: Any) -> bool:
    """Whether ``key`` names a log slot (no event may use it)."""
    return type(key) is tuple and len(key) == 2 and key[0] == LOG_SLOT


def log_gains(n: np.ndarray, m2: np.ndarray, log_n: np.ndarray, log_mean: np.ndarray, log_m2: np.ndarray,
              eps: float) -> np.ndarray:
    """Per feature, ``L_log - L_lin`` in nats: the log-likelihood of its values under its
    class Gaussians on the log scale (a density of ``x``) less that on the linear scale.

    ``n, m2`` ``[classes, features]``: the Welford weight and M2 of each feature's values per
    class; ``log_n, log_mean, log_m2``: the same of its log slot; ``eps``: the variance
    smoothing added to every variance. The values of class ``y`` have, under ``N(mean_y, v_y +
    eps)``, the log-likelihood ``-n_y [log(2 pi) + log(v_y + eps) + v_y / (v_y + eps)] / 2``
    (``v_y = m2 / n``); on the log scale less ``sum log1p(x) = sum_y n_y mean_y(log1p x)``.

    >>> n = np.array([[50.0], [50.0]]); m2 = np.array([[5000.0], [80000.0]])   # variances 100, 1600
    >>> lmean, lm2 = np.array([[2.0], [3.0]]), np.array([[10.0], [12.0]])      # 0.2, 0.24
    >>> g = 25 * (np.log(100) + np.log(1600) - np.log(0.2) - np.log(0.24)) - (50 * 2 + 50 * 3)
    >>> bool(np.isclose(log_gains(n, m2, n, lmean, lm2, 0.0)[0], g, rtol=1e-12))
    True
    """
    def fit(n: np.ndarray, m2: np.ndarray) -> np.ndarray:  # n [log(v + eps) + v / (v + eps)], summed
        v = m2 / np.maximum(n, 1e-300)  # (no weight: no M2, v = 0 and the term 0)
        s = np.maximum(v + eps, 1e-300)
        return (n * (np.log(s) + v / s)).sum(axis=0)

    return 0.5 * (fit(n, m2) - fit(log_n, log_m2)) - (log_n * log_mean).sum(axis=0)


def unsigned(total: np.ndarray, log_total: np.ndarray) -> np.ndarray:
    """Which features had no value below 0 so far: their log slot has their pooled weight."""
    return (total > 0) & (log_total >= total * (1.0 - 1e-12))


def log_features(gains: np.ndarray, now_log: np.ndarray) -> np.ndarray:
    """Which of the :func:`unsigned` features stand on their log scale after a recompute, from
    their :func:`log_gains` and the current choice ``now_log`` (see the module text)."""
    return np.where(now_log, gains > -SWITCH_NATS, gains > SWITCH_NATS)
