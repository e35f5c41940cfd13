"""What every naive Bayes learner shares: class counts, one posterior, batches, merge, decay, state.

A learner is a class prior plus one or more *parts*: a part owns the statistics of some
features and returns their log-likelihood per class (see :class:`~streamnb.naive_bayes.part.Part`).
``GaussianNB`` has one Gaussian part, ``MixedNB`` a Gaussian and a categorical part; the posterior
is computed once, here, by :mod:`streamnb.naive_bayes.posterior`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse
from river import base

from streamnb import kernels
from streamnb.exceptions import InvalidEventError, StateError
from streamnb.naive_bayes.batches import SparseBatch, batch_labels, batch_weights, check_frame_arg
from streamnb.naive_bayes.checks import PLAIN_LABELS, check_event, check_label, check_labels, check_weight
from streamnb.naive_bayes.explanation import Explanation
from streamnb.naive_bayes.part import Part
from streamnb.naive_bayes.posterior import add_feature, posterior, posterior_one, shifted_evidence
from streamnb.stats import Counts, Index, cells, rarest, target
from streamnb.stats.base import Statistic

__all__ = ["BaseNB", "Part", "Explanation", "posterior", "posterior_one", "add_feature"]

event_ops = kernels.compiled(cells)


class BaseNB(base.MiniBatchClassifier):
    """Base of the naive Bayes learners: class counts and the parts' statistics."""

    def __init__(self) -> None:
        self._classes = Index()
        self._class_counts = Counts([self._classes])
        self._parts: dict[str, Part] = self._make_parts()
        self._single = next(iter(self._parts.values())) if len(self._parts) == 1 else None
        #: The parts that take plain raw events whole on the cells path, tried in turn.
        self._wholes: tuple[Part, ...] = (self._single,) if self._single is not None else ()
        self._log_prior_cache: np.ndarray | None = None
        self._class_flat: tuple = ()  # see class_view
        self._class_flat_key: tuple | None = None
        self._class_weights: Any = None  # the class_view held for each event's posterior

    #: A learner of one part: its name, its class, and the learner's parameters (attribute
    #: names) that follow the class index and counts in the part's constructor.
    one_part: tuple[str, Callable[..., Part], tuple[str, ...]] | None = None

    # -- to be provided by each learner ----------------------------------------------------
    def _make_parts(self) -> dict[str, Part]:
        """The parts by name: :attr:`one_part`'s, unless a learner of several overrides it."""
        if self.one_part is None:
            raise NotImplementedError
        name, make, params = self.one_part
        return {name: make(self._classes, self._class_counts, *(getattr(self, p) for p in params))}

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
        counts, (step,) = self.class_view()
        if n == 2:  # one rounding: what fsum gives
            return counts[0] + counts[step]
        return math.fsum([counts[c * step] for c in range(n)])

    def n_seen_counts(self, events: int) -> bool:
        """Capability: whether the next ``events`` events learned with weight 1 each add exactly
        1.0 to :attr:`n_seen` (its class counts are whole numbers and stay below 2**53, where
        sums of whole floats are exact), so that a caller may count them instead of reading
        :attr:`n_seen` per event (the Kafka service's step). False after fractional weights or
        a decay; ``O(classes)``."""
        n = len(self._classes.keys)
        if not n:
            return events < 2.0**53
        counts, (step,) = self.class_view()
        total = 0.0
        for c in range(n):
            v = counts[c * step]
            if not v.is_integer():
                return False
            total += v
        return total + events < 2.0**53

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Learn one event with weight ``w``; a rejected event changes nothing.

        The cost is that of the event (its features, times the classes where a part needs
        it), never that of the model: only the cells of the event are touched.
        """
        if self._wholes and type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            k, w = fast
            for whole in self._wholes:
                if whole.learn_fast(x, k, w):  # the cells path
                    self._counted_fast(k, w, whole)
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
        counts, (step,) = self.class_view()
        counts[k * step] += w
        if single is not None:
            single.learn_one(prepared, k, w)
        else:
            self._learn_split(prepared, k, w)
        self._log_prior_cache = None
        if getattr(self, "max_features", None) is not None:
            self._cap()

    def _learn_split(self, prepared: dict[str, Any], k: int, w: float) -> None:
        """Learn one event split by :meth:`_split` (class id ``k``, weight ``w > 0``), part by part."""
        for name, part in self._parts.items():
            part.learn_one(prepared[name], k, w)

    def predict_learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> dict:
        """``predict_proba_one(x)``, then ``learn_one(x, y, w)``: the probabilities of ``x``
        before it is learned, what a prequential loop (and the Kafka service) does per event.
        The same results and errors as the two calls; on the cells path the event is read
        once (:meth:`Part.step_fast`)."""
        if self._wholes and type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            for whole in self._wholes:
                if (proba := self._step_whole(whole, x, y, *fast)) is not None:
                    return proba
        proba = self.predict_proba_one(x)
        self.learn_one(x, y, w)
        return proba

    def _step_whole(self, whole: Part, x: dict, y: Hashable, k: int, w: float) -> dict | None:
        """``predict_learn_one`` of ``x`` (of class id ``k``, weight ``w``) on the cells path of
        ``whole``, the part that takes the whole event; None, having changed nothing, if that
        path refuses it. An event scored there but not learned (a new key) is learned through
        :meth:`learn_one`."""
        got = whole.step_fast(x, k, w)
        if got is None:
            return None
        values, learned = got
        proba = self._proba(values)
        if learned:
            self._counted_fast(k, w, whole)
        else:
            self.learn_one(x, y, w)
        return proba

    def _fast_class(self, y: Any, w: Any) -> tuple[int, float] | None:
        """``(class id, weight)`` if an event (a dict) of label ``y`` and weight ``w`` may take
        the cells path: ``y`` is a plain label already known, ``w`` a positive finite float;
        else None."""
        if type(y) in PLAIN_LABELS and (w == 1.0 or (type(w) is float and 0.0 < w < math.inf)):
            k = self._classes.ids.get(y)
            if k is not None:
                return k, float(w)
        return None

    def _counted_fast(self, k: int, w: float, part: Part | None = None) -> None:
        """What learning an event of class ``k`` and weight ``w`` does besides, once the parts
        learned it on the cells path (``part``: it alone had features in it): the class count,
        the caches, the cap."""
        counts, (step,) = self.class_view()
        counts[k * step] += w
        self._log_prior_cache = None
        if getattr(self, "max_features", None) is not None:
            self._cap()

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

        The counting parts (BernoulliNB, MultinomialNB, ComplementNB) keep, per feature, the
        weight of the events that gave it a value not present (a count of 0), so a feature is
        forgotten exactly when no learned event is left to hold it
        (:class:`~streamnb.naive_bayes.part.ZeroWeights`).
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
        if jll is not None:  # the cells path (other parts, if any, have no feature here: 0)
            return self._proba(jll)
        single = self._single
        if single is not None:
            jll = single.joint_one(single.prepare(x))
        else:
            jll = self._joint_split(self._split(x))
        return self._proba(jll)

    def _joint_split(self, prepared: dict[str, Any]) -> list:
        """The log-likelihood per class of one event split by :meth:`_split`: the sum of the
        parts' (:meth:`Part.joint_one`), in their order."""
        jll = [0.0] * len(self._classes.keys)
        for name, part in self._parts.items():
            jll = [a + b for a, b in zip(jll, part.joint_one(prepared[name]))]
        return jll

    def _proba(self, jll: list) -> dict:
        """The posterior of one event's joint log-likelihoods ``jll`` (per class, without the
        prior): :func:`streamnb.stats.cells.posterior`, or where it cannot (values that are not
        finite) :func:`posterior_one`."""
        self.class_view()
        p = self._class_weights.posterior(jll)
        if p is None:
            p = posterior_one(jll, self._log_prior_one())
        return dict(zip(self._classes.keys, p))

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_class_flat"], state["_class_flat_key"] = (), None  # memoryviews: never copied
        state["_class_weights"] = None
        return state

    def class_ids(self) -> Mapping[Hashable, int]:
        """Each class's id, its row in the statistics (read only)."""
        return self._classes.ids

    def part(self, name: str) -> Part:
        """The part of this learner called ``name`` (read only: learn through the learner)."""
        return self._parts[name]

    def class_view(self) -> tuple:
        """The class counts as a flat view and its strides: class ``k`` has weight
        ``view[k * strides[0]]`` (read only; retaken when the arrays moved, valid until the next
        change)."""
        cc = self._class_counts
        if self._class_flat_key != (cc.generation, len(self._classes.keys)):
            cc.fit()
            self._class_flat = cc.flat("n")
            self._class_weights = event_ops.ClassWeights(self._class_flat[0], self._class_flat[1][0])
            self._class_flat_key = (cc.generation, len(self._classes.keys))
        return self._class_flat

    def _log_prior_one(self) -> list:
        """``log P(y)`` as a list of floats, from the class counts (O(classes))."""
        counts, (step,) = self.class_view()
        n = [counts[c * step] for c in range(len(self._classes.keys))]
        log_total = math.log(math.fsum(n))
        return [math.log(v) - log_total if v > 0 else -math.inf for v in n]

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.__getitem__) if proba else None

    #: Whether batches may be scipy sparse matrices (token counts), see :meth:`_batch`.
    sparse_batches = False

    #: Capability: ``learn_many`` gives bit for bit the statistics of repeated ``learn_one``
    #: (counts of integer weights; Welford statistics agree only to rounding). The Kafka service
    #: then learns a poll as one batch when asked to (``--batch-learning always``).
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
            whole = end - start == len(k)
            self._learn_frames({name: f if whole else f.iloc[rows] for name, f in frames.items()}, k[rows],
                               weights[rows])
            self._cap()
            start = end
        self._changed()

    def _learn_frames(self, frames: dict[str, pd.DataFrame], k: np.ndarray, w: np.ndarray) -> None:
        """Learn rows of a batch (checked; classes ``k``, weights ``w``), part by part."""
        for name, part in self._parts.items():
            part.learn_frame(frames[name], k, w)

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
        p = posterior(log_prior + shifted_evidence(ll))
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
        for features, ll in self._terms_split(prepared):
            for f, row in zip(features, ll.tolist()):
                contributions[f] = dict(zip(classes, row))
        return Explanation(dict(zip(classes, self._log_prior().tolist())), contributions)

    def _terms_split(self, prepared: dict[str, Any]) -> list[tuple[list, np.ndarray]]:
        """Each part's features and their log-likelihoods (:meth:`Part.log_likelihoods`) of
        one event split by :meth:`_split`, in the parts' order."""
        return [part.log_likelihoods(prepared[name]) for name, part in self._parts.items()]

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
            part.forget_views()  # keys may have been dropped
            part.changed()

    # -- merge, decay, state ---------------------------------------------------------------
    def _stats(self) -> dict[str, Statistic]:
        """Every statistic of the model, by name."""
        out: dict[str, Statistic] = {"class_counts": self._class_counts}
        for name, part in self._parts.items():
            out.update({f"{name}.{k}": s for k, s in part.stats().items()})
        return out

    def merge(self, other: BaseNB) -> BaseNB:
        """Add what ``other`` learned to this model (same learner and parameters): the model
        of one learner on both streams.

        With a vocabulary cap (``max_features``) the merged vocabulary is cut back like a
        learner's (to 90% of the cap, lightest tokens first: :mod:`streamnb.stats.prune`). Once
        anything was pruned, the merge and one learner differ (both keep the heaviest tokens):
        a learner forgets a token when it overflows, a merge sees each side's surviving totals.
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

    def _complete_state(self, saved: dict[str, Any]) -> None:
        """Add to ``saved`` (statistics' states by name) what a state written by an earlier
        version lacks and can be derived: each part's (:meth:`Part.complete_state`)."""
        for name, part in self._parts.items():
            part.complete_state(name, saved)

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace this model's state by ``state`` (from :meth:`to_state`); all or nothing."""
        fresh = self.clone()
        fresh._classes.load_state(state["classes"])
        fresh._load_extra_state(state)
        saved, stats = dict(state["stats"]), fresh._stats()
        fresh._complete_state(saved)
        if set(saved) != set(stats):
            raise StateError(f"{type(self).__name__}: saved statistics {sorted(saved)} do not match")
        for name, stat in stats.items():
            stat.load_state(saved[name])
        self.__dict__.update(fresh.__dict__)
