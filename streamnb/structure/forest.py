"""A forest over features (:class:`Structure`) and how one is taken from edge weights: the
maximum spanning tree (:func:`tree_structure`), the maximum spanning forest of the edges of
positive weight (:func:`forest_structure`), and TAN's forest over categorical and numeric
features (:func:`mixed_forest`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from streamnb.structure.spanning_tree import (
    extend_forest,
    maximum_spanning_forest,
    maximum_spanning_tree,
    orient,
    orient_forest,
)

__all__ = ["Structure", "tree_structure", "forest_structure", "mixed_forest"]


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
