"""The part protocol: the statistics of one family of features and their log-likelihood per class.

A naive Bayes learner (:class:`~streamnb.naive_bayes.base.BaseNB`) is a class prior plus one or
more parts; each part validates, learns and scores its own features, on the Python path and, if
it has one, on the cells path: flat views of its statistics read and updated one raw event at a
time by :mod:`streamnb.stats.cells` (compiled when the install built it, :mod:`streamnb.kernels`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from streamnb.naive_bayes.posterior import sum_features
from streamnb.stats import Counts, Index
from streamnb.stats.base import Statistic

__all__ = ["Part", "ZeroWeights"]


class Part:
    """The statistics of one family of features and their log-likelihood per class.

    Subclasses implement :meth:`prepare`, :meth:`learn_one`, :meth:`log_likelihoods`,
    :meth:`learn_frame`, :meth:`log_likelihood_frame`, :meth:`stats` and :meth:`tables`.
    ``prepare`` validates an event without touching any state, so a rejected event leaves the
    model as it was.
    """

    kind = "part"

    def __init__(self, classes: Index, class_counts: Counts) -> None:
        self.classes = classes
        self.class_counts = class_counts

    def prepare(self, x: Mapping) -> Any:
        raise NotImplementedError

    #: Whether log-likelihoods are always finite (skips the non-finite handling).
    finite = False

    #: The flat views of the scalar path, the per-event cells over them, and the class count and
    #: sum of the statistics' generations they are valid for (see :meth:`_scalar`); never copied
    #: or pickled.
    _views: tuple = ()
    _cells: Any = None
    _views_key: tuple[int, int] = (-1, -1)

    def viewed(self) -> tuple[Statistic, ...]:
        """The statistics the scalar path reads through flat views (see :meth:`_scalar`)."""
        return ()

    def take_views(self) -> tuple:
        """The flat views of :meth:`viewed` (fitted): each statistic's count view and strides."""
        return tuple(view for stat in self.viewed() for view in stat.flat("n"))

    def make_cells(self, views: tuple) -> Any:
        """The per-event cells (:mod:`streamnb.stats.cells`) over ``views``, if this part has them."""
        return None

    def _scalar(self) -> tuple:
        """The flat views (:meth:`take_views`) and, with them, the cells (:meth:`_event_cells`):
        taken again after a new class, a reallocation or compaction of a statistic (a drop of
        keys is followed by :meth:`BaseNB._changed`, which forgets them)."""
        stats = self.viewed()
        generations = 0  # generations only grow: their sum moves when one does
        for stat in stats:
            generations += stat.generation
        n_classes, seen = len(self.classes.keys), self._views_key
        if n_classes != seen[0] or generations != seen[1]:
            for stat in stats:
                stat.fit()
            self._views = self.take_views()
            self._cells = self.make_cells(self._views)
            self._views_key = (n_classes, sum(stat.generation for stat in stats))
        return self._views

    def _event_cells(self) -> Any:
        """The per-event cells over the current views (see :meth:`_scalar`)."""
        self._scalar()
        return self._cells

    def forget_views(self) -> None:
        """Drop the cached flat views: they are taken again when next needed (keys may have
        been dropped)."""
        self._views_key = (-1, -1)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in ("_views", "_cells", "_views_key"):  # memoryviews are neither copied nor pickled
            state.pop(name, None)
        return state

    #: When this part takes whole raw events for a learner with other parts too: the other
    #: part (an event naming one of its features goes the Python path), and whether only string
    #: values are categories here (ints being numbers for the learner). Set by the learner.
    fast_exclude: Part | None = None
    fast_strings_only = False

    def _fast_args(self) -> tuple[dict | None, bool]:
        other = self.fast_exclude
        return (None if other is None else other.features.ids), self.fast_strings_only  # type: ignore[attr-defined]

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        """Learn the raw event ``x`` (a dict) of known class ``k`` through the cells path
        (:mod:`streamnb.kernels`), if this part has one and the event is plain; False, having
        changed nothing, if the caller must take the Python path. ``read``: :meth:`joint_fast`
        has just read ``x`` (and answered), so cells that keep the event read may learn it
        without reading it again."""
        return False

    def joint_fast(self, x: dict) -> list | None:
        """:meth:`joint_one` of the raw event ``x`` (a dict) through the cells path, or
        None if the caller must take the Python path."""
        return None

    def step_fast(self, x: dict, k: int, w: float) -> tuple[list, bool] | None:
        """Predict, then learn, on the cells path: :meth:`joint_fast` of ``x`` (before any
        change), then :meth:`learn_fast`; with whether it learned (if not, nothing changed
        and the caller learns through the Python path). None, having changed nothing, if
        :meth:`joint_fast` is. The event is read once where the part's cells keep it."""
        jll = self.joint_fast(x)
        if jll is None:
            return None
        return jll, self.learn_fast(x, k, w, True)

    def learn_one(self, prepared: Any, k: int, w: float) -> None:
        """Learn one prepared event: the scalar path, touching only the event's cells (plain
        floats, see :meth:`Statistic.flat`), and keeping what is derived from them current."""
        raise NotImplementedError

    def joint_one(self, prepared: Any) -> list:
        """:meth:`joint` of one event as a list of floats: the scalar path. Override with
        plain-float code whose cost is that of the event."""
        return self.joint(prepared).tolist()

    def joint_blend(self, prepared: Any, other: Part, weight: float, mine: list, theirs: list) -> list:
        """:meth:`joint_one` of the blend of this part's counts plus ``weight`` times
        ``other``'s (see :mod:`streamnb.naive_bayes.blend`), per blended class: ``mine[c]`` and
        ``theirs[c]`` are that class's id here and in ``other`` (-1: not there). Counting
        parts that can implement it; the cost is that of the event."""
        raise NotImplementedError(f"{type(self).__name__} cannot be blended")

    def log_likelihoods(self, prepared: Any) -> tuple[list, np.ndarray]:
        """Features used and their log-likelihoods, an array ``[features, classes]``."""
        raise NotImplementedError

    def joint(self, prepared: Any) -> np.ndarray:
        """Summed log-likelihood per class of one event (features that rule out every class
        dropped, see :func:`sum_features`). Override for speed."""
        _, ll = self.log_likelihoods(prepared)
        if not len(ll):
            return np.zeros(len(self.classes))
        if self.finite:
            return ll.sum(axis=0)
        with np.errstate(invalid="ignore"):
            total = ll.sum(axis=0)
        return total if np.isfinite(total).all() else sum_features(ll)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        raise NotImplementedError

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        """Summed log-likelihoods ``[rows, classes]``; missing values contribute nothing."""
        raise NotImplementedError

    def check_frame(self, X: pd.DataFrame) -> None:
        """Raise :class:`InvalidEventError` if ``X`` cannot be learned (no state is touched)."""

    #: ``(frame, converted)`` kept by :meth:`check_frame` for the :meth:`learn_frame` that
    #: follows on the same frame (see :meth:`_converted`).
    _memo: tuple | None = None

    def _converted(self, X: pd.DataFrame, convert: Any) -> Any:
        """``convert(X)``, or what :meth:`check_frame` kept (``self._memo = (X, ...)``) for
        this very frame, so a batch is converted once."""
        memo, self._memo = self._memo, None
        return memo[1] if memo is not None and memo[0] is X else convert(X)

    def stats(self) -> Mapping[str, Statistic]:
        raise NotImplementedError

    def complete_state(self, name: str, saved: dict) -> None:
        """Add to ``saved`` (statistics' states by ``"<part name>.<statistic>"``) what a state
        written by an earlier version lacks and can be derived."""

    def tables(self) -> dict[str, pd.DataFrame]:
        raise NotImplementedError

    def changed(self) -> None:
        """Drop anything derived from the statistics (they were updated)."""

    # -- reverting (counting parts) --------------------------------------------------------
    def check_unlearn(self, prepared: Any, k: int, w: float) -> None:
        """Raise :class:`InvalidEventError` unless :meth:`unlearn` can subtract this event
        (it must have been learned); touch no state."""
        raise NotImplementedError(f"{type(self).__name__} cannot unlearn")

    def unlearn(self, prepared: Any, k: int, w: float) -> None:
        """Subtract exactly what :meth:`learn_one` added (checked first by :meth:`check_unlearn`),
        then forget the event's keys whose counts are back to zero."""
        raise NotImplementedError(f"{type(self).__name__} cannot unlearn")

    #: The part's open vocabulary of features, if it has one that can be capped.
    vocabulary: Index | None = None

    def feature_weights(self) -> np.ndarray:
        """Total weight of each key of :attr:`vocabulary` (what a cap keeps the largest of)."""
        raise NotImplementedError

    def forget(self, ids: np.ndarray) -> None:
        """Drop the vocabulary keys ``ids``, as if they had never been seen."""
        raise NotImplementedError

    def frame_keys(self, X: pd.DataFrame) -> tuple[list, np.ndarray]:
        """Vocabulary keys of a batch's columns and where each row adds them (``[rows, cols]``)."""
        raise NotImplementedError


class ZeroWeights:
    """The counting parts' record of features held without a count (BernoulliNB, MultinomialNB,
    ComplementNB).

    A part with class-by-feature ``counts`` keeps, over the same features, ``zeros``: per
    feature, the weight of the learned events that gave it a value but not a present one (a
    count of 0; for Bernoulli, a value at or below the threshold). Such an event puts the
    feature in the vocabulary without counting it, so at an unlearn a feature is forgotten
    exactly when no learned event holds it any more: no count and no such weight left. The
    part adds to ``zeros`` when it learns (``zeros[j] += w``, per event or per batch) and calls
    :meth:`unheld` when it unlearns.
    """

    counts: Counts
    zeros: Counts

    def unheld(self, known: np.ndarray, off: np.ndarray, w: float) -> np.ndarray:
        """Take the weight ``w`` of an unlearned event from the zeros of ``off`` (the known ids
        it gave a value not present; never below 0), and return the ids among ``known`` (the
        event's known features, its counts already subtracted) that nothing holds any more:
        what learning the event added to the vocabulary, and only that."""
        zeros = self.zeros.raw("n")
        zeros[off] = np.maximum(zeros[off] - w, 0.0)
        return known[(self.counts.n[:, known].sum(axis=0) == 0) & (zeros[known] == 0)]

    def complete_state(self, name: str, saved: dict) -> None:
        """A state saved before the zeros were kept: a feature without a count joined the
        vocabulary with a value not present (weight 1); of the others it is not known (0)."""
        key = f"{name}.zeros"
        if key not in saved and f"{name}.counts" in saved:
            counts = saved[f"{name}.counts"]
            n = np.asarray(counts["arrays"]["n"], dtype=float)
            zeros = (n.sum(axis=0) == 0).astype(float) if n.ndim == 2 else np.zeros(0)
            saved[key] = {"type": "Counts", "version": Counts.version, "axes": [counts["axes"][1]],
                          "arrays": {"n": zeros}}
