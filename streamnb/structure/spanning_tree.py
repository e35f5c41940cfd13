"""Maximum spanning tree (Prim) with deterministic ties, and orienting a tree from a root.

Pure functions over a symmetric weight matrix; vertices are ``0..F-1``.

Tie-breaking: Prim grows the tree from ``start``; at each step the heaviest edge from the
tree to a new vertex wins; among equal weights the new vertex with the smaller index wins,
and for that vertex the tree vertex that joined the tree first keeps it (an edge is only
replaced by a strictly heavier one). Kruskal takes the heaviest edges first, equal weights in
the order of their pairs. Weights within :data:`TIE` (relative) of each other are equal: the
same weight reached by two computations (one event at a time or in a batch of numpy arrays)
differs in its last bits, and a tie such as two features carrying the same information must
not be decided by that noise. The result therefore depends only on the weights (to
:data:`TIE`) and ``start``, never on hash order or floating-point noise.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence

import numpy as np

__all__ = ["TIE", "maximum_spanning_tree", "maximum_spanning_forest", "extend_forest", "orient", "orient_forest"]

#: Relative difference below which two edge weights are a tie (absolute below 1 nat): far
#: above the rounding of the weights (~1e-13), far below any difference that matters.
TIE = 1e-10


def _slack(v: np.ndarray | float) -> np.ndarray:
    return TIE * np.maximum(1.0, np.abs(v))


def maximum_spanning_tree(weights: np.ndarray, start: int = 0) -> list[tuple[int, int]]:
    """Edges ``(u, v)`` of a maximum spanning tree, ``u`` already in the tree when ``v`` joined.

    The edges come in the order Prim adds them, so they are already oriented away from
    ``start``. Non-finite weights (NaN, -inf) are treated as the lightest possible edges.

    >>> w = np.array([[0, 3, 1], [3, 0, 2], [1, 2, 0]], dtype=float)
    >>> maximum_spanning_tree(w)
    [(0, 1), (1, 2)]
    >>> maximum_spanning_tree(np.ones((3, 3)), start=2)     # ties: smaller new vertex first
    [(2, 0), (2, 1)]
    >>> maximum_spanning_tree(np.array([[0, 1, 1 + 1e-15], [1, 0, 0], [1 + 1e-15, 0, 0]]))  # noise: a tie
    [(0, 1), (0, 2)]
    """
    w = np.array(weights, dtype=float)
    f = w.shape[0]
    if w.shape != (f, f):
        raise ValueError(f"weights must be square, got shape {w.shape}")
    if f == 0:
        return []
    if not 0 <= start < f:
        raise ValueError(f"start {start} is not a vertex of a {f}-vertex graph")
    w[~np.isfinite(w)] = -np.inf
    in_tree = np.zeros(f, dtype=bool)
    best = np.full(f, -np.inf)
    best_from = np.full(f, start, dtype=np.intp)
    edges: list[tuple[int, int]] = []
    u = start
    for _ in range(f - 1):
        in_tree[u] = True
        with np.errstate(invalid="ignore"):  # -inf - -inf
            better = np.where(np.isneginf(best), w[u] > best, w[u] - best > _slack(best)) & ~in_tree
        best[better] = w[u][better]
        best_from[better] = u
        cand = np.where(in_tree, np.nan, best)
        # first maximum (to TIE) = smallest index; vertices only reachable by -inf still get picked
        top = np.nanmax(cand)
        v = int(np.flatnonzero(cand >= top - _slack(top))[0]) if np.isfinite(top) else int(
            np.flatnonzero(cand == top)[0])
        edges.append((int(best_from[v]), v))
        u = v
    return edges


@functools.lru_cache(maxsize=32)
def _upper_pairs(f: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(f, 1)`` (read-only, kept per size)."""
    iu, ju = np.triu_indices(f, 1)
    iu.flags.writeable = ju.flags.writeable = False
    return iu, ju


def _sorted_edges(w: np.ndarray, positive: bool) -> list[tuple[int, int]]:
    """Pairs ``(u, v)``, ``u < v``, heaviest first (ties: the pair that sorts first), of finite
    weight (and above 0 if ``positive``)."""
    iu, ju = _upper_pairs(w.shape[0])
    vals = w[iu, ju]
    good = np.isfinite(vals)
    if positive:
        good &= vals > 0
    iu, ju, vals = iu[good], ju[good], vals[good]
    # the pairs come in sorted order: a stable sort on the weight alone is the sort on
    # (weight, u, v)
    order = np.argsort(-vals, kind="stable")
    if len(order) > 1:  # runs of weights equal to TIE: in the order of their pairs
        v = vals[order]
        apart = v[:-1] - v[1:] > _slack(v[:-1])
        if not apart.all():
            run = np.concatenate([[0], np.cumsum(apart)])
            order = order[np.lexsort((order, run))]
    return list(zip(iu[order].tolist(), ju[order].tolist()))


def maximum_spanning_forest(weights: np.ndarray) -> list[tuple[int, int]]:
    """Undirected edges ``(u, v)``, ``u < v``, of a maximum spanning forest over the edges of
    positive weight (Kruskal): an edge whose weight is not above 0 never enters, so weakly
    linked vertices stay apart. Ties: the pair ``(u, v)`` that sorts first wins.

    >>> w = np.array([[0, 3, -1], [3, 0, 0], [-1, 0, 0]], dtype=float)
    >>> maximum_spanning_forest(w)
    [(0, 1)]
    """
    w = np.asarray(weights, dtype=float)
    if w.shape != (w.shape[0], w.shape[0]):
        raise ValueError(f"weights must be square, got shape {w.shape}")
    return extend_forest(w, [], None)


def extend_forest(weights: np.ndarray, fixed: list[tuple[int, int]], categorical: np.ndarray | None,
                  positive: bool = True) -> list[tuple[int, int]]:
    """``fixed`` (a forest) extended with the heaviest edges that keep it a forest (Kruskal).

    With ``categorical`` (a boolean per vertex), an edge is refused if it would join two
    trees that both hold a categorical vertex: the categorical vertices of a tree then stay
    connected through ``fixed``'s edges alone (pass the categorical forest as ``fixed``),
    so a tree directed away from one of them never gives a categorical vertex a numeric parent.

    >>> w = np.array([[0, 0, 5, 5], [0, 0, 0, 4], [5, 0, 0, 0], [5, 4, 0, 0]], dtype=float)
    >>> extend_forest(w, [], np.array([True, True, False, False]))   # 1-3 would join 0's tree
    [(0, 2), (0, 3)]
    """
    w = np.asarray(weights, dtype=float)
    f = w.shape[0]
    root = list(range(f))
    has_cat = [bool(c) for c in np.asarray(categorical).tolist()] if categorical is not None else [False] * f

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    def join(u: int, v: int) -> None:
        ru, rv = find(u), find(v)
        keep, gone = min(ru, rv), max(ru, rv)
        root[gone] = keep
        has_cat[keep] = has_cat[keep] or has_cat[gone]

    edges = []
    for u, v in fixed:
        join(u, v)
        edges.append((min(u, v), max(u, v)))
    n_edges = len(edges)
    for u, v in _sorted_edges(w, positive):
        if n_edges == f - 1:
            break
        ru = u  # find(u), find(v) inline: the loop over the edges is the cost here
        while root[ru] != ru:
            root[ru] = root[root[ru]]
            ru = root[ru]
        rv = v
        while root[rv] != rv:
            root[rv] = root[root[rv]]
            rv = root[rv]
        if ru == rv or (has_cat[ru] and has_cat[rv]):
            continue
        keep, gone = (ru, rv) if ru < rv else (rv, ru)  # join(u, v)
        root[gone] = keep
        has_cat[keep] = has_cat[keep] or has_cat[gone]
        edges.append((u, v))
        n_edges += 1
    return edges


def orient_forest(edges: Sequence[tuple[int, int]], n_vertices: int, first: Sequence[int] | None = None) -> np.ndarray:
    """Parent of each vertex, every tree of the forest directed away from its first vertex in
    ``first`` order (default: the smallest).

    >>> orient_forest([(1, 2), (0, 3)], 4).tolist()
    [-1, -1, 1, 0]
    >>> orient_forest([(1, 2), (0, 3)], 4, first=[2, 3, 0, 1]).tolist()
    [3, 2, -1, -1]
    """
    adj: list[list[int]] = [[] for _ in range(n_vertices)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    for near in adj:
        near.sort()
    parent = [-1] * n_vertices
    seen = [False] * n_vertices
    for r in (range(n_vertices) if first is None else first):
        if seen[r]:
            continue
        # orient(edges, r): breadth first from r, neighbours in order (a tree of the forest is
        # reached whole from any of its vertices, and no other)
        seen[r] = True
        queue = deque([r])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if not seen[v]:
                    seen[v] = True
                    parent[v] = u
                    queue.append(v)
    return np.array(parent, dtype=np.intp)


def orient(tree: Sequence[tuple[int, int]], root: int, n_vertices: int | None = None) -> np.ndarray:
    """Parent of each vertex when the undirected ``tree`` is directed away from ``root``.

    Returns an integer array, -1 for the root (and for vertices not connected to it).

    >>> orient([(0, 1), (1, 2)], root=2).tolist()
    [1, 2, -1]
    """
    n = n_vertices if n_vertices is not None else 1 + max([root, *[max(e) for e in tree]])
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in tree:
        adj[a].append(b)
        adj[b].append(a)
    parent = np.full(n, -1, dtype=np.intp)
    seen = np.zeros(n, dtype=bool)
    seen[root] = True
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for v in sorted(adj[u]):
            if not seen[v]:
                seen[v] = True
                parent[v] = u
                queue.append(v)
    return parent
