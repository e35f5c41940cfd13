"""Naive Bayes over events that mix numeric, categorical and boolean features."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from streamnb import kernels
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.categorical import CategoricalPart
from streamnb.naive_bayes.composed import ComposedNB
from streamnb.naive_bayes.gaussian import GaussianPart
from streamnb.naive_bayes.values import is_missing
from streamnb.stats import cells

#: The module of the event split: compiled when built, the plain-Python one otherwise.
event_ops = kernels.compiled(cells)

__all__ = ["MixedNB", "FeatureKinds", "KINDS", "check_kinds", "infer_kind"]

#: Distributions a feature of a MixedNB can have.
KINDS = ("gaussian", "categorical")


def check_kinds(kinds: dict | None) -> None:
    """Raise ``ValueError`` if a per-feature kind override is not one of :data:`KINDS`."""
    bad = {f: k for f, k in (kinds or {}).items() if k not in KINDS}
    if bad:
        raise ValueError(f"unknown kinds {bad}; expected one of {KINDS}")


def infer_kind(value: Any) -> str:
    """``"gaussian"`` for numbers, ``"categorical"`` for anything else (bools included).

    >>> [infer_kind(v) for v in (1.5, 3, True, "red", np.int64(2))]
    ['gaussian', 'gaussian', 'categorical', 'categorical', 'gaussian']
    """
    if isinstance(value, (bool, np.bool_)):
        return "categorical"
    if isinstance(value, (Real, np.number)) and not isinstance(value, complex):
        return "gaussian"
    return "categorical"


class FeatureKinds(BaseNB):
    """A naive Bayes learner whose parts are kinds of features (a ``"gaussian"`` and a
    ``"categorical"`` part): each feature goes to one part, chosen by ``kinds`` or by its first
    value (:func:`infer_kind`) and fixed once learned. Subclasses set ``self.kinds`` and call
    :meth:`_init_kinds` after ``BaseNB.__init__``."""

    kinds: dict | None = None

    def _make_parts(self) -> dict[str, Part]:
        """One part per kind, in the order of :data:`KINDS` (numbers first): the one order
        every loop over the parts takes (learning, scoring, merging, saving, the cells path)."""
        return {kind: self._make_part(kind) for kind in KINDS}

    def _make_part(self, kind: str) -> Part:
        """The part of the features of ``kind`` (one of :data:`KINDS`)."""
        raise NotImplementedError

    def _init_kinds(self) -> None:
        self._learned_kinds: dict = {}  # feature -> kind, for features a part holds (fixed then)
        # the cells path takes events of strings whole to the categorical part (a string is a
        # category unless ``kinds`` says otherwise) and events of numbers to the numeric part;
        # an event naming a feature of the other part goes the Python path, which checks it.
        # The categorical part's cells path takes only events whose first value is a string,
        # the numeric part's none of those: the parts' order changes nothing but the cost
        categorical, numeric = self._parts["categorical"], self._parts["gaussian"]
        categorical.fast_exclude, numeric.fast_exclude = numeric, categorical
        categorical.fast_strings_only = True
        self._wholes = tuple(self._parts.values()) if self.kinds is None else ()

    def kind_of(self, feature: Any, value: Any = None) -> str | None:
        """The kind ``feature`` has (or would get with ``value``); None if it cannot tell."""
        for name, part in self._parts.items():
            if feature in part.features:  # type: ignore[attr-defined]
                return name
        if self.kinds and feature in self.kinds:
            return self.kinds[feature]
        return None if value is None else infer_kind(value)

    def _split(self, x: Mapping) -> dict[str, Any]:
        subs: dict[str, dict] = {name: {} for name in self._parts}
        learned = self._learned_kinds
        for f, v in x.items():
            kind: str | None = learned.get(f) if type(f) is str else None
            if kind is None:
                if is_missing(v):
                    continue
                kind = self.kind_of(f, v) or "categorical"
                if f in self._parts[kind].features:  # type: ignore[attr-defined]
                    learned[f] = kind
            subs[kind][f] = v  # a missing value of a learned feature: its part skips it
        return {name: part.prepare(subs[name]) for name, part in self._parts.items()}

    def _changed(self) -> None:
        super()._changed()
        self._learned_kinds = {}  # keys may have been dropped, a state loaded

    def _split_frame(self, X: pd.DataFrame) -> dict[str, pd.DataFrame]:
        cols: dict[str, list] = {name: [] for name in self._parts}
        for f in X.columns:
            kind = self.kind_of(f)
            if kind is None:
                s = X[f]
                if pd.api.types.is_bool_dtype(s.dtype):
                    kind = "categorical"
                elif pd.api.types.is_numeric_dtype(s.dtype):
                    kind = "gaussian"
                else:
                    seen = s[~s.map(is_missing)]
                    kind = infer_kind(seen.iloc[0]) if len(seen) else "categorical"
            cols[kind].append(f)
        return {name: X[c] for name, c in cols.items()}



class MixedNB(FeatureKinds, ComposedNB):
    """Naive Bayes with a distribution chosen per feature: Gaussian or categorical.

    A feature's kind is fixed the first time it is seen with a value: numbers are Gaussian,
    strings, booleans and other hashable values categorical; ``kinds`` overrides this per
    feature. A later value of the wrong type for its feature is rejected with an error that
    names the feature. Both kinds share the class counts, so the posterior is one naive Bayes.

    Parameters
    ----------
    kinds
        Optional ``{feature: "gaussian" | "categorical"}``.
    alpha, unseen, epsilon
        Smoothing of the categorical features (see :class:`CategoricalNB`).
    var_smoothing, ddof
        Of the Gaussian features (see :class:`GaussianNB`).

    Examples
    --------
    >>> model = MixedNB()
    >>> model.learn_one({"temp": 30.0, "sky": "sunny", "windy": False}, "play")
    >>> model.learn_one({"temp": 12.0, "sky": "rainy", "windy": True}, "stay")
    >>> model.predict_one({"temp": 28.0, "sky": "sunny"})
    'play'
    >>> model.kind_of("windy")
    'categorical'
    """

    def __init__(
        self,
        kinds: dict | None = None,
        alpha: float = 1.0,
        unseen: str = "ignore",
        var_smoothing: float = 1e-9,
        ddof: int = 0,
        epsilon: float = 0.0,
    ) -> None:
        self.kinds = kinds
        self.alpha = alpha
        self.unseen = unseen
        self.epsilon = epsilon
        self.var_smoothing = var_smoothing
        self.ddof = ddof
        check_kinds(kinds)
        super().__init__()
        self._init_kinds()

    def _init_kinds(self) -> None:
        super()._init_kinds()
        # an event of several kinds takes the cells path part by part (ComposedNB._route);
        # with ``kinds``, every event does, and an int reaches the categorical part only for a
        # feature declared categorical (the route keeps the numeric features out)
        numeric, categorical = self._parts["gaussian"], self._parts["categorical"]
        categorical.fast_strings_only = not self.kinds  # ints are numbers, unless declared
        categorical.fast_exclude = None  # _route and _whole keep the numeric features out
        self._kind_parts = (numeric, categorical)  # unpacked by name, in the parts' order
        self._wholes = ()

    def _whole(self, x: dict) -> Part | None:
        """Without ``kinds``: the categorical part for an event starting with a string (its
        kernel takes strings only) and naming no numeric feature, the Gaussian part for any
        other (its kernel refuses strings and categorical features)."""
        if self.kinds:
            return None
        numeric, categorical = self._kind_parts
        if type(next(iter(x.values()), None)) is not str:
            return numeric
        return categorical if numeric.features.ids.keys().isdisjoint(x) else None  # type: ignore[attr-defined]

    def _route(self, x: dict) -> list[tuple[Part, dict]] | None:
        """``x`` split for the cells path (:class:`ComposedNB`): its numbers for the Gaussian
        part, its categories for the categorical part; None for the Python path.

        A string goes to the categorical part, unless its feature is (or is declared) numeric
        (None: the Python path rejects it); so does an int of a feature declared categorical, and
        any other value of such a feature takes the Python path. Everything else goes to the
        Gaussian part, whose kernel takes plain numbers of its own features or of new ones only
        (a number of a categorical feature, a missing value, a bool: the Python path). So the
        categorical part's ``prepare`` accepts the categories, as :class:`ComposedNB` needs.

        >>> model = MixedNB(kinds={"zip": "categorical"})
        >>> [(part.kind, sub) for part, sub in model._route({"temp": 21.5, "sky": "sunny", "zip": 75001})]
        [('gaussian', {'temp': 21.5}), ('categorical', {'sky': 'sunny', 'zip': 75001})]
        >>> model.learn_one({"temp": 21.5}, "play")
        >>> print(model._route({"temp": "warm"}))  # a string for a numeric feature: an error to raise
        None
        """
        split = event_ops.split_strings(x, self.kinds or None)
        if split is None:
            return None
        categories, numbers = split
        return self._shares(numbers, categories)

    def _shares(self, numbers: dict, categories: dict) -> list[tuple[Part, dict]] | None:
        """:meth:`_route`'s answer for these sub-events: None if a category names a numeric
        feature (the Python path rejects it) or if there is no feature."""
        numeric, categorical = self._kind_parts
        if categories:
            if not numeric.features.ids.keys().isdisjoint(categories):  # type: ignore[attr-defined]
                return None
            return [(numeric, numbers), (categorical, categories)] if numbers else [(categorical, categories)]
        return [(numeric, numbers)] if numbers else None

    def _make_part(self, kind: str) -> Part:
        if kind == "gaussian":
            return GaussianPart(self._classes, self._class_counts, self.var_smoothing, self.ddof)
        return CategoricalPart(self._classes, self._class_counts, self.alpha, self.unseen, self.epsilon)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "unseen": "smooth", "ddof": 1}

