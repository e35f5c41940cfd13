"""What an edge must weigh to enter a structure, or to stay in it: the BIC price and the
chi-squared independence test of the pair given the class (:func:`edge_price`), and the free
parameters of a categorical pair that both are priced on (:func:`class_edge_params`)."""

from __future__ import annotations

import functools

import numpy as np
import scipy.stats

__all__ = ["EDGE_PENALTIES", "CHI2_LEVEL", "STAY_LEVEL", "bic_penalty", "edge_price", "edge_prices",
           "class_edge_params", "categorical_edge_params"]  # fmt: skip


#: Edge penalties a learner accepts (see :func:`edge_price`); None: a spanning tree.
EDGE_PENALTIES = ("bic", "chi2", None)

#: Level of the ``"chi2"`` edge test: an edge between independent features enters with about
#: this probability.
CHI2_LEVEL = 1e-3

#: Level at which an edge already in the structure must still pass the ``"chi2"`` test to stay
#: (a weak true edge near the detection limit does not flap in and out).
STAY_LEVEL = 0.05


def bic_penalty(n_params: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The BIC/MDL price of an edge in nats per event: ``n_params log(n) / (2 n)``.

    An edge adds ``n_params`` free parameters to the model and its weight (a mutual
    information, nats per event) is what it adds to the log-likelihood per event; over ``n``
    events it pays for itself when ``n * weight > n_params * log(n) / 2`` (Schwarz 1978;
    Friedman & Goldszmidt's MDL score of a network is the same trade-off). So an edge between
    independent features, whose plug-in weight is about ``n_params / (2 n)``, stays out, and
    a true dependency enters once enough events show it. ``inf`` where ``n <= 1``: with at
    most one event no edge pays.

    >>> float(bic_penalty(np.array(1.0), np.array(np.e ** 2)).round(6))
    0.135335
    """
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, np.asarray(n_params, dtype=float) * np.log(np.maximum(n, 1.0)) / (2 * n), np.inf)


def edge_price(penalty: str | None, n_params: np.ndarray, n: np.ndarray, staying: bool = False) -> np.ndarray:
    """What an edge must weigh (nats per event) to enter the structure, or, ``staying``, to stay.

    - ``"bic"``: :func:`bic_penalty`, ``n_params log(n) / (2 n)``; to stay, AIC's
      ``n_params / n``;
    - ``"chi2"``: the independence test of the pair given the class: ``2 n I`` is
      asymptotically chi-squared with ``n_params`` degrees of freedom when the pair is
      independent (the G-test), so an edge enters when its weight exceeds that distribution's
      upper :data:`CHI2_LEVEL` quantile over ``2 n``, and stays while it exceeds the
      :data:`STAY_LEVEL` quantile. It grows like ``n_params`` (BIC like ``n_params log n``):
      it keeps the edges a test at level 0.001 finds, e.g. most of the car data's, which BIC
      drops at 1,728 events;
    - None: 0 (every edge, the spanning tree of Friedman et al.).

    >>> round(float(edge_price("chi2", np.array(1.0), np.array(1000.0))), 6)
    0.005414
    >>> round(float(edge_price("chi2", np.array(1.0), np.array(1000.0), staying=True)), 6)
    0.001921
    """
    n = np.asarray(n, dtype=float)
    if penalty is None:
        return np.zeros(np.shape(n))
    if penalty == "bic":
        if not staying:
            return bic_penalty(n_params, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 1, np.asarray(n_params, dtype=float) / np.maximum(n, 1.0), np.inf)
    if penalty == "chi2":
        return _chi2_prices((STAY_LEVEL if staying else CHI2_LEVEL,), n_params, n)[0]
    raise ValueError(f"edge penalty must be one of {EDGE_PENALTIES}, got {penalty!r}")


@functools.lru_cache(maxsize=4096)
def _chi2_isf(level: float, df: float) -> float:
    return float(scipy.stats.chi2.isf(level, df))


def edge_prices(penalty: str | None, n_params: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``[2, ...]``: the price to enter and the price to stay (:func:`edge_price`).

    >>> p = edge_prices("chi2", np.array([1.0, 2.0]), np.array([1000.0, 1000.0]))
    >>> bool((p[0] == edge_price("chi2", np.array([1.0, 2.0]), np.array([1000.0] * 2))).all())
    True
    """
    if penalty == "chi2":
        return _chi2_prices((CHI2_LEVEL, STAY_LEVEL), n_params, n)
    return np.stack([edge_price(penalty, n_params, n), edge_price(penalty, n_params, n, staying=True)])


def _chi2_prices(levels: tuple, n_params: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``[len(levels), ...]``: the chi-squared quantile of each edge's parameter count at each
    level, over ``2 n`` (``inf`` where ``n <= 1``); a few distinct counts, a quantile each."""
    n = np.asarray(n, dtype=float)
    df = np.maximum(np.asarray(n_params, dtype=float), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, _quantiles(levels, df) / (2 * np.maximum(n, 1.0)), np.inf)


#: The last quantile arrays of :func:`_quantiles` by (levels, shape, degrees of freedom): the
#: parameter counts of the edges change seldom between relearns (classes seen, values seen).
_QUANTILES: dict = {}

#: Largest table (cells) whose quantiles are kept (a key holds the table's bytes).
_QUANTILES_KEPT = 4096


def _quantiles(levels: tuple, df: np.ndarray) -> np.ndarray:
    """``[len(levels), *df.shape]`` chi-squared quantiles (read-only; kept for small tables)."""
    key = (levels, df.shape, df.tobytes()) if df.size <= _QUANTILES_KEPT else None
    out = _QUANTILES.get(key) if key is not None else None
    if out is None:
        values, where = np.unique(df, return_inverse=True)
        quantiles = np.array([[_chi2_isf(level, float(v)) for v in values.tolist()] for level in levels])
        out = quantiles[:, where].reshape((len(levels), *df.shape))
        out.flags.writeable = False
        if key is not None:
            if len(_QUANTILES) >= 16:
                _QUANTILES.pop(next(iter(_QUANTILES)))
            _QUANTILES[key] = out
    return out


def class_edge_params(diag: np.ndarray, cell_feature: np.ndarray, n_features: int) -> np.ndarray:
    """``[F, F]``: the free parameters of every categorical pair given the class, the degrees
    of freedom of its independence test: ``sum_y (r_y(i) - 1)(r_y(j) - 1)`` over the classes,
    ``r_y(i)`` the values of ``i`` seen in class ``y`` (``diag``, ``[C, cells]``: the events
    of each class and cell).

    ``2 N I(Xi; Xj | Y)`` is the sum over the classes of the G statistics of the class's own
    table, each chi-squared with ``(rows - 1)(columns - 1)`` degrees of freedom under
    independence, rows and columns being the values that occur in that class (a value never
    seen there adds no parameter: its probabilities are 0 by estimate, not by test; the
    "adjusted degrees of freedom" of bnlearn's ``mi-adf`` test). With values spread over every
    class this is ``C (|X_i| - 1)(|X_j| - 1)``; with many classes of few events each, most
    values occur in a few classes only and the price falls with them, so the test does not
    grow with classes that hold no evidence.

    >>> diag = np.array([[3, 1, 0, 2, 2], [0, 4, 0, 5, 0]])   # cells: a=0,1,2; b=0,1
    >>> class_edge_params(diag, np.array([0, 0, 0, 1, 1]), 2).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    cf = np.asarray(cell_feature, dtype=np.intp)
    hot = np.zeros((len(cf), n_features))
    hot[np.arange(len(cf)), cf] = 1.0
    free = np.maximum((np.asarray(diag) > 0) @ hot - 1.0, 0.0)  # [C, F]: values seen in the class, less 1
    return free.T @ free


def categorical_edge_params(n: np.ndarray, cell_feature: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(parameters, events)`` of every categorical pair: a TAN edge between ``i`` and ``j``
    adds :func:`class_edge_params` parameters (``C (|X_i| - 1)(|X_j| - 1)`` when every value
    occurs in every class), and the pair's estimate rests on the events where both were
    observed."""
    cf = np.asarray(cell_feature, dtype=np.intp)
    n_f = int(cf.max()) + 1 if len(cf) else 0
    hot = np.zeros((len(cf), n_f))
    hot[np.arange(len(cf)), cf] = 1.0
    joint = n.sum(axis=0)
    events = hot.T @ joint @ hot                               # [F, F] co-observed weight
    return class_edge_params(np.diagonal(n, axis1=1, axis2=2), cf, n_f), events
