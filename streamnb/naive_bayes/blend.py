"""The blend of two counting learners, read per event: the capability :class:`~streamnb.perkey.PerKey`
needs to answer a key with a shared model plus the key's own.

``predict_proba_blend(x, other, weight)`` is the posterior of ``x`` under a model whose counts
are this model's plus ``weight`` times ``other``'s: class counts, feature counts and their
totals all add, and the smoothing is this model's own, applied to the blended counts and
totals. Only the cells of ``x`` (and the classes) are read: nothing is merged, and the cost is
that of the event.

The number of values a smoothing divides by (``V``: the tokens of a multinomial model,
``|X_f|``: the categories of a feature) is this model's, plus the values of ``x`` that only
``other`` knows. That is the size of the union of both vocabularies whenever ``other``'s
vocabulary lies within this one's, as it does for :class:`~streamnb.perkey.PerKey` (the shared
model learns every key's events; no vocabulary cap forgot a key's token): the blend then equals,
to rounding, one model that learned this model's events once and ``other``'s with weight
``weight``.

>>> from streamnb import MultinomialNB
>>> shared, own = MultinomialNB(), MultinomialNB()
>>> for x, y in [({"cash": 2}, "spam"), ({"lunch": 1}, "ham"), ({"digest": 1}, "spam")]:
...     shared.learn_one(x, y)
>>> own.learn_one({"digest": 1}, "ham"); shared.learn_one({"digest": 1}, "ham")
>>> round(shared.predict_proba_one({"digest": 1})["ham"], 3)
0.545
>>> round(shared.predict_proba_blend({"digest": 1}, own, 3.0)["ham"], 3)
0.824
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.base import BaseNB, posterior_one
from streamnb.naive_bayes.part import Part
from streamnb.naive_bayes.posterior import add_feature
from streamnb.naive_bayes.smoothing import SmoothedPart, lidstone_one
from streamnb.naive_bayes.values import check_event, check_weight

__all__ = ["BlendablePart", "Blendable", "blended_counts"]


def blended_counts(mine: list, theirs: list, weight: float, view: Any, step: int, stride: int, j: int | None,
                   their_view: Any, their_step: int, their_stride: int, their_j: int | None) -> list:
    """Per class of the blend: this model's count at column ``j`` of the flat ``view`` (row
    ``mine[i]``: ``view[mine[i] * step + j * stride]``; 0 where the class or the column is
    unknown, -1 or None) plus ``weight`` times the other's at ``their_j``."""
    out = []
    for a, b in zip(mine, theirs):
        n = view[a * step + j * stride] if a >= 0 and j is not None else 0.0
        if b >= 0 and their_j is not None:
            n += weight * their_view[b * their_step + their_j * their_stride]
        out.append(n)
    return out


class BlendablePart(SmoothedPart):
    """A counting part whose blend (:meth:`joint_blend`) is its smoothing applied to the blended
    counts of the event's features, which :meth:`blend_features` gives."""

    def joint_one(self, prepared: Any) -> list:
        """:meth:`joint` of one event: 0 per class for an event without features, else
        :meth:`joint_features`."""
        n_classes = len(self.classes.keys)
        if not prepared[0]:  # no feature
            return [0.0] * n_classes
        return self.joint_features(prepared, n_classes)

    def joint_features(self, prepared: Any, n_classes: int) -> list:
        """:meth:`joint_one` of an event with features (``prepared``), per class of the first
        ``n_classes``: plain-float code whose cost is that of the event."""
        raise NotImplementedError

    def joint_blend(self, prepared: Any, other: Part, weight: float, mine: list, theirs: list) -> list:
        assert isinstance(other, type(self))
        out = [0.0] * len(mine)
        if not prepared[0]:  # no feature
            return out
        alpha, epsilon = self.alpha, self.epsilon
        for x, nums, dens, n_values in self.blend_features(prepared, other, weight, mine, theirs):
            add_feature(out, [x * lidstone_one(num, den, alpha, n_values, epsilon)
                              for num, den in zip(nums, dens)])
        return out

    def blend_features(self, prepared: Any, other: Any, weight: float, mine: list,
                       theirs: list) -> Iterator[tuple[float, list, list, float]]:  # fmt: skip
        """Per feature of the event (``prepared``, not empty) that counts: its multiplicity
        and, per blended class, the blended count and total that :func:`lidstone_one` smooths,
        and the number of values (see the module)."""
        raise NotImplementedError


class Blendable(BaseNB):
    """A naive Bayes learner whose parts can be blended (:meth:`Part.joint_blend`)."""

    def predict_proba_blend(self, x: Mapping, other: Any, weight: float) -> dict:
        """The posterior of ``x`` under this model's counts plus ``weight`` times ``other``'s
        (a learner of the same kind; see the module). ``weight = 0``, or an ``other`` that has
        learned nothing, gives :meth:`predict_proba_one`."""
        if not isinstance(other, type(self)):
            raise InvalidEventError(f"can only blend a {type(self).__name__} with another, got {type(other).__name__}")
        weight = check_weight(weight)
        their_ids = other.class_ids()
        if weight == 0.0 or not their_ids:
            return self.predict_proba_one(x)
        check_event(x)
        ids = self._classes.ids
        labels = list(self._classes.keys) + [c for c in other.classes if c not in ids]
        mine = [ids.get(c, -1) for c in labels]
        theirs = [their_ids.get(c, -1) for c in labels]
        counts, (step,) = self.class_view()
        their_counts, (their_step,) = other.class_view()
        n = [(counts[a * step] if a >= 0 else 0.0) + (weight * their_counts[b * their_step] if b >= 0 else 0.0)
             for a, b in zip(mine, theirs)]
        log_total = math.log(math.fsum(n))
        log_prior = [math.log(v) - log_total if v > 0 else -math.inf for v in n]
        prepared = self._split(x)
        jll = [0.0] * len(labels)
        for name, part in self._parts.items():
            ll = part.joint_blend(prepared[name], other.part(name), weight, mine, theirs)
            jll = [a + b for a, b in zip(jll, ll)]
        return dict(zip(labels, posterior_one(jll, log_prior)))
