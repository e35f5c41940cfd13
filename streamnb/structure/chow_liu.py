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
from dataclasses import dataclass, field

import numpy as np

from streamnb.stats.pairwise import PairCounts
from streamnb.structure.information import (
    class_mutual_information_diag,
    conditional_mutual_information,
    mutual_information,
)
from streamnb.structure.spanning_tree import maximum_spanning_tree, orient

__all__ = [
    "Structure", "chow_liu", "tan", "class_chow_liu", "tree_structure", "top_features", "counted", "counted_cells",
    "canonical",
]


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


def counted_cells(pairs: PairCounts, k: int | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """What :func:`counted` keeps, without copying the table: ``(cell ids, cell_feature,
    names)``, from the diagonal only (``O(C K)``)."""
    cf = pairs.cell_features()
    n = pairs.raw("n")
    K = len(cf)
    C = len(pairs.classes.keys)
    rows = slice(0, C) if k is None else slice(k, k + 1)
    live = np.diagonal(n[rows, :K, :K], axis1=1, axis2=2).sum(axis=0) > 0
    used = np.unique(cf[live])
    used = np.array(sorted(used.tolist(), key=lambda i: canonical(pairs.features.keys[i])), dtype=np.intp)
    rank = np.full(len(pairs.features), -1, dtype=np.intp)
    rank[used] = np.arange(len(used))
    names = [pairs.features.keys[i] for i in used]
    # cells in canonical order too: the sums, hence the weights, are then bit-identical
    # whatever order the features and values arrived in
    cells = pairs.cells.keys
    keep = sorted(np.flatnonzero(live).tolist(), key=lambda c: (rank[cf[c]], canonical(cells[c][1])))
    keep_ids = np.array(keep, dtype=np.intp)
    return keep_ids, rank[cf[keep_ids]], names


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


def _restricted(weights: np.ndarray, names: list, features: Sequence | None) -> tuple[np.ndarray, list]:
    if features is None:
        return weights, names
    pos = {f: i for i, f in enumerate(names)}
    idx = [pos[f] for f in features if f in pos]
    return weights[np.ix_(idx, idx)], [names[i] for i in idx]


def _with_rest(s: Structure, pairs: PairCounts) -> Structure:
    """Add the features left out of the tree as roots (naive: the class is their only parent)."""
    parents = {f: s.parents.get(f) for f in sorted(pairs.features.keys, key=canonical)}
    return Structure(parents, s.weights, s.class_parent)


def chow_liu(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None
) -> Structure:
    """Chow-Liu tree: maximum spanning tree of ``I(Xi; Xj)`` (classes summed out)."""
    n, cf, names = counted(pairs)
    w, names = _restricted(mutual_information(n, cf, alpha), names, features)
    return _with_rest(tree_structure(w, names, root), pairs)


def tan(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None
) -> Structure:
    """TAN: maximum spanning tree of ``I(Xi; Xj | Y)``; the class is a parent of every feature.

    ``features`` restricts the tree (e.g. to :func:`top_features`); the others get no feature
    parent.
    """
    n, cf, names = counted(pairs)
    w, names = _restricted(conditional_mutual_information(n, cf, alpha), names, features)
    return _with_rest(tree_structure(w, names, root, class_parent=True), pairs)


def class_chow_liu(
    pairs: PairCounts, y: Hashable, root: Hashable | None = None, alpha: float = 0.0,
    features: Sequence | None = None,
) -> Structure:
    """Chow-Liu tree of the events of class ``y`` only (from ``n[y]``)."""
    k = pairs.classes.get(y)
    if k < 0:
        raise KeyError(y)
    n, cf, names = counted(pairs, k)
    w, names = _restricted(mutual_information(n, cf, alpha), names, features)
    return _with_rest(tree_structure(w, names, root), pairs)
