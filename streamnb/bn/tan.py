"""Tree-augmented naive Bayes (TAN) and per-class Chow-Liu classifiers, learned on the stream."""

from __future__ import annotations

from collections.abc import Hashable

from streamnb.bn.base import PHISHING_KINDS, TreeAugmentedNB
from streamnb.bn.tree_part import MAX_CELLS, TreePart
from streamnb.naive_bayes.base import Part
from streamnb.stats import Counts, Index
from streamnb.structure import Structure, class_chow_liu, tan, top_features

__all__ = ["TANClassifier", "ChowLiuClassifier"]


class _TANPart(TreePart):
    def __init__(self, classes: Index, class_counts: Counts, alpha: float, relearn_every: int,
                 max_tree_features: int | None, cmi_alpha: float, max_cells: int = MAX_CELLS) -> None:
        super().__init__(classes, class_counts, alpha, relearn_every, max_cells)
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha

    def learn_structures(self) -> dict:
        feats = top_features(self.pairs, self.max_tree_features)
        return {None: tan(self.pairs, alpha=self.cmi_alpha, features=feats)}


class _ClassTreesPart(_TANPart):
    def learn_structures(self) -> dict:
        feats = top_features(self.pairs, self.max_tree_features)
        out = {}
        for k, y in enumerate(self.classes.keys):
            if self.class_counts.n[k] > 0 and len(self.pairs.n[k].nonzero()[0]):
                out[y] = class_chow_liu(self.pairs, y, alpha=self.cmi_alpha, features=feats)
        return out


class TANClassifier(TreeAugmentedNB):
    """Tree-augmented naive Bayes (Friedman, Geiger & Goldszmidt 1997), learned online.

    Every feature has the class as a parent; the categorical features also form a tree, the
    maximum spanning tree of the conditional mutual information ``I(Xi; Xj | Y)``. Both the
    tree weights and every ``P(x_j | x_parent, y)`` come from one table of pair counts
    (:class:`~streamnb.stats.pairwise.PairCounts`), so:

    - the tree is recomputed after every ``relearn_every`` events and on :meth:`relearn`;
    - between recomputes the current tree predicts with up-to-date counts;
    - a new tree predicts at once, with everything learned so far: nothing is replayed.

    CPTs are Lidstone-smoothed as in :class:`~streamnb.CategoricalNB` (same ``alpha``, same
    :func:`~streamnb.naive_bayes.categorical.lidstone`). Before the first recompute (and for
    features outside the tree) the model is categorical naive Bayes. Missing values and values
    never seen are marginalized exactly (never guessed); numeric features are class-conditional
    Gaussians outside the tree (see :mod:`streamnb.bn.base` for why).

    Parameters
    ----------
    alpha
        Lidstone smoothing of the CPTs (1: Laplace).
    relearn_every
        Recompute the tree after this many events (0: only on :meth:`relearn`).
    max_tree_features
        Wide inputs: only the ``k`` features of highest ``I(X; Y)`` enter the tree, the rest
        stay naive (class parent only). The pair counts still cover every feature (memory
        ``C * K**2`` floats for ``K`` values seen; see :mod:`streamnb.stats.pairwise`); the
        recompute costs ``O(C K**2 + k**2)``.
    max_cells
        Most ``(feature, value)`` cells ``K`` of the pair table (memory at most
        ``8 * C * K**2`` bytes, 8.4 MB per class at 1,024). Cells are taken first-come; once
        the table is full a value never seen is learned as missing for the tree (an id-like
        feature cannot exhaust memory; :attr:`n_discarded` sums their weight). A merge keeps
        the cap, as one learner on this stream then the other's would (see :meth:`merge`).
    cmi_alpha
        Pseudo-count of the CMI estimate (0: plug-in, as Friedman et al. and bnclassify).
    kinds, var_smoothing
        As in :class:`~streamnb.MixedNB`: ``{feature: "categorical" | "gaussian"}``
        overrides, and the Gaussian features' variance smoothing.

    Examples
    --------
    ``y`` is the parity of ``a`` and ``b``: naive Bayes cannot see it, TAN can. (Numbers are
    Gaussian by default, as in MixedNB: the binary features are strings here.)

    >>> model = TANClassifier(relearn_every=50)
    >>> for i in range(200):
    ...     a, b, c = i % 2, (i // 2) % 2, (i // 4) % 2
    ...     model.learn_one({"a": str(a), "b": str(b), "c": str(c)}, a ^ b)
    >>> model.structure().edges
    [('a', 'b'), ('a', 'c')]
    >>> p = model.predict_proba_one({"a": "1", "b": "0", "c": "0"})[1]   # Laplace: (50+1)/(50+2)
    >>> abs(p - 51 / 52) < 1e-12
    True
    >>> model.history[0]["event"], model.history[0]["added"]
    (50, [('a', 'b'), ('a', 'c')])
    """

    def __init__(
        self,
        alpha: float = 1.0,
        relearn_every: int = 100,
        max_tree_features: int | None = None,
        cmi_alpha: float = 0.0,
        kinds: dict | None = None,
        var_smoothing: float = 1e-9,
        max_cells: int = MAX_CELLS,
    ) -> None:
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        super().__init__(kinds=kinds, var_smoothing=var_smoothing, max_cells=max_cells)

    def _make_structured_part(self) -> Part:
        return _TANPart(self._classes, self._class_counts, self.alpha, self.relearn_every,
                        self.max_tree_features, self.cmi_alpha, self.max_cells)

    def structure(self) -> Structure:
        """The current tree: ``.edges`` (parent, child) feature pairs, ``.weights`` (CMI, nats)."""
        return self._part.structures.get(None, Structure({}, {}, True))

    def to_dot(self, class_name: str = "class") -> str:
        """The current network (class, features and tree) as Graphviz text."""
        s = self.structure()
        parents = {f: s.parents.get(f) for f in self._part.features.keys}
        return Structure(parents, s.weights, True).to_dot(class_name)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "relearn_every": 7, "max_tree_features": 3, "cmi_alpha": 0.1}
        yield {"relearn_every": 5, "kinds": PHISHING_KINDS}


class ChowLiuClassifier(TreeAugmentedNB):
    """One Chow-Liu tree per class: ``P(x | y)`` is a tree over the features, its own for each y.

    The tree of class ``y`` is the maximum spanning tree of ``I(Xi; Xj)`` over the events of
    class ``y`` (a Bayesian multinet; Friedman et al. 1997, section 5). It uses the same pair
    counts as :class:`TANClassifier`, sliced by class: no other statistic. Parameters,
    smoothing, relearning, missing values and numeric features are as in TAN.

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

    def __init__(
        self,
        alpha: float = 1.0,
        relearn_every: int = 100,
        max_tree_features: int | None = None,
        cmi_alpha: float = 0.0,
        kinds: dict | None = None,
        var_smoothing: float = 1e-9,
        max_cells: int = MAX_CELLS,
    ) -> None:
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        super().__init__(kinds=kinds, var_smoothing=var_smoothing, max_cells=max_cells)

    def _make_structured_part(self) -> Part:
        return _ClassTreesPart(self._classes, self._class_counts, self.alpha, self.relearn_every,
                               self.max_tree_features, self.cmi_alpha, self.max_cells)

    def structure(self, y: Hashable) -> Structure:
        """The current tree of class ``y``."""
        return self._part.structures.get(y, Structure({}))

    def structures(self) -> dict:
        """``{class: Structure}``."""
        return dict(self._part.structures)

    def to_dot(self, class_name: str = "class") -> str:
        """One Graphviz digraph per class, concatenated."""
        return "\n".join(
            s.to_dot().replace("digraph {", f'digraph "{class_name}={y}" {{', 1)
            for y, s in self._part.structures.items()
        )

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "relearn_every": 7, "max_tree_features": 3, "cmi_alpha": 0.1}
        yield {"relearn_every": 5, "kinds": PHISHING_KINDS}
