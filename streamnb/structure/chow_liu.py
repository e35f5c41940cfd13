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

import functools
import math
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.stats

from streamnb.stats.pairwise import PairCounts
from streamnb.structure.information import (
    class_mutual_information_diag,
    conditional_mutual_information,
    mutual_information,
)
from streamnb.structure.spanning_tree import (
    extend_forest,
    maximum_spanning_forest,
    maximum_spanning_tree,
    orient,
    orient_forest,
)

__all__ = [
    "Structure", "chow_liu", "tan", "class_chow_liu", "tree_structure", "forest_structure", "top_features",
    "counted", "counted_cells", "canonical", "canonical_cells", "bic_penalty", "class_edge_params", "edge_price", "edge_prices", "favour_incumbents", "hold", "with_rest", "mixed_forest",
]

#: Edge penalties a learner accepts (see :func:`edge_price`); None: a spanning tree.
EDGE_PENALTIES = ("bic", "chi2", None)

#: Level of the ``"chi2"`` edge test: an edge between independent features enters with about
#: this probability.
CHI2_LEVEL = 1e-3

#: Level at which an edge already in the structure must still pass the ``"chi2"`` test to stay
#: (a weak true edge near the detection limit does not flap in and out).
STAY_LEVEL = 0.05


@dataclass(frozen=True)
class Structure:
    """A forest over features: each feature's parent feature (None at a root) and edge weights.

    ``class_parent`` says whether the class is also a parent of every feature (TAN), which
    :attr:`edges` leaves out.

    >>> s = Structure({"a": None, "b": "a", "c": "a"}, {("a", "b"): 0.5, ("a", "c"): 0.1}, True)
    >>> s.edges, s.roots
    ([('a', 'b'), ('a', 'c')], ['a'])
    >>> s.diff(Structure({"a": None, "b": "a", "c": "b"}, {}))
    ([('b', 'c')], [('a', 'c')])
    """

    parents: dict
    weights: dict = field(default_factory=dict)
    class_parent: bool = False

    @property
    def edges(self) -> list[tuple[Hashable, Hashable]]:
        """``(parent, child)`` feature pairs, children in feature order (class edges excluded)."""
        return [(p, c) for c, p in self.parents.items() if p is not None]

    @property
    def roots(self) -> list:
        return [c for c, p in self.parents.items() if p is None]

    def skeleton(self) -> set[frozenset]:
        """The undirected edges."""
        return {frozenset(e) for e in self.edges}

    def diff(self, other: Structure) -> tuple[list, list]:
        """Directed edges of ``other`` not in this structure, and edges of this one not in ``other``."""
        mine, theirs = set(self.edges), set(other.edges)
        return [e for e in other.edges if e not in mine], [e for e in self.edges if e not in theirs]

    def to_dot(self, class_name: str = "class") -> str:
        """Graphviz text of the network (with the class node when ``class_parent``)."""
        lines = ["digraph {"]
        if self.class_parent:
            lines.append(f'  "{class_name}" [shape=doublecircle];')
            lines += [f'  "{class_name}" -> "{c}";' for c in self.parents]
        for p, c in self.edges:
            w = self.weights.get((p, c))
            label = "" if w is None else f' [label="{w:.4g}"]'
            lines.append(f'  "{p}" -> "{c}"{label};')
        lines.append("}")
        return "\n".join(lines)


def tree_structure(
    weights: np.ndarray, names: Sequence[Hashable], root: Hashable | None = None, class_parent: bool = False
) -> Structure:
    """Maximum spanning tree of ``weights`` over ``names``, directed away from ``root``.

    >>> w = np.array([[0, .2, .9], [.2, 0, .5], [.9, .5, 0]])
    >>> tree_structure(w, ["x", "y", "z"], root="y").edges
    [('z', 'x'), ('y', 'z')]
    """
    names = list(names)
    if not names:
        return Structure({}, {}, class_parent)
    r = 0 if root is None else names.index(root)
    edges = maximum_spanning_tree(weights, start=r)
    parent = orient(edges, r, len(names))
    parents = {n: (names[p] if p >= 0 else None) for n, p in zip(names, parent)}
    w = {(names[p], names[c]): float(weights[p, c]) for c, p in enumerate(parent) if p >= 0}
    return Structure(parents, w, class_parent)


def forest_structure(weights: np.ndarray, names: Sequence[Hashable], class_parent: bool = False) -> Structure:
    """Maximum spanning *forest* of ``weights`` over ``names``: only edges of positive weight
    enter (Kruskal, :func:`~streamnb.structure.spanning_tree.maximum_spanning_forest`), each
    tree directed away from its first feature in ``names`` order.

    >>> w = np.array([[0, .2, -.1], [.2, 0, -.3], [-.1, -.3, 0]])
    >>> s = forest_structure(w, ["x", "y", "z"])
    >>> s.edges, s.roots
    ([('x', 'y')], ['x', 'z'])
    """
    names = list(names)
    parent = orient_forest(maximum_spanning_forest(weights), len(names))
    parents = {n: (names[p] if p >= 0 else None) for n, p in zip(names, parent)}
    w = {(names[p], names[c]): float(weights[p, c]) for c, p in enumerate(parent) if p >= 0}
    return Structure(parents, w, class_parent)


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


def favour_incumbents(weights: np.ndarray, prices: np.ndarray, names: Sequence[Hashable],
                      current: Structure) -> np.ndarray:
    """``weights`` (less the price to enter, ``[F, F]`` over ``names``) where the edges of the
    ``current`` structure pay only the price to stay (``prices``, from :func:`edge_prices`)."""
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


def hold(old: Structure, new: Structure, weights: np.ndarray, names: Sequence[Hashable], margin: float,
         raw: np.ndarray | None = None) -> Structure:
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

    When ``old`` stays, its edge weights are refreshed. ``new`` is taken as is when ``old`` is
    empty, no longer a forest over ``names``, or ``margin`` is 0.

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
    stakes = sum(abs(float(full[e])) for e in added | removed if np.isfinite(full[e]))
    if gain > margin * stakes or not np.isfinite(gain):
        return new
    parents = {f: old.parents.get(f) for f in new.parents}
    return Structure(parents, {(p, c): float(weights[pos[p], pos[c]]) for p, c in edges}, new.class_parent)


#: Per pair table: the cells in canonical order (features by :func:`canonical`, then values),
#: kept while no cell is added (so a relearn does not sort every cell again).
_CANONICAL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def canonical_cells(pairs: PairCounts) -> tuple[np.ndarray, np.ndarray]:
    """``(cell ids in canonical order, canonical rank of each feature id)``."""
    cells = pairs.cells.keys
    cached = _CANONICAL.get(pairs)
    if cached is not None and cached[0] == (len(cells), pairs.cells.epoch):
        return cached[1], cached[2]
    cf = pairs.cell_features()
    feats = pairs.features.keys
    order = sorted(range(len(feats)), key=lambda i: canonical(feats[i]))
    rank = np.empty(len(feats), dtype=np.intp)
    rank[order] = np.arange(len(feats))
    ids = np.array(sorted(range(len(cells)), key=lambda c: (rank[cf[c]], canonical(cells[c][1]))), dtype=np.intp)
    _CANONICAL[pairs] = ((len(cells), pairs.cells.epoch), ids, rank)
    return ids, rank


def counted_cells(pairs: PairCounts, k: int | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """What :func:`counted` keeps, without copying the table: ``(cell ids, cell_feature,
    names)``, from the diagonal only (``O(C K)``; the canonical order of the cells is sorted
    once per new cell, not per call)."""
    cf = pairs.cell_features()
    n = pairs.raw("n")
    K = len(cf)
    C = len(pairs.classes.keys)
    rows = slice(0, C) if k is None else slice(k, k + 1)
    live = np.diagonal(n[rows, :K, :K], axis1=1, axis2=2).sum(axis=0) > 0
    order, rank = canonical_cells(pairs)
    # cells in canonical order: the sums, hence the weights, are then bit-identical whatever
    # order the features and values arrived in
    keep_ids = order[live[order]]
    used = np.zeros(len(rank), dtype=bool)
    used[cf[keep_ids]] = True
    feats = np.flatnonzero(used)
    feats = feats[np.argsort(rank[feats], kind="stable")]
    dense = np.full(len(rank), -1, dtype=np.intp)
    dense[feats] = np.arange(len(feats))
    names = [pairs.features.keys[i] for i in feats.tolist()]
    return keep_ids, dense[cf[keep_ids]], names


def counted(pairs: PairCounts, k: int | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """The counts restricted to cells counted at least once: ``(n, cell_feature, names)``.

    Cells registered but never counted (weight 0 so far) are dropped, and features left
    without a cell, so a structure depends on the counts alone; features are numbered in
    :func:`canonical` order (so the default root and the ties do not depend on the order the
    features arrived in), and the cells grouped by feature in that order. ``k`` keeps one class.
    """
    keep, cf, names = counted_cells(pairs, k)
    classes = np.arange(len(pairs.classes.keys)) if k is None else np.array([k])
    return pairs.raw("n")[np.ix_(classes, keep, keep)], cf, names


def canonical(feature: Hashable) -> tuple[str, str]:
    """Sort key of feature names: structures do not depend on the order features arrive in.

    >>> sorted(["b", 2, "a", 10], key=canonical)
    [10, 2, 'a', 'b']
    """
    return (type(feature).__name__, repr(feature))


def top_features(pairs: PairCounts, k: int | None) -> list:
    """The ``k`` counted features of highest ``I(X; Y)`` (ties: canonical order), in canonical order."""
    keep, cf, names = counted_cells(pairs)
    if k is None or k >= len(names):
        return names
    diag = np.diagonal(pairs.raw("n"), axis1=1, axis2=2)[: len(pairs.classes.keys)][:, keep]
    mi = class_mutual_information_diag(diag, cf)
    keep = np.sort(np.argsort(-mi, kind="stable")[:k])
    return [names[i] for i in keep]


def _restricted(weights: np.ndarray, names: list, features: Sequence | None, *more: np.ndarray) -> tuple:
    """``weights`` (and ``more`` matrices like it) and ``names`` cut to ``features``."""
    if features is None:
        return (weights, names, *more)
    pos = {f: i for i, f in enumerate(names)}
    idx = np.array([pos[f] for f in features if f in pos], dtype=np.intp)
    ix = np.ix_(idx, idx)
    return (weights[ix], [names[i] for i in idx], *(m[ix] for m in more))


def with_rest(s: Structure, pairs: PairCounts) -> Structure:
    """Add the features left out of the tree as roots (naive: the class is their only parent)."""
    a, b = tuple(pairs.features.keys), tuple(s.parents)
    if set(map(type, a)) | set(map(type, b)) <= {str}:  # equal strings are the same name
        order: Sequence = _canonical_union(a, b)
    else:
        order = sorted(set(a) | set(b), key=canonical)
    parents = {f: s.parents.get(f) for f in order}
    return Structure(parents, s.weights, s.class_parent)


@functools.lru_cache(maxsize=64)
def _canonical_union(a: tuple, b: tuple) -> tuple:
    """The names (strings) in ``a`` or ``b``, in canonical order (the same lists at every relearn)."""
    return tuple(sorted(set(a) | set(b), key=canonical))


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
def mixed_forest(weights: np.ndarray, names: Sequence[Hashable], categorical: Sequence[bool],
                 spanning: bool = False) -> Structure:
    """One forest over categorical and numeric features in which no categorical feature has a
    numeric parent (TAN's structure; weights less their price, ``[F, F]`` over ``names``).

    First the categorical features: their maximum spanning forest over the edges of positive
    weight (``spanning``: their maximum spanning tree, Prim, as :func:`tree_structure`). Then
    the numeric features join by the heaviest remaining edges (numeric-numeric or
    categorical-numeric, Kruskal), refusing any edge that would join two trees that both hold
    categorical features (:func:`~streamnb.structure.spanning_tree.extend_forest`). Each tree
    is directed away from its first categorical feature in ``names`` order (or its first
    feature if it has none): the categorical features of a tree are connected through
    categorical edges only, so every categorical feature's parent is categorical, and numeric
    features hang below. A greedy choice under that constraint, exact when no
    categorical-numeric edge competes with a categorical one.

    >>> w = np.array([[0, .5, .4, 0], [.5, 0, 0, .3], [.4, 0, 0, .9], [0, .3, .9, 0]])
    >>> mixed_forest(w, ["a", "b", "x", "z"], [True, True, False, False]).edges
    [('a', 'b'), ('a', 'x'), ('x', 'z')]
    """
    names = list(names)
    w = np.asarray(weights, dtype=float)
    cat = np.asarray(categorical, dtype=bool)
    ci = np.flatnonzero(cat)
    if not len(ci):
        fixed: list = []
    elif spanning:
        fixed = [(int(ci[a]), int(ci[b])) for a, b in maximum_spanning_tree(w[np.ix_(ci, ci)])]
    else:
        fixed = extend_forest(np.where(cat[:, None] & cat[None, :], w, -np.inf), [], None)
    edges = extend_forest(w, fixed, cat, positive=not spanning)
    first = ci.tolist() + np.flatnonzero(~cat).tolist()
    parent = orient_forest(edges, len(names), first).tolist()
    parents = {f: (names[p] if p >= 0 else None) for f, p in zip(names, parent)}
    kids = [c for c, p in enumerate(parent) if p >= 0]
    ups = [parent[c] for c in kids]
    weight = w[ups, kids].tolist() if kids else []
    return Structure(parents, {(names[p], names[c]): v for p, c, v in zip(ups, kids, weight)}, True)
