"""DriftTriggered on an abrupt STAGGER concept change: detection, reset / relearn, recovery.

The stream is STAGGER concept 0 ("small and red") for 1500 events, then concept 2 ("medium or
large"), noise-free. Recovery = the accuracy over the last 100 test-then-train predictions is
back at 95% or more. Stated bounds (measured with these seeds: detection after 37 events,
recovery after about 135 (triggered), 340 (half-life 200), 290 (window 400); the static model
never recovers within 1500 events):

- the detector fires within 100 events of the change, not before;
- drift-triggered models (naive Bayes and TAN) recover within N_TRIGGERED = 300 events;
- a half-life of 200 events recovers within 700; a window of 400 events within 500.
"""

from __future__ import annotations

from collections import deque

import pandas as pd
import pytest
from river.datasets import synth

import streamnb
from streamnb.drift import DriftTriggered, Forgetful, Windowed

CHANGE = 1500
N_TRIGGERED = 300


def stagger(n: int = 3000) -> list:
    before = synth.STAGGER(classification_function=0, seed=0).take(CHANGE)
    after = synth.STAGGER(classification_function=2, seed=1).take(n - CHANGE)
    # values as strings: categorical for every learner (TAN puts numbers in Gaussian leaves)
    return [({k: str(v) for k, v in x.items()}, y) for x, y in list(before) + list(after)]


def recovery(model, rows) -> int | None:
    """Events after the change until the rolling accuracy (100 events) is back to 95%."""
    last: deque = deque(maxlen=100)
    for i, (x, y) in enumerate(rows):
        last.append(model.predict_one(x) == y)
        model.learn_one(x, y)
        if i == CHANGE - 1:
            assert sum(last) >= 95  # the model had learned the first concept
        if i >= CHANGE + 99 and sum(last) >= 95:
            return i + 1 - CHANGE
    return None


@pytest.mark.parametrize("make", [streamnb.CategoricalNB, streamnb.TANClassifier])
def test_detector_resets_and_accuracy_recovers(make):
    model = DriftTriggered(make())
    events = recovery(model, stagger())
    assert model.drifts and CHANGE < model.drifts[0] <= CHANGE + 100
    assert events is not None and events <= N_TRIGGERED


def test_static_model_does_not_recover():
    assert recovery(streamnb.CategoricalNB(), stagger()) is None


@pytest.mark.parametrize("model,bound", [
    (Forgetful(streamnb.CategoricalNB(), half_life=200), 700),
    (Windowed(streamnb.CategoricalNB(), window=400, blocks=4), 500),
])
def test_forgetting_models_recover(model, bound):
    events = recovery(model, stagger())
    assert events is not None and events <= bound


def test_drift_triggers_tan_relearn_and_shrinks_the_past():
    """TAN that never relearns by itself: the drift makes it compute its tree, on a past
    shrunk to ``keep`` events of weight (a spanning tree: 20 events pay for no priced edge)."""
    model = DriftTriggered(streamnb.TANClassifier(relearn_every=0, edge_penalty=None), keep=20.0)
    rows = stagger(2000)
    for x, y in rows[:CHANGE]:
        model.learn_one(x, y)
    assert model.learner.history == [] and model.drifts == []
    for x, y in rows[CHANGE:]:
        model.learn_one(x, y)
        if model.drifts:
            break
    drift = model.drifts[0]
    assert model.learner.n_seen == pytest.approx(20.0)
    assert model.learner.history and model.learner.history[0]["event"] == drift


def test_keep_none_relearns_a_forgetful_tan_without_forgetting():
    inner = Forgetful(streamnb.TANClassifier(relearn_every=0), half_life=300)
    model = DriftTriggered(inner, keep=None)
    for x, y in stagger(1700):
        model.learn_one(x, y)
    assert model.drifts and model.learner.learner.history  # relearn reached the TAN inside
    before = len(model.learner.learner.history)
    model.relearn()  # wrappers pass relearn() through: nothing changed since the last one
    assert len(model.learner.learner.history) == before


def test_state_roundtrip_keeps_drifts():
    model = DriftTriggered(streamnb.CategoricalNB())
    for x, y in stagger(1700):
        model.learn_one(x, y)
    copy = model.clone()
    copy.load_state(model.to_state())
    assert copy.drifts == model.drifts
    x = {"size": "0", "color": "0", "shape": "1"}
    assert copy.predict_proba_one(x) == model.predict_proba_one(x)


@pytest.mark.parametrize("predicted, learned", [
    ({"n": 2.0}, {"n": pd.NA}), ({"n": pd.NA}, {"n": 2.0}), ({"n": pd.NA}, {"n": pd.NA}),
    ({"n": 2.0, "m": pd.NA}, {"n": 2.0, "m": 1.0}),
])
def test_a_missing_pd_na_after_a_prediction_is_learned(predicted, learned):
    """The event remembered from the last prediction is compared without ``==``'s truth value
    (``pd.NA == 2.0`` has none): the event is learned as the wrapped learner learns it."""
    model, plain = DriftTriggered(streamnb.GaussianNB(), keep=None), streamnb.GaussianNB()
    for m in (model, plain):
        m.learn_one({"n": 1.0}, "a")
        m.learn_one({"n": 3.0}, "b")
    model.predict_proba_one(predicted)
    model.learn_one(learned, "a")
    plain.learn_one(learned, "a")
    assert model.predict_proba_one({"n": 2.0}) == plain.predict_proba_one({"n": 2.0})
    assert model.n_seen == plain.n_seen == 3.0
