"""Forgetting and drift handling for every streamnb learner, as River wrappers.

- :class:`Forgetful`: exponential decay with a half-life in events or in time, O(1) per event;
- :class:`Windowed`: a sliding window made of mergeable blocks (no event is stored);
- :class:`DriftTriggered`: a River drift detector on the error stream triggers forgetting
  (reset, or shrink the past to a few events) and structure relearning (TAN, Chow-Liu).

They compose: ``DriftTriggered(Forgetful(TANClassifier(), half_life=2000), keep=None)``.
"""

from streamnb.drift.forgetful import Forgetful
from streamnb.drift.triggered import DriftTriggered
from streamnb.drift.window import Windowed

__all__ = ["DriftTriggered", "Forgetful", "Windowed"]
