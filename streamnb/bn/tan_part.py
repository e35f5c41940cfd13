"""The categorical part of :class:`~streamnb.TANClassifier`: the categorical features' pair
counts, their edge weights and their forest.

:class:`TANPart` is a :class:`~streamnb.bn.tree_part.TreePart` that weighs every pair of its
features by ``I(X_i; X_j | Y)`` (:meth:`TANPart.pair_weights`, kept current between recomputes
with the plug-in estimate). The learner combines these weights with those of the numeric part
and of the numeric features given categorical ones
(:mod:`streamnb.bn.numeric_children`), learns one forest over every feature, keeps it and
hands it down (:mod:`streamnb.bn.tree_structure`).
"""

from __future__ import annotations

import numpy as np

from streamnb.bn.cmi_sums import CMISums
from streamnb.bn.tree_part import MAX_CELLS, TreePart
from streamnb.stats import Counts, Index
from streamnb.structure.chow_liu import tan_scored
from streamnb.structure.counted import top_features
from streamnb.structure.forest import Structure

__all__ = ["TANPart"]


class TANPart(TreePart):
    """The categorical features of TAN: their pair counts, edge weights and CPTs."""

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, max_tree_features: int | None,
                 cmi_alpha: float, max_cells: int = MAX_CELLS, edge_penalty: str | None = None,
                 prior: float = 0.0) -> None:
        super().__init__(classes, class_counts, alpha, max_cells, prior)
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        self.edge_penalty = edge_penalty
        if cmi_alpha == 0:  # plug-in weights: kept current between relearns
            self.sums = CMISums(self.pairs, self.margins)

    # -- structure -------------------------------------------------------------------------
    def pair_weights(self, build: bool) -> tuple[Structure | None, np.ndarray, list, np.ndarray]:
        """``(forest, weights, names, prices)`` of the categorical features in the tree (the
        ``max_tree_features`` most informative, canonical order): their forest if ``build``
        (else None), their ``[F, F]`` edge weights less their price, and the prices
        (:func:`~streamnb.structure.chow_liu.tan_scored`); an empty forest before any cell."""
        if not self.pairs.cells.keys:
            return Structure({}, {}, True), np.zeros((0, 0)), [], np.zeros((2, 0, 0))
        feats = top_features(self.pairs, self.max_tree_features)
        kept = self.sums.weights() if self.sums is not None else None
        return tan_scored(self.pairs, alpha=self.cmi_alpha, features=feats, penalty=self.edge_penalty,
                          weights=kept, build=build)
