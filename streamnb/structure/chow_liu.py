"""Chow-Liu trees and TAN structures from pair counts, as immutable :class:`Structure` values.

``chow_liu`` weighs every feature pair by ``I(Xi; Xj)``, ``tan`` by ``I(Xi; Xj | Y)``; both take
the maximum spanning tree (:func:`~streamnb.structure.spanning_tree.maximum_spanning_tree`,
deterministic ties) and direct it away from ``root`` (default: the first feature in the order
the features were first seen). Nothing here holds state: the same counts give the same tree.

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
    class_mutual_information,
    conditional_mutual_information,
    mutual_information,
)
from streamnb.structure.spanning_tree import maximum_spanning_tree, orient

__all__ = ["Structure", "chow_liu", "tan", "class_chow_liu", "tree_structure", "top_features"]


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


def top_features(pairs: PairCounts, k: int | None) -> list:
    """The ``k`` features of highest ``I(X; Y)`` (ties: first seen first), in first-seen order."""
    names = list(pairs.features.keys)
    if k is None or k >= len(names):
        return names
    mi = class_mutual_information(pairs.n, pairs.cell_features())
    keep = np.sort(np.argsort(-mi, kind="stable")[:k])
    return [names[i] for i in keep]


def _restricted(pairs: PairCounts, weights: np.ndarray, features: Sequence | None) -> tuple[np.ndarray, list]:
    names = list(pairs.features.keys)
    if features is None:
        return weights, names
    idx = [pairs.features.get(f) for f in features if f in pairs.features]
    return weights[np.ix_(idx, idx)], [names[i] for i in idx]


def _with_rest(s: Structure, pairs: PairCounts) -> Structure:
    """Add the features left out of the tree as roots (naive: the class is their only parent)."""
    parents = {f: s.parents.get(f) for f in pairs.features.keys}
    return Structure(parents, s.weights, s.class_parent)


def chow_liu(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None
) -> Structure:
    """Chow-Liu tree: maximum spanning tree of ``I(Xi; Xj)`` (classes summed out)."""
    mi = mutual_information(pairs.n, pairs.cell_features(), alpha)
    w, names = _restricted(pairs, mi, features)
    return _with_rest(tree_structure(w, names, root), pairs)


def tan(
    pairs: PairCounts, root: Hashable | None = None, alpha: float = 0.0, features: Sequence | None = None
) -> Structure:
    """TAN: maximum spanning tree of ``I(Xi; Xj | Y)``; the class is a parent of every feature.

    ``features`` restricts the tree (e.g. to :func:`top_features`); the others get no feature
    parent.
    """
    cmi = conditional_mutual_information(pairs.n, pairs.cell_features(), alpha)
    w, names = _restricted(pairs, cmi, features)
    return _with_rest(tree_structure(w, names, root, class_parent=True), pairs)


def class_chow_liu(
    pairs: PairCounts, y: Hashable, root: Hashable | None = None, alpha: float = 0.0,
    features: Sequence | None = None,
) -> Structure:
    """Chow-Liu tree of the events of class ``y`` only (from ``n[y]``)."""
    k = pairs.classes.get(y)
    if k < 0:
        raise KeyError(y)
    mi = mutual_information(pairs.n[k : k + 1], pairs.cell_features(), alpha)
    w, names = _restricted(pairs, mi, features)
    return _with_rest(tree_structure(w, names, root), pairs)
