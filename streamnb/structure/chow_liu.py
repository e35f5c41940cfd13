"""Chow-Liu trees and TAN structures from pair counts, as immutable :class:`Structure` values.

``chow_liu`` weighs every feature pair by ``I(Xi; Xj)``, ``tan`` by ``I(Xi; Xj | Y)``; both take
the maximum spanning tree (:func:`~streamnb.structure.spanning_tree.maximum_spanning_tree`,
deterministic ties) and direct it away from ``root`` (default: the first feature in
:func:`canonical` order, i.e. sorted by type name then ``repr``). Nothing here holds state: the same counts give the same tree.

>>> from streamnb.stats.pairwise import PairCounts
>>> pc = PairCounts()
>>> for a, b, c, y in [(0, 0, 1, "p"), (1, 1, 0, "p"), (0, 0, 0, "n"), (1, 1, 1, "n"), (0, 0, 1, "n")]:
...     pc.update([("a", a), ("b", b), ("c", c)], y)
>>> s = tan(pc)
>>> s.edges[0], s.parents["b"]
(('a', 'b'), 'a')
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from streamnb.stats.pairwise import PairCounts
from streamnb.structure.counted import (
    canonical,
    canonical_cells,
    counted,
    counted_cells,
    top_features,
    with_rest,
)
from streamnb.structure.edge_prices import (
    EDGE_PENALTIES,
    bic_penalty,
    categorical_edge_params,
    class_edge_params,
    edge_price,
    edge_prices,
)
from streamnb.structure.forest import Structure, forest_structure, mixed_forest, tree_structure
from streamnb.structure.hysteresis import favour_incumbents, hold
from streamnb.structure.information import conditional_mutual_information, mutual_information

#: Also importable from here: the forests (:mod:`streamnb.structure.forest`), edge prices
#: (:mod:`streamnb.structure.edge_prices`), hysteresis (:mod:`streamnb.structure.hysteresis`)
#: and canonical counts (:mod:`streamnb.structure.counted`) that Chow-Liu and TAN are built on.
__all__ = [
    "Structure", "chow_liu", "tan", "tan_scored", "class_chow_liu", "tree_structure", "forest_structure",
    "top_features", "counted", "counted_cells", "canonical", "canonical_cells", "bic_penalty",
    "class_edge_params", "categorical_edge_params", "edge_price", "edge_prices", "favour_incumbents", "hold",
    "with_rest", "mixed_forest", "EDGE_PENALTIES",
]  # fmt: skip


def _restricted(weights: np.ndarray, names: list, features: Sequence | None, *more: np.ndarray) -> tuple:
    """``weights`` (and ``more`` matrices like it) and ``names`` cut to ``features``."""
    if features is None:
        return (weights, names, *more)
    pos = {f: i for i, f in enumerate(names)}
    idx = np.array([pos[f] for f in features if f in pos], dtype=np.intp)
    ix = np.ix_(idx, idx)
    return (weights[ix], [names[i] for i in idx], *(m[ix] for m in more))


def chow_liu(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None
) -> Structure:
    """Chow-Liu tree: maximum spanning tree of ``I(Xi; Xj)`` (classes summed out)."""
    n, cf, names = counted(pairs)
    w, names = _restricted(mutual_information(n, cf, alpha), names, features)
    return with_rest(tree_structure(w, names, root), pairs)


def tan(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None,
    penalty: str | None = None,
) -> Structure:
    """TAN: maximum spanning tree of ``I(Xi; Xj | Y)``; the class is a parent of every feature.

    ``features`` restricts the tree (e.g. to :func:`top_features`); the others get no feature
    parent. With ``penalty="bic"`` every weight is first lowered by the edge's
    :func:`bic_penalty` and the result is a maximum spanning *forest* of the edges that still
    weigh more than 0 (:func:`forest_structure`; ``root`` is then ignored: each tree hangs
    from its first feature in canonical order).
    """
    s = tan_scored(pairs, root, alpha, features, penalty)[0]
    assert s is not None
    return with_rest(s, pairs)


def tan_scored(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None,
    penalty: str | None = None, weights: tuple[np.ndarray, np.ndarray] | None = None, build: bool = True,
) -> tuple[Structure | None, np.ndarray, list, np.ndarray]:
    """:func:`tan` before the features left out are added, with the weights (less their
    price), their names and the prices (``[2, F, F]``, :func:`edge_prices`); the structure
    is None unless ``build`` (a caller that changes the weights first builds it itself).

    ``weights``: ``(I(Xi; Xj | Y), co-observed weight)``, ``[F, F]`` over ``pairs.features``,
    computed elsewhere from the same counts (:class:`~streamnb.bn.cmi_sums.CMISums`): then
    only the table's diagonal is read.
    """
    if weights is None:
        n, cf, names = counted(pairs)
        w = conditional_mutual_information(n, cf, alpha)
        price = edge_prices(penalty, *categorical_edge_params(n, cf))
    else:
        keep, cf, names = counted_cells(pairs)
        ids = pairs.features.lookup(names)
        cmi, events = weights
        w = cmi[np.ix_(ids, ids)]
        price = np.zeros((2, *w.shape))
        if penalty is not None:
            diag = np.diagonal(pairs.raw("n"), axis1=1, axis2=2)[: len(pairs.classes.keys)][:, keep]
            price = edge_prices(penalty, class_edge_params(diag, cf, len(names)), events[np.ix_(ids, ids)])
    w = w - price[0]
    w, names, enter, stay = _restricted(w, names, features, price[0], price[1])
    price = np.stack([enter, stay])
    if not build:
        return None, w, names, price
    if penalty is None:
        return tree_structure(w, names, root, class_parent=True), w, names, price
    return forest_structure(w, names, class_parent=True), w, names, price


def class_chow_liu(
    pairs: PairCounts, y: Hashable, root: Hashable | None = None, alpha: float = 0.0,
    features: Sequence | None = None, weights: tuple[np.ndarray, np.ndarray] | None = None,
) -> Structure:
    """Chow-Liu tree of the events of class ``y`` only (from ``n[y]``); ``weights``: that
    class's ``I(Xi; Xj)`` over ``pairs.features`` computed elsewhere from the same counts."""
    k = pairs.classes.get(y)
    if k < 0:
        raise KeyError(y)
    if weights is None:
        n, cf, names = counted(pairs, k)
        w = mutual_information(n, cf, alpha)
    else:
        _, _, names = counted_cells(pairs, k)
        ids = pairs.features.lookup(names)
        w = weights[0][np.ix_(ids, ids)]
    w, names = _restricted(w, names, features)
    return with_rest(tree_structure(w, names, root), pairs)
