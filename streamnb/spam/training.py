"""Training regimes for a filter: which messages to learn, and how fast to forget."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from river import base

from streamnb.naive_bayes.checks import check_label
from streamnb.spam.filter import SpamFilter
from streamnb.spam.operating import HAM, SPAM

__all__ = ["REGIMES", "Trainer"]

#: ``everything``: learn every message; ``on_error``: only those predicted wrong (TOE);
#: ``unsure``: those not confidently right (train-until-no-errors thresholds, TUNE/"thick
#: threshold" training).
REGIMES = ("everything", "on_error", "unsure")


class Trainer(base.Wrapper, base.Classifier):
    """Wrap a classifier (a :class:`SpamFilter` or a naive Bayes learner) with a training
    regime and optional forgetting.

    Parameters
    ----------
    model
        The classifier; it receives the same features as the wrapper.
    regime
        One of :data:`REGIMES`. A :class:`SpamFilter` learns a message of a class it has never
        learned whatever the regime (until then every token is unknown, so ``on_error`` would
        wait for an error that cannot come).
    confidence
        For ``regime="unsure"`` with a model other than :class:`SpamFilter`: a message is
        confidently right when the probability of its true label is at least this. A
        :class:`SpamFilter` is confidently right when its three-way verdict equals the label
        (``I >= spam_cutoff`` for spam, ``I <= ham_cutoff`` for ham).
    half_life
        Forget with this half-life, in messages seen (learned or not); None for never. The
        model's ``decay`` is applied every ``decay_every`` messages.
    decay_every
        Messages between two decays.

    Examples
    --------
    >>> trainer = Trainer(SpamFilter(), regime="on_error")
    >>> for x, y in [({"win": 1}, "spam"), ({"win": 1}, "spam"), ({"hi": 1}, "ham")]:
    ...     trainer.learn_one(x, y)
    >>> trainer.n_learned, trainer.n_seen   # the first of each class always
    (3, 3)
    """

    def __init__(
        self,
        model: Any,
        regime: str = "everything",
        confidence: float = 0.9,
        half_life: float | None = None,
        decay_every: int = 100,
    ) -> None:
        if regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
        if half_life is not None and not half_life > 0:
            raise ValueError(f"half_life must be positive, got {half_life}")
        self.model = model
        self.regime = regime
        self.confidence = confidence
        self.half_life = half_life
        self.decay_every = decay_every
        self.n_seen = 0
        self.n_learned = 0

    @property
    def _wrapped_model(self):
        return self.model

    @property
    def _multiclass(self) -> bool:
        return self.model._multiclass

    def _more_tags(self):
        return self.model._tags

    def wants(self, x: Mapping, y: Hashable) -> bool:
        """Whether the regime learns ``(x, y)`` now."""
        if self.regime == "everything":
            return True
        if isinstance(self.model, SpamFilter) and (self.model.labels is None or self.model.n_messages.get(y) == 0.0):
            return True  # a class never learned: every token is x, no verdict can be an error
        if self.regime == "on_error":
            return self.model.predict_one(x) != y
        if isinstance(self.model, SpamFilter):
            labels = self.model.labels
            want = SPAM if labels is not None and y == labels[0] else HAM
            return self.model.classify_one(x).label != want
        return self.model.predict_proba_one(x).get(y, 0.0) < self.confidence

    def learn_one(self, x: Mapping, y: Hashable, **kwargs: Any) -> None:
        check_label(y)  # before the regime looks the label up (an unhashable one would raise TypeError)
        if self.wants(x, y):
            self.model.learn_one(x, y, **kwargs)  # a rejected event raises here: nothing counted
            self.n_learned += 1
        self.n_seen += 1
        if self.half_life is not None and self.n_seen % self.decay_every == 0:
            self.model.decay(0.5 ** (self.decay_every / self.half_life))

    def unlearn_one(self, x: Mapping, y: Hashable, **kwargs: Any) -> None:
        """Delegate to the model: only unlearn a message this trainer did learn."""
        self.model.unlearn_one(x, y, **kwargs)
        self.n_learned -= 1

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        return self.model.predict_proba_one(x, **kwargs)

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        return self.model.predict_one(x, **kwargs)

    @classmethod
    def _unit_test_params(cls):
        yield {"model": SpamFilter(spam_label=True, ham_label=False), "regime": "unsure"}
        yield {"model": SpamFilter(spam_label=True, ham_label=False), "regime": "on_error", "half_life": 50.0,
               "decay_every": 10}  # fmt: skip
