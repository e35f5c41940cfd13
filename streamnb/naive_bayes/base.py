"""What every naive Bayes learner shares: class counts, one posterior, batches, merge, decay, state.

A learner is a class prior plus one or more *parts*: a part owns the statistics of some
features and returns their log-likelihood per class (see :class:`Part`). ``GaussianNB`` has one
Gaussian part, ``MixedNB`` a Gaussian and a categorical part; the posterior is computed once,
here, with a max-shifted log-sum-exp.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse
from river import base

from streamnb import kernels
from streamnb.exceptions import InvalidEventError, StateError
from streamnb.naive_bayes.values import (
    PLAIN_LABELS,
    SparseBatch,
    batch_labels,
    batch_weights,
    check_event,
    check_frame_arg,
    check_label,
    check_labels,
    check_weight,
)
from streamnb.stats import Counts, Index, rarest, target
from streamnb.stats.base import Statistic

__all__ = ["BaseNB", "Part", "Explanation", "posterior", "posterior_one", "add_feature"]


def posterior(jll: np.ndarray) -> np.ndarray:
    """Normalize joint log-likelihoods (last axis = classes) into probabilities.

    Non-finite values follow limits, never floors: ``+inf`` classes (point masses) share the
    mass, ``-inf`` classes get 0, and a row where every class is ``-inf`` (no class can have
    produced the event) is returned as NaN for the caller to resolve.

    >>> posterior(np.log([[0.25, 0.5]])).round(6).tolist()
    [[0.333333, 0.666667]]
    >>> posterior(np.array([-1e6, -1e6 - math.log(3)])).round(6).tolist()
    [0.75, 0.25]
    """
    jll = np.asarray(jll, dtype=float)
    top = _last_axis(np.maximum, jll)
    if np.isfinite(top).all():
        p = np.exp(jll - top)
        p /= _last_axis(np.add, p)
        return p
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = np.where(np.isposinf(top), np.where(np.isposinf(jll), 0.0, -np.inf), jll - top)
        p = np.exp(shifted)
        return p / p.sum(axis=-1, keepdims=True)


def _last_axis(ufunc: np.ufunc, a: np.ndarray) -> np.ndarray:
    """``ufunc.reduce(a, axis=-1, keepdims=True)`` for ``np.maximum`` or ``np.add``.

    A row of a few classes is a short reduction, which numpy runs row by row at ~25 ns a
    row (26 us for 1,000 rows of 2 classes); below 8 classes the columns are combined
    instead, left to right: the same result, bit for bit (numpy's sum of fewer than 8 values
    adds them in order too).
    """
    n = a.shape[-1] if a.ndim else 0
    if a.ndim != 2 or not 1 < n < 8:
        return ufunc.reduce(a, axis=-1, keepdims=True)
    out = ufunc(a[:, 0], a[:, 1])
    for c in range(2, n):
        ufunc(out, a[:, c], out=out)
    return out[:, None]


def _normalize(jll: list, log_prior: list) -> list:
    """Probabilities from one event's joint log-likelihoods (max-shifted); if every class is
    ruled out, the prior."""
    top = max(jll)
    if top == -math.inf or top != top:
        if top == top:  # every class impossible: fall back on the prior
            return _normalize(log_prior, log_prior)
        return posterior(np.array(jll)).tolist()
    if top == math.inf:
        return posterior(np.array(jll)).tolist()
    e = [math.exp(v - top) for v in jll]
    total = math.fsum(e)
    return [v / total for v in e]


def posterior_one(jll: list, log_prior: list) -> list:
    """The posterior of one event from its log-likelihoods ``jll`` and ``log P(y)`` (lists per
    class): the evidence is shifted by its maximum before the prior is added; if every class
    is ruled out, the prior.

    >>> [round(p, 6) for p in posterior_one([-1e9, -1e9 - math.log(2)], [math.log(0.5)] * 2)]
    [0.666667, 0.333333]
    """
    top = max(jll)
    if math.isfinite(top):
        jll = [v - top for v in jll]
    return _normalize([a + b for a, b in zip(log_prior, jll)], log_prior)


def _shifted(ll: np.ndarray) -> np.ndarray:
    """Each row of log-likelihoods ``[rows, classes]`` less its maximum, where that is finite.

    The evidence is shifted before the log prior is added: a large log-likelihood shared by
    every class (a feature far out in every class) would otherwise absorb the prior's digits
    (``-1e10 + log(2/3)`` keeps 6 of them), where the posterior does not depend on it at all.
    """
    top = _last_axis(np.maximum, ll) if ll.shape[1] else np.zeros((len(ll), 1))
    return np.where(np.isfinite(top), ll - np.where(np.isfinite(top), top, 0.0), ll)


def sum_features(jll_parts: np.ndarray) -> np.ndarray:
    """Sum per-feature log-likelihoods ``[..., features, classes]`` when some are not finite.

    Per feature: if some class has ``+inf`` (a zero-variance Gaussian hit exactly) those classes
    get 0 and the others ``-inf``; a feature for which every class is ``-inf`` tells nothing
    apart and is dropped. Finite features are shifted by their maximum (which leaves the
    posterior unchanged).
    """
    top = jll_parts.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        out = np.where(
            np.isposinf(top),
            np.where(np.isposinf(jll_parts), 0.0, -np.inf),
            np.where(np.isneginf(top), 0.0, jll_parts - top),
        )
    return out.sum(axis=-2)


def add_feature(total: list, ll: list) -> None:
    """Add one feature's log-likelihoods ``ll`` (per class) to ``total``, in place, with the
    rules of :func:`sum_features`: a feature for which every class is ``-inf`` is dropped;
    one where some class is ``+inf`` (a point mass hit) leaves only those classes possible."""
    top = max(ll)
    if top == math.inf:
        for c, v in enumerate(ll):
            if v != math.inf:
                total[c] = -math.inf
    elif top != -math.inf:
        for c, v in enumerate(ll):
            total[c] += v


class Part:
    """The statistics of one family of features and their log-likelihood per class.

    Subclasses implement :meth:`prepare`, :meth:`learn`, :meth:`log_likelihoods`,
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

    def learn(self, prepared: Any, k: int, w: float) -> None:
        raise NotImplementedError

    #: The flat views of the scalar path and the key they are valid for (see :meth:`_fresh`).
    _views: tuple = ()
    _views_key: tuple = ()

    def _fresh(self, *stats: Statistic) -> bool:
        """Whether the cached flat views of ``stats`` are still valid: no new class, no
        reallocation or compaction since they were taken (a drop of keys is followed by
        :meth:`BaseNB._changed`, which forgets the views). If not, the statistics are fitted
        and the caller retakes its views (and then calls :meth:`_took`)."""
        key = self._views_key
        if len(key) == len(stats) + 1 and key[0] == len(self.classes.keys):
            for i, stat in enumerate(stats, 1):
                if key[i] != stat.generation:
                    break
            else:
                return True
        for stat in stats:
            stat.fit()
        return False

    def _took(self, views: tuple, *stats: Statistic) -> tuple:
        """Remember ``views`` as valid for the current state of ``stats``."""
        self._views = views
        self._views_key = (len(self.classes.keys), *[s.generation for s in stats])
        return views

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_views", None)  # memoryviews are neither copied nor pickled
        state.pop("_views_key", None)
        state.pop("_kernel", None)
        return state

    #: When this part takes whole raw events for a learner with other parts too: the other
    #: part (an event naming one of its features goes the Python path), and whether only string
    #: values are categories here (ints being numbers for the learner). Set by the learner.
    fast_exclude: Part | None = None
    fast_strings_only = False

    def _fast_args(self) -> tuple[dict | None, bool]:
        other = self.fast_exclude
        return (None if other is None else other.features.ids), self.fast_strings_only  # type: ignore[attr-defined]

    def learn_fast(self, x: dict, k: int, w: float) -> bool:
        """Learn the raw event ``x`` (a dict) of known class ``k`` through the compiled path
        (:mod:`streamnb.kernels`), if this part has one and the event is plain; False, having
        changed nothing, if the caller must take the Python path."""
        return False

    def joint_fast(self, x: dict) -> list | None:
        """:meth:`joint_one` of the raw event ``x`` (a dict) through the compiled path, or
        None if the caller must take the Python path."""
        return None

    def step_fast(self, x: dict, k: int, w: float, prior: tuple = ()) -> tuple[list, bool, bool] | None:
        """Predict, then learn, on the compiled path: :meth:`joint_fast` of ``x`` (before any
        change), then :meth:`learn_fast`; with whether it learned (if not, nothing changed
        and the caller learns through the Python path). None, having changed nothing, if
        :meth:`joint_fast` is. Parts with a kernel doing both in one read override this.

        ``prior``: the learner's class counts ``(view, step)`` (see
        :meth:`BaseNB._class_view`), or (). A kernel that can, finishes the step with them:
        the posterior instead of the joint log-likelihoods, and the class counted if it
        learned; the third item says whether it did (this default never does)."""
        jll = self.joint_fast(x)
        if jll is None:
            return None
        return jll, self.learn_fast(x, k, w), False

    def learn_one(self, prepared: Any, k: int, w: float) -> None:
        """Learn one prepared event: the scalar path, touching only the event's cells, and
        keeping what is derived from them current. Override with plain-float code (see
        :meth:`Statistic.flat`); this default learns through :meth:`learn`, then
        :meth:`changed`."""
        self.learn(prepared, k, w)
        self.changed()

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
        """Subtract exactly what :meth:`learn` added (checked first by :meth:`check_unlearn`),
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


class Explanation(dict):
    """Per-feature log-likelihood contributions per class, plus the log prior.

    ``explanation[feature][cls]`` is ``log P(x_feature | cls)``; ``.log_prior[cls]`` is
    ``log P(cls)``; ``.joint()`` sums them, and ``.log_odds(a, b)`` breaks the log-odds of two
    classes down by feature.
    """

    def __init__(self, log_prior: dict, contributions: dict) -> None:
        super().__init__(contributions)
        self.log_prior = log_prior

    def joint(self) -> dict:
        return {c: lp + sum(f[c] for f in self.values()) for c, lp in self.log_prior.items()}

    def log_odds(self, a: Hashable, b: Hashable) -> dict:
        """``{feature: contribution to log P(a|x) - log P(b|x)}``, plus ``'(prior)'``."""
        out = {f: v[a] - v[b] for f, v in self.items()}
        out["(prior)"] = self.log_prior[a] - self.log_prior[b]
        return out


class BaseNB(base.MiniBatchClassifier):
    """Base of the naive Bayes learners: class counts and the parts' statistics."""

    def __init__(self) -> None:
        self._classes = Index()
        self._class_counts = Counts([self._classes])
        self._parts: dict[str, Part] = self._make_parts()
        self._single = next(iter(self._parts.values())) if len(self._parts) == 1 else None
        #: The parts that take plain raw events whole on the compiled path, tried in turn.
        self._wholes: tuple[Part, ...] = (self._single,) if self._single is not None else ()
        self._log_prior_cache: np.ndarray | None = None
        self._class_flat: tuple = ()  # see _class_view
        self._class_flat_key: tuple | None = None

    # -- to be provided by each learner ----------------------------------------------------
    def _make_parts(self) -> dict[str, Part]:
        raise NotImplementedError

    def _split(self, x: Mapping) -> dict[str, Any]:
        """Validate ``x`` and hand each part its prepared features (no state is touched)."""
        ((name, part),) = self._parts.items()
        return {name: part.prepare(x)}

    def _split_frame(self, X: pd.DataFrame) -> dict[str, pd.DataFrame]:
        ((name, _),) = self._parts.items()
        return {name: X}

    # -- River API -------------------------------------------------------------------------
    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def classes(self) -> list:
        """Classes seen so far, in order of first appearance."""
        return list(self._classes.keys)

    @property
    def n_seen(self) -> float:
        """Total (decayed) weight of the events learned (summed exactly, ``O(classes)``)."""
        n = len(self._classes.keys)
        if not n:
            return 0.0
        counts, (step,) = self._class_view()
        if n == 2:  # one rounding: what fsum gives
            return counts[0] + counts[step]
        return math.fsum([counts[c * step] for c in range(n)])

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Learn one event with weight ``w``; a rejected event changes nothing.

        The cost is that of the event (its features, times the classes where a part needs
        it), never that of the model: only the cells of the event are touched.
        """
        if type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            k, w = fast
            for whole in self._wholes:
                if whole.learn_fast(x, k, w):  # the compiled path
                    self._counted_fast(whole, k, w)
                    return
        if type(x) is not dict:
            check_event(x)
        if type(y) not in PLAIN_LABELS:
            check_label(y)
        if w != 1.0:
            w = check_weight(w)
        single = self._single
        prepared = single.prepare(x) if single is not None else self._split(x)
        if w == 0.0:
            return
        k = self._classes.get(y)
        if k < 0:
            k = self._classes.add(y)
            self._class_counts.fit()
        counts, (step,) = self._class_view()
        counts[k * step] += w
        if single is not None:
            single.learn_one(prepared, k, w)
        else:
            for name, part in self._parts.items():
                part.learn_one(prepared[name], k, w)
        self._log_prior_cache = None
        if getattr(self, "max_features", None) is not None:
            self._cap()

    def predict_learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> dict:
        """``predict_proba_one(x)``, then ``learn_one(x, y, w)``: the probabilities of ``x``
        before it is learned, what a prequential loop (and the Kafka service) does per event.
        The same results and errors as the two calls; on the compiled path the event is read
        once (:meth:`Part.step_fast`)."""
        if type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            k, w = fast
            counts, (step,) = self._class_view()
            for whole in self._wholes:
                got = whole.step_fast(x, k, w, (counts, step))
                if got is None:
                    continue
                values, learned, finished = got
                proba = dict(zip(self._classes.keys, values)) if finished else self._proba(values)
                if learned:
                    self._counted_fast(whole, k, w, finished)
                else:
                    self.learn_one(x, y, w)
                return proba
        proba = self.predict_proba_one(x)
        self.learn_one(x, y, w)
        return proba

    def _fast_class(self, y: Any, w: Any) -> tuple[int, float] | None:
        """``(class id, weight)`` if an event (a dict) of label ``y`` and weight ``w`` may take
        the compiled path: a part takes whole events, ``y`` is a plain label already known,
        ``w`` a positive finite float; else None."""
        if (self._wholes and type(y) in PLAIN_LABELS
                and (w == 1.0 or (type(w) is float and 0.0 < w < math.inf))):
            k = self._classes.ids.get(y)
            if k is not None:
                return k, float(w)
        return None

    def _counted_fast(self, part: Part, k: int, w: float, counted: bool = False) -> None:
        """What learning an event of class ``k`` and weight ``w`` does besides, once ``part``
        learned it on the compiled path: the class count (unless ``counted``: the part's
        kernel did it), the caches, the cap."""
        if not counted:
            counts, (step,) = self._class_view()
            counts[k * step] += w
        self._log_prior_cache = None
        self._learned_fast(part)
        if getattr(self, "max_features", None) is not None:
            self._cap()

    def _learned_fast(self, part: Part) -> None:
        """``part`` just learned an event on the compiled path (the learner's other parts had
        nothing in it): what the learner does besides (nothing here)."""

    def _frame_overflow(self, frames: dict[str, pd.DataFrame], start: int) -> int:
        """One past the first row (from ``start``) of a batch taking a vocabulary past the cap."""
        cap = getattr(self, "max_features", None)
        end = len(next(iter(frames.values())))
        if cap is None:
            return end
        for name, part in self._parts.items():
            vocabulary = part.vocabulary
            if vocabulary is None:
                continue
            keys, present = part.frame_keys(frames[name].iloc[start:end])
            new = [j for j, key in enumerate(keys) if key not in vocabulary]
            if not new:
                continue
            seen = present[:, new]
            first = np.where(seen.any(axis=0), seen.argmax(axis=0), len(seen))
            size = len(vocabulary) + np.cumsum(np.bincount(first, minlength=len(seen) + 1))[:-1]
            over = np.flatnonzero(size > cap)
            if len(over):
                end = start + int(over[0]) + 1
        return end

    def unlearn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Subtract exactly what ``learn_one(x, y, w)`` added (e.g. to correct a wrong label).

        Keys (tokens, and the class) whose counts return to zero are forgotten, so learning an
        event and unlearning it restores the previous state exactly (bit for bit for integer
        counts and weights; decay or pruning in between make the subtraction approximate).
        An event that cannot have been learned (unknown class, counts too small) raises
        :class:`InvalidEventError` and changes nothing. Learners whose parts do not count
        (Gaussian) raise ``NotImplementedError``.

        A feature that only ever appeared with value 0 (or absent) in the unlearned event is
        forgotten too, even if an earlier event had introduced it with value 0.
        """
        check_event(x)
        check_label(y)
        w = check_weight(w)
        prepared = self._split(x)
        if w == 0.0:
            return
        k = self._classes.get(y)
        if k < 0 or self._class_counts.n[k] < w:
            raise InvalidEventError(f"class {y!r} has less than {w} events learned: nothing to unlearn")
        for name, part in self._parts.items():
            part.check_unlearn(prepared[name], k, w)
        self._class_counts.add((k,), -w)
        for name, part in self._parts.items():
            part.unlearn(prepared[name], k, w)
        if self._class_counts.n[k] == 0:
            self._class_counts.drop(0, [k])
        self._changed()

    def _cap(self) -> None:
        """Keep each part's vocabulary within ``max_features`` (see :mod:`streamnb.stats.prune`)."""
        cap = getattr(self, "max_features", None)
        if cap is None:
            return
        for part in self._parts.values():
            vocabulary = part.vocabulary
            if vocabulary is not None and len(vocabulary) > cap:
                weights = part.feature_weights()
                part.forget(rarest(weights, len(weights) - target(cap), vocabulary.keys))
                self._changed()

    def joint_log_likelihood(self, x: Mapping) -> dict:
        """``log P(y) + log P(x | y)`` per class (unnormalized log posterior)."""
        return self.explain_one(x).joint()

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        if type(x) is not dict:
            check_event(x)
        classes = self._classes.keys
        if not classes:
            return {}
        jll = None
        if type(x) is dict:
            for whole in self._wholes:
                jll = whole.joint_fast(x)
                if jll is not None:
                    break
        if jll is not None:  # the compiled path (other parts, if any, have no feature here: 0)
            return self._proba(jll)
        single = self._single
        if single is not None:
            jll = single.joint_one(single.prepare(x))
        else:
            prepared = self._split(x)
            jll = [0.0] * len(classes)
            for name, part in self._parts.items():
                jll = [a + b for a, b in zip(jll, part.joint_one(prepared[name]))]
        return self._proba(jll, compiled=False)

    def _proba(self, jll: list, compiled: bool = True) -> dict:
        """The posterior of one event's joint log-likelihoods ``jll`` (per class, without the
        prior), by the compiled kernel where it can."""
        classes = self._classes.keys
        if compiled:
            counts, (step,) = self._class_view()
            p = kernels.native.posterior(jll, counts, step)  # type: ignore[union-attr]
            if p is not None:
                return dict(zip(classes, p))
        return dict(zip(classes, posterior_one(jll, self._log_prior_one())))

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_class_flat"], state["_class_flat_key"] = (), None  # memoryviews: never copied
        return state

    def _class_view(self) -> tuple:
        """The class counts' flat view and strides, retaken when the arrays moved."""
        cc = self._class_counts
        if self._class_flat_key != (cc.generation, len(self._classes.keys)):
            cc.fit()
            self._class_flat = cc.flat("n")
            self._class_flat_key = (cc.generation, len(self._classes.keys))
        return self._class_flat

    def _log_prior_one(self) -> list:
        """``log P(y)`` as a list of floats, from the class counts (O(classes))."""
        counts, (step,) = self._class_view()
        n = [counts[c * step] for c in range(len(self._classes.keys))]
        log_total = math.log(math.fsum(n))
        return [math.log(v) - log_total if v > 0 else -math.inf for v in n]

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.__getitem__) if proba else None

    #: Whether batches may be scipy sparse matrices (token counts), see :meth:`_batch`.
    sparse_batches = False

    #: Capability: ``learn_many`` gives bit for bit the statistics of repeated ``learn_one``
    #: (counts of integer weights; Welford statistics agree only to rounding). A service may
    #: then learn a poll as one batch.
    exact_batch = False

    def _batch(self, X: Any, columns: Any) -> Any:
        """``X`` as a batch: a DataFrame, or a scipy sparse matrix with its ``columns``
        (vocabulary), kept sparse, for the learners that declare :attr:`sparse_batches`."""
        if scipy.sparse.issparse(X):
            if not self.sparse_batches:
                raise InvalidEventError(f"{type(self).__name__} takes a pandas DataFrame, not a sparse matrix")
            if columns is None:
                raise InvalidEventError("a sparse matrix needs its columns=[token names] (its vocabulary)")
            return SparseBatch(X, columns)
        check_frame_arg(X)
        return X

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w: Any = 1.0, *, columns: Any = None) -> None:
        """Learn a batch; the statistics equal those of learning each row in turn.

        ``X`` is a DataFrame, or (token learners) a scipy sparse matrix whose column names
        are given as ``columns`` (e.g. a vectorizer's vocabulary).
        """
        X = self._batch(X, columns)
        y = batch_labels(y, len(X))
        if not len(X):
            return
        labels = check_labels(y)
        weights = batch_weights(w, len(X))
        frames = self._split_frame(X)
        for name, part in self._parts.items():
            part.check_frame(frames[name])
        keep = weights > 0
        if not keep.all():
            frames = {name: f[keep] for name, f in frames.items()}
            labels = [label for label, ok in zip(labels, keep) if ok]
            weights = weights[keep]
        k = self._classes.lookup(labels, add=True)  # new classes in arrival order
        self._class_counts.add_at((k,), weights)
        start = 0
        while start < len(k):
            end = self._frame_overflow(frames, start)
            rows = slice(start, end)
            for name, part in self._parts.items():
                frame = frames[name] if end - start == len(k) else frames[name].iloc[rows]
                part.learn_frame(frame, k[rows], weights[rows])
            self._cap()
            start = end
        self._changed()

    def predict_proba_many(self, X: pd.DataFrame, *, columns: Any = None) -> pd.DataFrame:
        X = self._batch(X, columns)
        if not self._classes.keys:
            return pd.DataFrame(index=X.index)
        frames = self._split_frame(X)
        for name, part in self._parts.items():
            part.check_frame(frames[name])
        log_prior = self._log_prior()
        ll = np.zeros((len(X), len(self._classes.keys)))
        for name, part in self._parts.items():
            ll += part.log_likelihood_frame(frames[name])
        p = posterior(log_prior + _shifted(ll))
        bad = np.isnan(p[:, 0])
        if bad.any():
            p[bad] = posterior(log_prior)
        return pd.DataFrame(p, index=X.index, columns=list(self._classes.keys))

    def predict_many(self, X: pd.DataFrame, *, columns: Any = None) -> pd.Series:
        proba = self.predict_proba_many(X, columns=columns)
        if proba.empty:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        classes = np.array(proba.columns, dtype=object)
        return pd.Series(classes[proba.to_numpy().argmax(axis=1)], index=X.index)

    # -- inspection ------------------------------------------------------------------------
    def explain_one(self, x: Mapping) -> Explanation:
        """Why this prediction: ``log P(x_f | y)`` per feature and class, and ``log P(y)``.

        Features that are missing, unknown or (by the smoothing policy) ignored are absent;
        a model that has learned nothing explains nothing (an empty explanation).
        """
        check_event(x)
        if not self._classes.keys:
            return Explanation({}, {})
        prepared = self._split(x)
        classes = self._classes.keys
        contributions: dict = {}
        for name, part in self._parts.items():
            features, ll = part.log_likelihoods(prepared[name])
            for f, row in zip(features, ll.tolist()):
                contributions[f] = dict(zip(classes, row))
        return Explanation(dict(zip(classes, self._log_prior().tolist())), contributions)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The learned parameters as readable tables (one DataFrame per statistic)."""
        out = {"class_counts": pd.DataFrame({"n": self._class_counts.n}, index=self.classes)}
        for part in self._parts.values():
            out.update(part.tables())
        return out

    def _log_prior(self) -> np.ndarray:
        """``log P(y)`` (derived lazily from the class counts; do not modify)."""
        if self._log_prior_cache is None:
            n = self._class_counts.n
            with np.errstate(divide="ignore"):
                self._log_prior_cache = np.log(n) - math.log(n.sum())
        return self._log_prior_cache

    def _changed(self) -> None:
        """The statistics changed: drop everything derived from them."""
        self._log_prior_cache = None
        self._class_flat_key = None
        for part in self._parts.values():
            part._views_key = ()  # keys may have been dropped: take the views again
            part.changed()

    # -- merge, decay, state ---------------------------------------------------------------
    def _stats(self) -> dict[str, Statistic]:
        """Every statistic of the model, by name."""
        out: dict[str, Statistic] = {"class_counts": self._class_counts}
        for name, part in self._parts.items():
            out.update({f"{name}.{k}": s for k, s in part.stats().items()})
        return out

    def merge(self, other: BaseNB) -> BaseNB:
        """Add what ``other`` learned to this model (same learner and parameters).

        The result is the model of one learner on both streams. With a vocabulary cap
        (``max_features``) the merged vocabulary is cut back like a learner's (to 90% of the
        cap, the lightest tokens first, see :mod:`streamnb.stats.prune`), so memory stays
        bounded; it is then exactly one learner on both streams as long as neither side nor
        the union pruned anything. Once pruning happened the two differ, because pruning
        depends on order: a learner forgets a token at the moment it overflows and counts it
        from zero if it returns, while a merge sees each side's surviving totals. Both keep the
        heaviest tokens.
        """
        if type(other) is not type(self) or other._get_params() != self._get_params():
            raise TypeError("can only merge a learner of the same type and parameters")
        self._merge_extra(other)
        mine, theirs = self._stats(), other._stats()
        for name, stat in mine.items():
            stat += theirs[name]
        self._changed()
        if getattr(self, "max_features", None) is not None:
            self._cap()
        return self

    def _merge_extra(self, other: BaseNB) -> None:
        """Merge anything kept outside the statistics (e.g. MixedNB's feature kinds)."""

    def decay(self, factor: float) -> None:
        """Forget: multiply the weight of everything learned so far by ``factor`` in (0, 1]."""
        if not 0.0 < factor <= 1.0:
            raise ValueError(f"decay factor must be in (0, 1], got {factor}")
        for stat in self._stats().values():
            stat.decay(factor)
        self._changed()

    def decay_half_life(self, n_events: float, half_life: float) -> None:
        """Decay so that an event's weight halves every ``half_life`` events, having learned
        ``n_events`` since the last decay: ``decay(0.5 ** (n_events / half_life))``.

        Call it every few hundred events rather than after each one (a decay touches every
        count).
        """
        if not half_life > 0:
            raise ValueError(f"half_life must be positive, got {half_life}")
        self.decay(0.5 ** (n_events / half_life))

    def to_state(self) -> dict[str, Any]:
        """Plain data (JSON-able values and numpy arrays); see :mod:`streamnb.persistence`."""
        return {
            "classes": self._classes.to_state(),
            "stats": {name: s.to_state() for name, s in self._stats().items()},
            **self._extra_state(),
        }

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_extra_state` saved (before the statistics are loaded)."""

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace this model's state by ``state`` (from :meth:`to_state`); all or nothing."""
        fresh = self.clone()
        fresh._classes.load_state(state["classes"])
        fresh._load_extra_state(state)
        saved, stats = dict(state["stats"]), fresh._stats()
        for name, part in fresh._parts.items():
            part.complete_state(name, saved)
        if set(saved) != set(stats):
            raise StateError(f"{type(self).__name__}: saved statistics {sorted(saved)} do not match")
        for name, stat in stats.items():
            stat.load_state(saved[name])
        self.__dict__.update(fresh.__dict__)
