"""Tree-augmented naive Bayes (TAN) and per-class Chow-Liu classifiers, learned on the stream."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from streamnb.bn.base import PHISHING_KINDS, TreeAugmentedNB
from streamnb.bn.linear_gaussian import LinearGaussianPart
from streamnb.bn.tree_part import MAX_CELLS, TreePart
from streamnb.naive_bayes.base import Part
from streamnb.stats import Counts, Index
from streamnb.structure import Structure, class_chow_liu, top_features
from streamnb.structure.chow_liu import EDGE_PENALTIES, hold, tan_scored, with_rest

__all__ = ["TANClassifier", "ChowLiuClassifier"]


class _TANPart(TreePart):
    def __init__(self, classes: Index, class_counts: Counts, alpha: float, relearn_every: int,
                 max_tree_features: int | None, cmi_alpha: float, max_cells: int = MAX_CELLS,
                 edge_penalty: str | None = None, swap_margin: float = 0.0) -> None:
        super().__init__(classes, class_counts, alpha, relearn_every, max_cells)
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        self.edge_penalty = edge_penalty
        self.swap_margin = swap_margin
        self._scored: tuple = ()

    def learn_structures(self) -> dict:
        feats = top_features(self.pairs, self.max_tree_features)
        s, w, names = tan_scored(self.pairs, alpha=self.cmi_alpha, features=feats, penalty=self.edge_penalty)
        self._scored = (w, names)
        return {None: with_rest(s, self.pairs)}

    def held(self, key: Any, old: Structure, new: Structure) -> Structure:
        if not self._scored or not self.swap_margin:
            return new
        weights, names = self._scored
        return hold(old, new, weights, names, self.swap_margin)


class _ClassTreesPart(_TANPart):
    def learn_structures(self) -> dict:
        feats = top_features(self.pairs, self.max_tree_features)
        out = {}
        for k, y in enumerate(self.classes.keys):
            if self.class_counts.n[k] > 0 and len(self.pairs.n[k].nonzero()[0]):
                out[y] = class_chow_liu(self.pairs, y, alpha=self.cmi_alpha, features=feats)
        return out


class TANClassifier(TreeAugmentedNB):
    """Tree-augmented naive Bayes (Friedman, Geiger & Goldszmidt 1997), learned online, with
    numeric features in the structure.

    Every feature has the class as a parent and at most one feature parent. The categorical
    features form a forest weighted by the conditional mutual information ``I(Xi; Xj | Y)``
    from one table of pair counts (:class:`~streamnb.stats.pairwise.PairCounts`); the numeric
    features form a forest of conditional linear Gaussians weighted by ``-1/2 sum_y P(y)
    log(1 - rho_y**2)`` from per-class co-moments (:mod:`streamnb.bn.linear_gaussian`). So:

    - the structure is recomputed after every ``relearn_every`` events and on :meth:`relearn`;
    - between recomputes the current structure predicts with up-to-date statistics;
    - a new structure predicts at once, with everything learned so far: nothing is replayed.

    **A structure that holds still.** An edge enters only if its weight exceeds its price
    (``edge_penalty``, :func:`~streamnb.structure.chow_liu.edge_price`): by default the
    independence test of the pair given the class at level 0.001 (``"chi2"``: ``2 N I`` against
    the chi-squared quantile of the edge's ``C (|X_i|-1)(|X_j|-1)`` parameters, ``C`` slopes for
    a numeric pair), ``"bic"`` for the Schwarz price ``params log(N) / 2N``, None for Friedman's
    spanning tree. Weak pairs stay independent: the structure is a forest, each tree hanging
    from its first feature in canonical order. A recompute replaces the current forest only if
    the new one's total weight beats the current one's, under the same weights, by the
    relative ``swap_margin`` (:func:`~streamnb.structure.chow_liu.hold`), so estimates that
    wobble on a stationary stream do not swap edges back and forth; :attr:`history` records
    the changes that happened.

    CPTs of categorical features are Lidstone-smoothed as in :class:`~streamnb.CategoricalNB`
    (same ``alpha``, same :func:`~streamnb.naive_bayes.smoothing.lidstone`); a numeric feature
    with a numeric parent is ``N(a_y + b_y x_parent, s_y**2 + eps)`` (least squares per class,
    residual variance shrunk by one pseudo-event toward the feature's class variance, ``eps``
    GaussianNB's variance smoothing); a feature with no feature parent is exactly its naive
    Bayes term (categorical or Gaussian). Before the first recompute the model is
    :class:`~streamnb.MixedNB`. Missing values and values never seen are summed out exactly
    (never guessed): sums over the values of missing categorical features, closed-form
    Gaussian integrals over missing numeric ones.

    Not learned: edges between a categorical and a numeric feature (the two forests meet
    only through the class); discretize a numeric feature upstream and declare it
    ``"categorical"`` to put it in the categorical forest.

    Parameters
    ----------
    alpha
        Lidstone smoothing of the CPTs (1: Laplace).
    relearn_every
        Recompute the structure after this many events (0: only on :meth:`relearn`).
    max_tree_features
        Wide inputs: only the ``k`` categorical features of highest ``I(X; Y)`` enter the
        tree, the rest stay naive (class parent only). The pair counts still cover every
        feature (memory ``C * K**2`` floats for ``K`` values seen; see
        :mod:`streamnb.stats.pairwise`); the recompute costs ``O(C K**2 + k**2)``.
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
    edge_penalty
        ``"chi2"`` (default), ``"bic"`` or None, see above.
    swap_margin
        Relative gain a new structure needs to replace the current one (0: always replace).

    Examples
    --------
    ``y`` is the parity of ``a`` and ``b``: naive Bayes cannot see it, TAN can; ``c`` is noise
    and stays out of the tree. (Numbers are Gaussian by default, as in MixedNB: the binary
    features are strings here.)

    >>> model = TANClassifier(relearn_every=50)
    >>> for i in range(200):
    ...     a, b, c = i % 2, (i // 2) % 2, (i // 4) % 2
    ...     model.learn_one({"a": str(a), "b": str(b), "c": str(c)}, a ^ b)
    >>> model.structure().edges
    [('a', 'b')]
    >>> p = model.predict_proba_one({"a": "1", "b": "0", "c": "0"})[1]   # Laplace: (50+1)/(50+2)
    >>> abs(p - 51 / 52) < 1e-12
    True
    >>> model.history[0]["event"], model.history[0]["added"]
    (50, [('a', 'b')])

    A sensor that follows another: the numeric pair enters the tree as a linear Gaussian.

    >>> import random
    >>> rng, model = random.Random(0), TANClassifier(relearn_every=100)
    >>> for i in range(400):
    ...     y = i % 2
    ...     t = rng.gauss(20 + 2 * y, 3)
    ...     model.learn_one({"t_in": t, "t_out": t + rng.gauss(0, 0.5), "wind": rng.gauss(0, 1)}, y)
    >>> model.structure().edges
    [('t_in', 't_out')]
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
        edge_penalty: str | None = "chi2",
        swap_margin: float = 0.05,
    ) -> None:
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        if edge_penalty not in EDGE_PENALTIES:
            raise ValueError(f"edge_penalty must be one of {EDGE_PENALTIES}, got {edge_penalty!r}")
        if isinstance(swap_margin, bool) or not isinstance(swap_margin, (int, float)) or not swap_margin >= 0:
            raise ValueError(f"swap_margin must be a number >= 0, got {swap_margin!r}")
        self.edge_penalty = edge_penalty
        self.swap_margin = swap_margin
        super().__init__(kinds=kinds, var_smoothing=var_smoothing, max_cells=max_cells)

    def _make_structured_part(self) -> Part:
        return _TANPart(self._classes, self._class_counts, self.alpha, self.relearn_every,
                        self.max_tree_features, self.cmi_alpha, self.max_cells, self.edge_penalty,
                        self.swap_margin)

    def _make_numeric_part(self) -> Part:
        return LinearGaussianPart(self._classes, self._class_counts, self.var_smoothing, self.relearn_every,
                                  self.edge_penalty, self.swap_margin)

    def structure(self) -> Structure:
        """The current forest over every feature: ``.edges`` (parent, child) pairs, ``.weights``
        (conditional mutual information in nats, less the edge's penalty). Categorical and
        numeric features form separate trees (see the class text)."""
        cat = self._part.structures.get(None, Structure({}, {}, True))
        num = self._parts["gaussian"].structure  # type: ignore[attr-defined]
        parents = {**cat.parents, **{f: p for f, p in num.parents.items() if f not in cat.parents}}
        return Structure(parents, {**cat.weights, **num.weights}, True)

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
        yield {"relearn_every": 20, "edge_penalty": None, "swap_margin": 0.0}


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
