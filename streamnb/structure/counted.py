"""The pair counts a structure is learned from, in canonical order: the cells counted at least
once (:func:`counted`), the features sorted by :func:`canonical` (so a structure does not
depend on the order features and values arrive in), the features of highest ``I(X; Y)``
(:func:`top_features`), and the features left out of a tree added back as roots
(:func:`with_rest`)."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Hashable, Sequence

import numpy as np

from streamnb.stats.pairwise import PairCounts
from streamnb.structure.forest import Structure
from streamnb.structure.information import class_mutual_information_diag

__all__ = ["canonical", "canonical_cells", "counted", "counted_cells", "top_features", "with_rest"]


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
