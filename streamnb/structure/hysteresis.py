"""A structure that holds still on a stationary stream: an edge in place pays a lower price to
stay than to enter (:func:`favour_incumbents`), and a change of structure must gain more than
a margin of what it changes, or more than its own noise (:func:`hold`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from statistics import NormalDist

import numpy as np

from streamnb.structure.edge_prices import CHI2_LEVEL
from streamnb.structure.forest import Structure

__all__ = ["SWAP_Z", "favour_incumbents", "hold", "swap_noise"]

#: Standard errors by which a change of structure must gain to be made whatever the margin: the
#: normal quantile at the edge test's level (3.09).
SWAP_Z = NormalDist().inv_cdf(1.0 - CHI2_LEVEL)


def favour_incumbents(weights: np.ndarray, prices: np.ndarray, names: Sequence[Hashable],
                      current: Structure) -> np.ndarray:
    """``weights`` (less the price to enter, ``[F, F]`` over ``names``) where the edges of the
    ``current`` structure pay only the price to stay (``prices``, from
    :func:`~streamnb.structure.edge_prices.edge_prices`)."""
    pos = {f: i for i, f in enumerate(names)}
    out = weights.copy()
    for p, c in current.edges:
        i, j = pos.get(p), pos.get(c)
        if i is None or j is None:
            continue
        enter, stay = float(prices[0, i, j]), float(prices[1, i, j])
        if math.isfinite(enter) and math.isfinite(stay):  # too few events: no price is finite
            out[i, j] = out[j, i] = weights[i, j] + enter - stay
    return out


def swap_noise(weights: list[float], n: float) -> float:
    """The standard error of a sum of edge weights (mutual informations, nats per event)
    estimated from ``n`` events: ``sqrt(sum_e (1 - exp(-2 I_e)) / n)``, each edge's estimate
    taken as independent of the others'. ``1 - exp(-2 I)`` is ``rho**2``, the asymptotic
    ``n``-fold variance of the plug-in ``-log(1 - rho**2) / 2`` of a Gaussian pair (delta
    method), and about ``2 I`` for a weak dependence of any kind. ``inf`` if ``n <= 0``.

    >>> round(swap_noise([-0.5 * math.log(1 - 0.8 ** 2)], 100.0), 12)   # rho = 0.8: 0.8 / 10
    0.08
    """
    if not n > 0:
        return math.inf
    return math.sqrt(sum(-math.expm1(-2.0 * max(w, 0.0)) for w in weights) / n)


def hold(old: Structure, new: Structure, weights: np.ndarray, names: Sequence[Hashable], margin: float,
         raw: np.ndarray | None = None, n: float = 0.0) -> Structure:
    """``new``, unless the change is not worth it under the same weights.

    ``weights`` (``[F, F]`` over ``names``) are what each edge is worth to the structure, its
    weight less its price, ``raw`` the weights themselves (None: ``weights``). The change from
    ``old`` to ``new`` adds some edges and removes others; it is made only if what it gains,
    the worth of the edges added less that of the edges removed, exceeds ``margin`` times what
    is at stake, the total weight of every edge added or removed. So a swap between two edges
    needs the new one to beat the old by about ``2 margin`` relative (estimates that wobble
    near a tie do not swap back and forth), and a clearly better edge always wins, however
    large the rest of the structure (the margin is relative to the edges that change). With
    :func:`favour_incumbents`, an edge also enters at one price and leaves at a lower one.

    A relative margin does not shrink as events accumulate: between heavy edges (strongly
    correlated numbers weigh nats each) it would keep a structure chosen early from noisy
    estimates however much the events later say against it. So with ``n`` (the events the
    weights are estimated from) the change is also made when its gain exceeds :data:`SWAP_Z`
    standard errors of the weights at stake (:func:`swap_noise`): a gain that chance alone
    reaches with about the edge test's probability. Whichever bar is lower applies; for light
    edges and few events it is the margin.

    When ``old`` stays, its edge weights are refreshed. ``new`` is taken as is when ``old`` is
    empty, no longer a forest over ``names``, or ``margin`` is 0.

    >>> from streamnb.structure.forest import forest_structure
    >>> w = np.array([[0, 1.0, .50], [1.0, 0, .52], [.50, .52, 0]])
    >>> old = Structure({"a": None, "b": "a", "c": "a"}, {}, True)
    >>> new = forest_structure(w, ["a", "b", "c"], True)
    >>> hold(old, new, w, ["a", "b", "c"], 0.05).edges, hold(old, new, w, ["a", "b", "c"], 0.0).edges
    ([('a', 'b'), ('a', 'c')], [('a', 'b'), ('b', 'c')])
    >>> w[0, 2] = w[2, 0] = 0.40                                     # a-c is now clearly weaker
    >>> hold(old, forest_structure(w, ["a", "b", "c"], True), w, ["a", "b", "c"], 0.05).edges
    [('a', 'b'), ('b', 'c')]
    """
    pos = {f: i for i, f in enumerate(names)}
    if margin <= 0 or not old.parents or set(old.parents) - set(pos) and any(
        old.parents.get(f) is not None for f in set(old.parents) - set(pos)
    ):
        return new
    edges = [(p, c) for p, c in old.edges if p in pos and c in pos]
    if len(edges) != len(old.edges):
        return new
    before = {(min(pos[p], pos[c]), max(pos[p], pos[c])) for p, c in edges}
    after = {(min(pos[p], pos[c]), max(pos[p], pos[c])) for p, c in new.edges}
    added, removed = after - before, before - after
    if not added and not removed:
        return new
    full = weights if raw is None else raw
    gain = sum(float(weights[e]) for e in added) - sum(float(weights[e]) for e in removed)
    at_stake = [float(full[e]) for e in added | removed if np.isfinite(full[e])]
    bar = margin * sum(abs(w) for w in at_stake)
    if n > 0:
        bar = min(bar, SWAP_Z * swap_noise(at_stake, n))
    if gain > bar or not np.isfinite(gain):
        return new
    parents = {f: old.parents.get(f) for f in new.parents}
    return Structure(parents, {(p, c): float(weights[pos[p], pos[c]]) for p, c in edges}, new.class_parent)
