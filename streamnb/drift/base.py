"""What the drift wrappers share: the River wrapper plumbing and the wrapped learner's reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from river import base

__all__ = ["DriftWrapper", "has_relearn"]


def has_relearn(model: Any) -> bool:
    """Whether ``model`` (or what it wraps) learns a structure that :meth:`relearn` refreshes."""
    return callable(getattr(model, "relearn", None))


class DriftWrapper(base.Wrapper, base.MiniBatchClassifier):
    """A classifier that owns one streamnb learner, ``model``, and forgets part of its past.

    Subclasses keep the wrapped learner(s) and implement :meth:`_reader`: the learner that
    answers reads (predictions, inspection), brought up to date. Every read goes through it.
    """

    model: Any

    @property
    def _wrapped_model(self) -> Any:
        return self.model

    @property
    def _multiclass(self) -> bool:
        return True

    def _reader(self) -> Any:
        raise NotImplementedError

    # -- reads -----------------------------------------------------------------------------
    @property
    def learner(self) -> Any:
        """The learner that answers predictions, with its statistics up to date (read only:
        learn through the wrapper)."""
        return self._reader()

    @property
    def classes(self) -> list:
        return list(self._reader().classes)

    @property
    def n_seen(self) -> float:
        """Weight of what the model remembers (after forgetting)."""
        return float(self._reader().n_seen)

    def _ask(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method`` of the learner that answers, called with ``args``."""
        return getattr(self._reader(), method)(*args, **kwargs)

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        return self._ask("predict_proba_one", self._features(x), **kwargs)

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        return self._ask("predict_one", self._features(x), **kwargs)

    def predict_proba_many(self, X: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
        return self._ask("predict_proba_many", self._features_frame(X), **kwargs)

    def predict_many(self, X: pd.DataFrame, **kwargs: Any) -> pd.Series:
        return self._ask("predict_many", self._features_frame(X), **kwargs)

    def explain_one(self, x: Mapping) -> Any:
        """As the wrapped learner's ``explain_one``, on what the model remembers."""
        return self._ask("explain_one", self._features(x))

    def relearn(self) -> None:
        """Recompute the structure of the learner that answers, if it has one (TAN...)."""
        reader = self._reader()
        if has_relearn(reader):
            reader.relearn()

    def _features(self, x: Mapping) -> Mapping:
        """The features the wrapped learner sees (a time key, say, removed)."""
        return x

    def _features_frame(self, X: pd.DataFrame) -> pd.DataFrame:
        return X
