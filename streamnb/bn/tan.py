"""Tree-augmented naive Bayes (TAN) learned on the stream, with numeric features in the structure.

The learner owns the structure over every feature: it combines the edge weights of its
categorical part (:class:`~streamnb.bn.tan_part.TANPart`), of its numeric part
(:class:`~streamnb.bn.linear_gaussian.LinearGaussianPart`) and of the numeric features given
categorical ones (:class:`~streamnb.bn.numeric_children.NumericChildren`, which it owns too),
and combines their scores; per-class Chow-Liu trees are :mod:`streamnb.bn.chow_liu_classifier`
(:class:`ChowLiuClassifier` is importable from here too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from streamnb.bn.base import LearnedTreesNB
from streamnb.bn.chow_liu_classifier import ChowLiuClassifier
from streamnb.bn.linear_gaussian import MAX_NUMERIC, LinearGaussianPart
from streamnb.bn.numeric_children import NumericChildren
from streamnb.bn.scales import SCALES
from streamnb.bn.tan_part import TANPart
from streamnb.bn.tree_part import MAX_CELLS
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.values import batch_labels, batch_weights, check_labels, is_missing
from streamnb.stats.base import Statistic
from streamnb.structure.counted import with_rest
from streamnb.structure.edge_prices import EDGE_PENALTIES
from streamnb.structure.forest import Structure, forest_structure, mixed_forest
from streamnb.structure.hysteresis import favour_incumbents, hold

__all__ = ["TANClassifier", "ChowLiuClassifier"]


class TANClassifier(LearnedTreesNB):
    """Tree-augmented naive Bayes (Friedman, Geiger & Goldszmidt 1997), learned online, with
    numeric features in the structure.

    Every feature has the class as a parent and at most one feature parent; the features form
    one forest whose edges are weighted by the conditional mutual information ``I(Xi; Xj | Y)``
    in nats: for categorical pairs from one table of pair counts
    (:class:`~streamnb.stats.pairwise.PairCounts`), for numeric pairs (conditional linear
    Gaussians) ``-1/2 sum_y P(y) log(1 - rho_y**2)`` from per-class co-moments
    (:mod:`streamnb.bn.linear_gaussian`), for categorical-numeric pairs from per-class,
    per-value Welford statistics (:class:`~streamnb.stats.comoments.CellMoments`). So:

    - the structure is recomputed after every ``relearn_every`` events and on :meth:`relearn`;
    - between recomputes the current structure predicts with up-to-date statistics;
    - a new structure predicts at once, with everything learned so far: nothing is replayed.

    **A structure that holds still.** An edge enters only if its weight exceeds its price
    (``edge_penalty``, :func:`~streamnb.structure.edge_prices.edge_price`): by default the
    independence test of the pair given the class at level 0.001 (``"chi2"``: ``2 N I`` against
    the chi-squared quantile of the edge's parameters: ``sum_y (r_y(i) - 1)(r_y(j) - 1)`` for a
    categorical pair, ``r_y(i)`` the values of ``X_i`` seen in class ``y``
    (:func:`~streamnb.structure.edge_prices.class_edge_params`: many classes of few events each do
    not inflate the test with values they never hold), ``C`` slopes for a numeric pair),
    ``"bic"`` for the Schwarz price ``params log(N) / 2N``, None for Friedman's spanning tree. Weak pairs stay independent: the structure is a forest, each tree hanging
    from its first feature in canonical order. Two kinds of hysteresis keep it still on a
    stationary stream:

    - an edge already in the structure pays a lower price to stay than to enter (the test at
      level 0.05 instead of 0.001; AIC's ``params / N`` instead of BIC's), so a weak true edge
      near the detection limit does not flap in and out
      (:func:`~streamnb.structure.hysteresis.favour_incumbents`);
    - a recompute changes the forest only if the edges it adds outweigh the edges it removes
      by more than ``swap_margin`` times the total weight of the edges that change, or by more
      than 3.09 standard errors of those weights (``sqrt(sum_e (1 - exp(-2 I_e)) / N)``,
      whichever is lower; :func:`~streamnb.structure.hysteresis.hold`): near-ties do not swap
      back and forth, a clearly better edge still replaces a wrong one however large the rest
      of the structure, and a structure chosen early from few events does not hold against
      strong evidence later (between heavy edges the relative margin alone never shrinks).

    :attr:`history` records the changes that happened; ``structure().weights`` are the
    weights less the price (to stay, for an edge in place).

    **Plain TAN.** ``TANClassifier(edge_penalty=None, swap_margin=0)`` is Friedman et al.'s TAN:
    at every recompute the maximum spanning tree of ``I(Xi; Xj | Y)`` over every feature (Prim
    from the first feature in canonical order), whatever stood before; over categorical
    features its edges are those of pgmpy's ``TreeSearch(estimator_type="tan")`` given that
    root (tested on sampled networks).

    CPTs of categorical features without a feature parent are Lidstone-smoothed as in
    :class:`~streamnb.CategoricalNB` (same ``alpha``, same
    :func:`~streamnb.naive_bayes.smoothing.lidstone`); a categorical feature given its parent
    is by default smoothed toward its own CPT given the class (``smoothing="marginal"``,
    Friedman et al.'s remedy for TAN on small data): ``P(x | u, y) = (n(x, u, y) + 5 P(x | y))
    / (n(u, y) + 5)``, so a parent value seen a few times in a class says little and the term
    falls back to naive Bayes's (:func:`~streamnb.stats.lidstone.smoothed`); a function of
    the pair counts, exact after merges, decay and loads, at the cost of one more lookup per
    term. ``smoothing="lidstone"``: ``(n(x, u, y) + alpha) / (n(u, y) + alpha |X|)``, as
    pgmpy's K2 prior and the CPTs of before; a numeric feature
    with a numeric parent is ``N(a_y + b_y x_parent, s_y**2 + eps)`` (least squares per class,
    residual variance shrunk by one pseudo-event toward the feature's class variance, ``eps``
    GaussianNB's variance smoothing; a numeric parent does not split the class's events into
    cells, so the line is not smoothed toward the marginal); a feature with no feature parent
    is exactly its naive Bayes term (categorical or Gaussian). Before the first recompute the model is
    :class:`~streamnb.MixedNB`. Missing values and values never seen are summed out exactly
    (never guessed): sums over the values of missing categorical features, closed-form
    Gaussian integrals over missing numeric ones.

    **Categorical and numeric features in one forest.** A numeric feature may have a
    categorical parent: then it is a Gaussian per class and parent value, smoothed as the
    categorical CPTs are: with ``smoothing="marginal"`` the ``n(u, y)`` events with that value
    pooled with 5 pseudo-events of the feature's Gaussian given the class ``N(m_y, v_y)``, mean
    ``(n mean_u + 5 m_y) / t`` and variance ``(m2_u + 5 v_y + (5 n / t) (mean_u - m_y)**2) / t``
    with ``t = n + 5`` (the mean and variance of Friedman et al.'s mixture ``(n / t) N(mean_u,
    m2_u / n) + (5 / t) N(m_y, v_y)``: a value seen a few times in a class falls back to naive
    Bayes's Gaussian; a function of the Welford statistics, exact after merges, decay and
    loads); with ``smoothing="lidstone"`` the mean of the events with that value and their
    variance shrunk by one pseudo-event toward the class variance; plus ``eps``. The pair
    weighs ``sum_y P(y) [log v_y - sum_u P(u | y) log v_yu] / 2`` nats
    (:meth:`~streamnb.bn.numeric_children.NumericChildren.cross_weights`). A categorical
    feature never has a numeric parent: the categorical forest is chosen first, then numeric
    features join by the heaviest remaining edges, never joining two trees that both hold
    categorical features, and each tree hangs from a categorical feature
    (:func:`~streamnb.structure.forest.mixed_forest`). A missing categorical parent is summed
    out with its numeric children's densities as evidence, a missing numeric one by Gaussian
    integrals: exact, whatever is missing.

    **Counts and amounts on a log scale** (``scales="auto"``, :mod:`streamnb.bn.scales`). A
    zero-inflated, heavy-tailed feature (a count, an amount, a duration) fits a Gaussian badly,
    and a Gaussian per parent value fits it on fewer events still: a few large values inflate
    the variances, so common small values read as evidence for the wrong class. Every numeric
    feature therefore also has a log slot learning ``log1p(x)`` (the same statistics: Welford per
    class, co-moments with every other slot, Welford per categorical value), and at every
    recompute each feature whose values were all ``>= 0`` stands on the scale whose class
    Gaussians give its values the higher likelihood (a density of ``x`` on both: the change of
    variables counted), by :data:`~streamnb.bn.scales.SWITCH_NATS` to change. The edge weights,
    CPTs and terms of a feature on its log scale are those of ``log1p(x)`` (its term less
    ``log1p(x)``): exact, as on the linear scale. ``numeric_scales()`` says which; a change of
    scale is a :attr:`history` entry (``"scales"``). A value below 0 sends the feature back to
    its linear scale for good (its log slot is emptied and learns nothing more), and a value
    below 0 to score for a feature on its log scale is outside it: summed out like a missing
    value. What the log scales gain on data sets with counts and amounts: docs/benchmarks.md.

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
    max_numeric
        Most numeric features in the structure (256): the first ones met have per-class
        co-moments (``32 C max_numeric**2`` bytes, 2 MB per class at 256; four times that with
        their log slots) and per-value Welford statistics; later ones are Gaussian leaves with
        the class as only parent, so a very wide numeric event cannot exhaust memory. Merges
        keep the bound as one learner would (features numbered first-come).
    cmi_alpha
        Pseudo-count of the CMI estimate (0: plug-in, as Friedman et al. and bnclassify).
    kinds, var_smoothing
        As in :class:`~streamnb.MixedNB`: ``{feature: "categorical" | "gaussian"}``
        overrides, and the Gaussian features' variance smoothing.
    edge_penalty
        ``"chi2"`` (default), ``"bic"`` or None, see above.
    swap_margin
        Gain a change of structure needs, relative to the weight of the edges it adds and
        removes, unless it exceeds 3.09 standard errors of their weights (0: always take the
        new structure), see above.
    smoothing
        ``"marginal"`` (default) or ``"lidstone"``: the CPTs of categorical features given a
        feature parent and the Gaussians of numeric features given a categorical parent, see
        above.
    scales
        ``"auto"`` (default): each numeric feature stands on its linear or its ``log1p``
        scale, see above; ``"linear"``: every numeric feature on its linear scale, no log
        slots (half the numeric statistics' memory, a quarter of their co-moments).

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
    >>> p = model.predict_proba_one({"a": "1", "b": "0", "c": "0"})[1]   # (50 + 5/2) / (50 + 5)
    >>> abs(p - 21 / 22) < 1e-12
    True
    >>> model.history[0]["event"], model.history[0]["added"]
    (50, [('a', 'b')])

    A sensor that follows another: the numeric pair enters the tree as a linear Gaussian; a
    reading that depends on a categorical mode hangs from it.

    >>> import random
    >>> rng, model = random.Random(0), TANClassifier(relearn_every=100)
    >>> for i in range(400):
    ...     y = i % 2
    ...     t = rng.gauss(20 + 2 * y, 3)
    ...     mode = rng.choice(["eco", "boost"])
    ...     power = rng.gauss(5 if mode == "eco" else 9, 1)
    ...     model.learn_one({"t_in": t, "t_out": t + rng.gauss(0, 0.5), "mode": mode, "power": power}, y)
    >>> model.structure().edges
    [('mode', 'power'), ('t_in', 't_out')]
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
        max_numeric: int = MAX_NUMERIC,
        scales: str = "auto",
        smoothing: str = "marginal",
    ) -> None:
        self.max_numeric = max_numeric
        self.scales = scales
        self.edge_penalty = edge_penalty
        self.swap_margin = swap_margin
        super().__init__(alpha, relearn_every, max_tree_features, cmi_alpha, kinds, var_smoothing, max_cells,
                         smoothing)

    def _check_params(self) -> None:
        max_numeric, swap_margin = self.max_numeric, self.swap_margin
        if isinstance(max_numeric, bool) or not isinstance(max_numeric, int) or max_numeric < 1:
            raise ValueError(f"max_numeric must be a positive integer, got {max_numeric!r}")
        if self.scales not in SCALES:
            raise ValueError(f"scales must be one of {SCALES}, got {self.scales!r}")
        if self.edge_penalty not in EDGE_PENALTIES:
            raise ValueError(f"edge_penalty must be one of {EDGE_PENALTIES}, got {self.edge_penalty!r}")
        if isinstance(swap_margin, bool) or not isinstance(swap_margin, (int, float)) or not swap_margin >= 0:
            raise ValueError(f"swap_margin must be a number >= 0, got {swap_margin!r}")

    def _make_structured_part(self) -> Part:
        return TANPart(self._classes, self._class_counts, self.alpha, self.max_tree_features, self.cmi_alpha,
                       self.max_cells, self.edge_penalty, self._prior)

    def _make_numeric_part(self) -> Part:
        return LinearGaussianPart(self._classes, self._class_counts, self.var_smoothing, self.max_numeric,
                                  log_slots=self.scales == "auto")

    def _make_parts(self) -> dict[str, Part]:
        parts = super()._make_parts()
        numeric, categorical = parts["gaussian"], parts["categorical"]
        assert isinstance(numeric, LinearGaussianPart) and isinstance(categorical, TANPart)
        #: The numeric features given categorical ones: the statistics of the pairs across the parts.
        self._children = NumericChildren(self._classes, categorical.cells, numeric.features,
                                         numeric.slot_limit, self._prior)
        numeric.followers = (self._children.cross,)  # a log slot emptied is emptied there too
        return parts

    @property
    def _numeric(self) -> LinearGaussianPart:
        """The numeric part."""
        return self._parts["gaussian"]  # type: ignore[return-value]

    def structure(self) -> Structure:
        """The current forest over every feature: ``.edges`` (parent, child) pairs, ``.weights``
        (conditional mutual information in nats, less the edge's price)."""
        return self._structure.shared()

    def _choose_scales(self) -> frozenset:
        return self._numeric.choose_scales()

    def _learn_trees(self, on_log: frozenset) -> dict:
        """The forest over every feature (:func:`~streamnb.structure.forest.mixed_forest`), the
        numeric features ``on_log`` on their log scale: the categorical part's edge weights, the
        numeric part's and those of the numeric features given categorical ones, an edge in
        place paying its price to stay only (:func:`~streamnb.structure.hysteresis.favour_incumbents`),
        kept where the current forest stands unless it gains enough
        (:func:`~streamnb.structure.hysteresis.hold`)."""
        part, numeric, penalty = self._part, self._numeric, self.edge_penalty
        now = self._structure.trees.get(None)
        incumbents = penalty is not None and now is not None and bool(now.edges)
        num_names: list = []
        if numeric.features.keys:
            num_names, w_num, price_num = numeric.pair_weights(penalty, on_log)
        s, w, names, price = part.pair_weights(build=not (num_names or incumbents))
        categorical = [True] * len(names)
        if num_names and not names:
            w, price, names = w_num, price_num, list(num_names)
            categorical = [False] * len(num_names)
        elif num_names:
            cross, price_cross = self._children.cross_weights(part.pairs, numeric, names, num_names, penalty,
                                                              on_log)
            w = np.block([[w, cross], [cross.T, w_num]])
            price = np.block([[price, price_cross], [np.swapaxes(price_cross, 1, 2), price_num]])
            names = names + num_names
            categorical += [False] * len(num_names)
        with np.errstate(invalid="ignore"):  # no price where it is infinite (too few events)
            raw = np.where(np.isfinite(price[0]), w + price[0], w)
        if incumbents and now is not None:
            w = favour_incumbents(w, price, names, now)  # an edge in place pays to stay only
        if num_names:
            s = mixed_forest(w, names, categorical, penalty is None)
        elif incumbents:
            s = forest_structure(w, names, class_parent=True)
        assert s is not None
        new = with_rest(s, part.pairs)
        if self.swap_margin:
            new = hold(Structure({}) if now is None else now, new, w, names, self.swap_margin, raw,
                       self._class_counts.total())
        return {None: new}

    def _hand_down(self) -> None:
        super()._hand_down()
        s = self._structure
        self._numeric.set_structure(s.shared(), s.on_log)
        self._children.use(s.shared())
        self._numbers_below()

    def _numbers_below(self) -> None:
        """Tell the categorical part whether numeric features hang from its features (see
        :attr:`~streamnb.bn.tree_part.TreePart.numeric_below`)."""
        self._part.numeric_below = bool(self._children.children_of_categories(self._numeric))

    # -- one event: the parts, and the numeric features given categorical ones -----------------
    def _learn_split(self, prepared: dict[str, Any], k: int, w: float) -> None:
        super()._learn_split(prepared, k, w)
        numbers, cells = prepared["gaussian"], prepared["categorical"][1]
        if numbers[0] and cells:
            get = self._part.cells.get
            kept = [c for c in map(get, cells) if c >= 0]  # the cells the pair table registered
            if kept:
                numeric = self._numeric
                keys, values = numeric.with_logs(numbers)
                self._children.learn(k, kept, numeric.features.lookup(keys), values, w)

    def _evidence(self, prepared: dict[str, Any]) -> tuple[dict, dict | None] | None:
        """The terms of the numeric features whose parent is categorical and their evidence at
        missing categorical parents (:meth:`NumericChildren.numeric_evidence
        <streamnb.bn.numeric_children.NumericChildren.numeric_evidence>`), None if no numeric
        feature has a categorical parent."""
        numeric = self._numeric
        if not self._children.children_of_categories(numeric):
            return None
        obs, m = self._part.observed(prepared["categorical"][1])
        return self._children.numeric_evidence(obs, prepared["gaussian"], m, numeric)

    def _joint_split(self, prepared: dict[str, Any]) -> list:
        # the numeric part's terms, then the categorical part's with the numeric features below it
        numbers, cells = prepared["gaussian"], prepared["categorical"][1]
        evidence = self._evidence(prepared) if cells or numbers[0] else None
        jll = [a + b for a, b in zip([0.0] * len(self._classes.keys), self._numeric.joint_one(numbers))]
        return [a + b for a, b in zip(jll, self._part.joint_one(prepared["categorical"], evidence))]

    def _terms_split(self, prepared: dict[str, Any]) -> list[tuple[list, np.ndarray]]:
        return [self._numeric.log_likelihoods(prepared["gaussian"]),
                self._part.log_likelihoods(prepared["categorical"], self._evidence(prepared))]

    # -- statistics and state ----------------------------------------------------------------
    def _stats(self) -> dict[str, Statistic]:
        out = super()._stats()
        out["categorical.cross"] = self._children.cross  # after the pairs: a merge registers the cells first
        return out

    def _complete_state(self, saved: dict[str, Any]) -> None:
        super()._complete_state(saved)
        self._children.complete_state("categorical", saved)

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self._numbers_below()  # the numeric features are loaded now

    def merge(self, other: BaseNB) -> BaseNB:
        """As :meth:`~streamnb.bn.base.TreeAugmentedNB.merge`; a log slot whose feature had a
        value below 0 on either side ends empty, as one learner's does (:mod:`streamnb.bn.scales`)."""
        super().merge(other)
        self._numeric.settle()
        self._numbers_below()
        return self

    def numeric_scales(self) -> dict:
        """``{numeric feature: "linear" | "log1p"}``: the scale each numeric feature stands on
        (see ``scales``; all linear before the first recompute and with ``scales="linear"``)."""
        numeric = self._numeric
        on = numeric.on_log
        return {f: "log1p" if f in on else "linear" for f in numeric.user_features()}

    def to_dot(self, class_name: str = "class") -> str:
        """The current network (class, features and tree) as Graphviz text."""
        s = self.structure()
        names = list(self._part.features.keys) + [f for f in self._numeric.user_features()
                                                   if f not in s.parents]
        parents = {**{f: None for f in names}, **s.parents}
        return Structure(parents, s.weights, True).to_dot(class_name)

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w: Any = 1.0, *, columns: Any = None) -> None:
        """As :meth:`~streamnb.naive_bayes.base.BaseNB.learn_many`. A batch with numeric
        columns is learned row by row (each row's co-moments, and the structure recomputed
        where ``learn_one`` would, between rows): the same model as ``learn_one``, at its cost."""
        X = self._batch(X, columns)  # a DataFrame (else InvalidEventError)
        if not self._split_frame(X)["gaussian"].shape[1]:
            return super().learn_many(X, y, w, columns=columns)
        rows, labels, weights = self._batch_rows(X, y, w)
        for x, label, weight in zip(rows, labels, weights):
            if weight > 0:
                self.learn_one(x, label, weight)

    def predict_proba_many(self, X: pd.DataFrame, *, columns: Any = None) -> pd.DataFrame:
        """As :meth:`~streamnb.naive_bayes.base.BaseNB.predict_proba_many`; row by row when
        a numeric feature has a categorical parent."""
        if not self._children.children_of_categories(self._numeric) or not isinstance(X, pd.DataFrame):
            return super().predict_proba_many(X, columns=columns)
        rows, _, _ = self._batch_rows(X, None, 1.0)
        out = [self.predict_proba_one(x) for x in rows]
        return pd.DataFrame(out, index=X.index, columns=list(self._classes.keys))

    def _batch_rows(self, X: pd.DataFrame, y: Any, w: Any) -> tuple[list, list, np.ndarray]:
        """A batch as checked rows (missing cells left out), labels and weights; raises before
        anything is learned if any row is rejected."""
        labels = check_labels(batch_labels(y, len(X))) if y is not None else []
        weights = batch_weights(w, len(X))
        rows = [{f: v for f, v in r.items() if not is_missing(v)} for r in X.to_dict("records")]
        # a new feature takes its kind from its first row, as one by one: a later row of the
        # other kind is rejected here, before any row is learned
        first: dict = {}
        for x in rows:
            for f, v in x.items():
                if f not in first:
                    first[f] = self.kind_of(f, v) or "categorical"
        learned = self._learned_kinds
        self._learned_kinds = {**learned, **{f: k for f, k in first.items() if type(f) is str}}
        try:
            for x in rows:
                self._split(x)  # validates, touches nothing
        finally:
            self._learned_kinds = learned
        return rows, labels, weights

    @classmethod
    def _unit_test_params(cls):
        yield from super()._unit_test_params()
        yield {"relearn_every": 20, "edge_penalty": None, "swap_margin": 0.0}
        yield {"relearn_every": 10, "scales": "linear"}
