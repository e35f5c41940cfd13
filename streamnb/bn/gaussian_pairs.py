"""Edge weights of numeric pairs for the tree, from streaming co-moments.

**Edge weights** (nats per event, the conditional mutual information of a Gaussian pair):
``I(Xi; Xj | Y) = -1/2 sum_y P(y) log(1 - rho_y**2)``, with ``rho_y`` the correlation of the
pair in class ``y`` and ``P(y)`` the share of class ``y`` among the events where both were
observed. Each ``rho_y**2`` is shrunk by ``n_y / (n_y + 1)`` (one pseudo-event without
correlation, the prior weight :data:`PRIOR`), so a pair seen twice is not a perfect line. With
an edge penalty each weight pays :func:`~streamnb.structure.edge_prices.edge_price` for its ``C``
slopes. The learner joins these weights with the categorical ones into one forest.
"""

from __future__ import annotations

import math  # noqa: F401  (the doctest below uses it)

import numpy as np

from streamnb.structure.edge_prices import edge_prices

__all__ = ["PRIOR", "gaussian_pair_prices", "gaussian_pair_weights"]

#: Pseudo-events of the shrinkage of correlations and residual variances (see the module text).
PRIOR = 1.0


def gaussian_pair_weights(n: np.ndarray, m2: np.ndarray, c: np.ndarray, penalty: str | None,
                          prices: np.ndarray | None = None) -> np.ndarray:
    """``[F, F]`` edge weights (nats per event) from co-moment arrays ``[C, F, F]`` (see the
    module text), less the BIC price of the edge's slopes with ``penalty="bic"``; the diagonal
    is ``-inf`` (no self edge).

    >>> n = np.full((1, 2, 2), 101.0); m2 = np.full((1, 2, 2), 4.0); c = np.full((1, 2, 2), 2.0)
    >>> w = gaussian_pair_weights(n, m2, c, None)             # rho = 1/2, shrunk by 101/102
    >>> round(float(w[0, 1]), 12) == round(-0.5 * math.log(1 - 0.25 * 101 / 102), 12)
    True
    """
    m2t = np.swapaxes(m2, 1, 2)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        # (c / m2) (c / m2t): no overflow where m2 m2t would (|c| <= sqrt(m2 m2t))
        rho2 = np.where((m2 > 0) & (m2t > 0), (c / m2) * (c / m2t), 0.0)
        rho2 = np.minimum(rho2, 1.0) * n / (n + PRIOR)
        per_class = -0.5 * np.log1p(-rho2)
        total = n.sum(axis=0)
        w = np.where(total > 0, (n * per_class).sum(axis=0) / np.where(total > 0, total, 1.0), 0.0)
    w = w - (gaussian_pair_prices(n, penalty) if prices is None else prices)[0]
    np.fill_diagonal(w, -np.inf)
    return w


def gaussian_pair_prices(n: np.ndarray, penalty: str | None) -> np.ndarray:
    """``[2, F, F]`` prices to enter and to stay of the numeric edges
    (:func:`~streamnb.structure.edge_prices.edge_prices` of their ``C`` slopes over the
    co-observed weight) from the weights ``n`` ``[C, F, F]``."""
    return edge_prices(penalty, (n > 0).sum(axis=0), n.sum(axis=0))

