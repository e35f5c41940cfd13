"""Per-class Chow-Liu trees (a Bayesian multinet), learned on the stream."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from streamnb.bn.base import LearnedTreesNB
from streamnb.bn.tan_part import TANPart
from streamnb.naive_bayes.base import Part
from streamnb.structure import Structure, class_chow_liu, top_features

__all__ = ["ChowLiuClassifier", "ClassTreesPart"]


class ClassTreesPart(TANPart):
    """The pair counts of TAN, one Chow-Liu tree per class (numeric features stay Gaussian leaves)."""

    def learn_structures(self, current: dict, on_log: frozenset = frozenset()) -> dict:
        feats = top_features(self.pairs, self.max_tree_features)
        out = {}
        n = self.pairs.raw("n")
        for k, y in enumerate(self.classes.keys):
            if self.class_counts.n[k] > 0 and np.diagonal(n[k]).any():
                kept = self.sums.class_weights(k) if self.sums is not None else None
                out[y] = class_chow_liu(self.pairs, y, alpha=self.cmi_alpha, features=feats, weights=kept)
        return out


class ChowLiuClassifier(LearnedTreesNB):
    """One Chow-Liu tree per class: ``P(x | y)`` is a tree over the features, its own for each y.

    The tree of class ``y`` is the maximum spanning tree of ``I(Xi; Xj)`` over the events of
    class ``y`` (a Bayesian multinet; Friedman et al. 1997, section 5). It uses the same pair
    counts as :class:`~streamnb.TANClassifier`, sliced by class: no other statistic. Parameters,
    smoothing (``smoothing``), relearning and missing values are as in TAN (a spanning tree: no edge price, no
    swap margin); numeric features are Gaussian leaves given the class.

    Examples
    --------
    ``b`` copies ``a`` in class True and negates it in class False:

    >>> model = ChowLiuClassifier(relearn_every=40, kinds={"a": "categorical", "b": "categorical"})
    >>> for i in range(80):
    ...     a = i % 2
    ...     model.learn_one({"a": a, "b": a if i % 4 < 2 else 1 - a}, i % 4 < 2)
    >>> model.structure(True).edges, model.structure(False).edges
    ([('a', 'b')], [('a', 'b')])
    >>> model.predict_one({"a": 1, "b": 1}), model.predict_one({"a": 1, "b": 0})
    (True, False)
    """

    def _make_structured_part(self) -> Part:
        return ClassTreesPart(self._classes, self._class_counts, self.alpha, self.max_tree_features, self.cmi_alpha, self.max_cells, prior=self._prior)

    def structure(self, y: Hashable) -> Structure:
        """The current tree of class ``y``."""
        return self._structure.trees.get(y, Structure({}))

    def structures(self) -> dict:
        """``{class: Structure}``."""
        return dict(self._structure.trees)

    def to_dot(self, class_name: str = "class") -> str:
        """One Graphviz digraph per class, concatenated."""
        return "\n".join(
            s.to_dot().replace("digraph {", f'digraph "{class_name}={y}" {{', 1)
            for y, s in self._structure.trees.items()
        )
