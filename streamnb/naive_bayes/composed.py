"""The cells path of a learner with several parts: the event split, each part's cells on its share.

A learner whose parts each have a cells path (:meth:`Part.joint_fast`, :meth:`Part.learn_fast`,
:meth:`Part.step_fast`) runs an event that spans several parts on the cells too: :meth:`ComposedNB._route`
splits the raw event into one sub-event per part (in the order of the parts), each part's
kernel scores and learns its own sub-event, and the joint log-likelihoods add up, as the Python
path adds the parts' :meth:`Part.joint_one`. No kernel knows about the others.

What keeps "nothing changes before an error" and the Python path's results:

- every part scores its sub-event before any part learns (``predict_learn_one``); a kernel
  that scores a sub-event has read and checked all of it, so its part's ``prepare`` accepts it;
- on ``learn_one`` alone, the first part with a sub-event learns all of it or nothing (its
  kernel's rule); :meth:`ComposedNB._route` returns the other sub-events only when their parts'
  ``prepare`` accept them, so a later part whose kernel leaves its sub-event (a new key to
  register) learns it through its Python path without any error possible;
- any part that cannot score (a kernel returning None) sends the whole event to the Python path,
  before anything changed.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from operator import add
from typing import Any

from streamnb.naive_bayes.base import BaseNB
from streamnb.naive_bayes.part import Part

__all__ = ["ComposedNB"]


class ComposedNB(BaseNB):
    """A :class:`BaseNB` whose events go, part by part, through the parts' cells paths.

    Subclasses implement :meth:`_route` (and :meth:`_whole` if a part can take whole events of
    one kind), and leave ``_wholes`` empty.
    """

    def _route(self, x: dict) -> list[tuple[Part, dict]] | None:
        """The parts ``x`` has features for, in the order of ``_parts``, each with its sub-event
        ``(part, sub-event)``; None if ``x`` takes the Python path (or has no feature). Every
        sub-event but the first must be one its part's ``prepare`` accepts (see the module's
        docstring)."""
        raise NotImplementedError

    def _joint_fast(self, shares: list) -> list | None:
        """The joint log-likelihoods of the sub-events, each part's kernel on its own; None if
        one takes the Python path. Parts without a sub-event add nothing (0)."""
        jll = None
        for part, sub in shares:
            got = part.joint_fast(sub)
            if got is None:
                return None
            jll = got if jll is None else [*map(add, jll, got)]
        return jll

    #: Whether :meth:`_whole` is asked before :meth:`_route`: events of one kind come in runs,
    #: and a part's kernel reads such an event without the split; after an event of several
    #: kinds the route goes first. Only a matter of speed.
    _whole_first = True

    def _whole(self, x: dict) -> Part | None:
        """A part whose kernel may take ``x`` whole (it refuses what is not its own, changing
        nothing), or None."""
        return None

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        if type(x) is dict and self._classes.keys:
            if self._whole_first and (whole := self._whole(x)) is not None:
                jll = whole.joint_fast(x)
                if jll is not None:
                    return self._proba(jll)
            shares = self._route(x)
            if shares is not None:
                self._whole_first = len(shares) == 1
                jll = self._joint_fast(shares)
                if jll is not None:
                    return self._proba(jll)
        return super().predict_proba_one(x, **kwargs)

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        if type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            k, v = fast
            if self._whole_first and (whole := self._whole(x)) is not None and whole.learn_fast(x, k, v):
                self._counted_fast(k, v, whole)
                return
            shares = self._route(x)
            if shares is not None:
                self._whole_first = len(shares) == 1
                rest = iter(shares)
                first, sub = next(rest)
                if first.learn_fast(sub, k, v):  # all or nothing: if not, nothing changed
                    for part, sub in rest:
                        if not part.learn_fast(sub, k, v):  # new keys: the part's Python path registers them
                            part.learn_one(part.prepare(sub), k, v)
                    self._counted_fast(k, v)
                    return
        super().learn_one(x, y, w)

    def predict_learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> dict:
        if type(x) is dict and (fast := self._fast_class(y, w)) is not None:
            k, v = fast
            if (self._whole_first and (whole := self._whole(x)) is not None
                    and (proba := self._step_whole(whole, x, y, k, v)) is not None):
                return proba
            shares = self._route(x)
            if shares is not None:
                self._whole_first = len(shares) == 1
                stepped = self._step_shares(shares, k, v)
                if stepped is not None:
                    return stepped
        return super().predict_learn_one(x, y, w)

    def _step_shares(self, shares: list, k: int, w: float) -> dict | None:
        """``predict_learn_one`` of the routed event, or None (nothing changed): every part
        scores before any learns; the last one scores and learns in one read
        (:meth:`Part.step_fast`)."""
        last, last_sub = shares[-1]
        jll = self._joint_fast(shares[:-1]) if len(shares) > 1 else []
        step = None if jll is None else last.step_fast(last_sub, k, w)
        if step is None:
            return None
        values, learned = step
        proba = self._proba([*map(add, jll, values)] if jll else values)
        for part, sub in shares[:-1]:
            if not part.learn_fast(sub, k, w):  # scored, so its part's prepare accepts it
                part.learn_one(part.prepare(sub), k, w)
        if not learned:
            last.learn_one(last.prepare(last_sub), k, w)
        self._counted_fast(k, w)
        return proba
