"""The variance smoothing (``var_smoothing`` times the largest pooled spread) follows a batch
learned after a prediction: it was kept from the prediction before the batch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streamnb

LEARNERS = {
    "gaussian": streamnb.GaussianNB,
    "mixed": streamnb.MixedNB,
    "aode": streamnb.AODE,
    "chow-liu": streamnb.ChowLiuClassifier,
    "tan": streamnb.TANClassifier,
}


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_a_batch_after_a_prediction_updates_the_variance_smoothing(make):
    m = make()
    m.learn_one({"n": 1.0}, "a")
    m.predict_proba_one({"n": 0.0})
    m.learn_many(pd.DataFrame({"n": [3.0]}), pd.Series(["b"]))
    assert m.predict_proba_one({"n": 0.0}) == {"a": 1.0, "b": 0.0}


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_batches_between_predictions_equal_one_by_one(make):
    rng = np.random.default_rng(4)
    rows = [({"n": float(rng.normal(3 * (i % 2), 1e-3 + i % 3)), "m": float(rng.normal())}, "ab"[i % 2])
            for i in range(60)]
    batch, one = make(), make()
    queries = [{"n": 0.0}, {"n": 1.5, "m": -0.2}, {"m": 2.0}]
    for start in range(0, 60, 7):
        part = rows[start : start + 7]
        for q in queries:  # a prediction before each batch
            batch.predict_proba_one(q)
        batch.learn_many(pd.DataFrame([x for x, _ in part]), pd.Series([y for _, y in part]))
        for x, y in part:
            one.learn_one(x, y)
        for q in queries:
            assert batch.predict_proba_one(q) == pytest.approx(one.predict_proba_one(q), rel=1e-9, abs=1e-300)
