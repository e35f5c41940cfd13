"""The structures of a tree-augmented part as the tables inference reads
(:mod:`streamnb.bn.tree_inference`): each feature's parent id, per class, and each feature's
children."""

from __future__ import annotations

from typing import Any

import numpy as np

from streamnb.stats import Index
from streamnb.structure import Structure

__all__ = ["parent_matrix", "parents_and_children"]


def parent_matrix(structures: dict[Any, Structure], classes: Index, features: Index) -> np.ndarray:
    """``[classes, features]`` parent feature id (-1: the class only) of ``structures``: ``{None:
    structure}`` shared by every class, or ``{class: structure}``."""
    n_c, n_f = len(classes), len(features)
    out = np.full((n_c, n_f), -1, dtype=np.intp)
    for key, s in structures.items():
        rows = slice(None) if key is None else classes.get(key)
        if isinstance(rows, int) and rows < 0:
            continue
        for child, parent in s.parents.items():
            c, p = features.get(child), features.get(parent) if parent is not None else -1
            if c >= 0:
                out[rows, c] = p
    return out


def parents_and_children(pm: np.ndarray, n_features: int) -> tuple[bool, list, list]:
    """``(shared, parents, children)`` of the parent matrix ``pm``: per class (one entry if
    shared by all classes), each feature's parent id and children ids, as lists."""
    shared = not len(pm) or bool((pm == pm[0]).all())
    parents = [pm[0].tolist()] if shared else pm.tolist()
    if not len(pm):
        parents = [[-1] * n_features]
    children = []
    for pa in parents:
        ch: list[list[int]] = [[] for _ in pa]
        for c, p in enumerate(pa):
            if p >= 0:
                ch[p].append(c)
        children.append(ch)
    return shared, parents, children
