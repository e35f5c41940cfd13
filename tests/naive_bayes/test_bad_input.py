"""Bad input gets a clear streamnb error naming the feature, and the model is left untouched."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import streamnb
from streamnb import persistence

BAD = [
    (streamnb.GaussianNB, {"a": 1.0, "b": "text"}, "b", "expected a number"),
    (streamnb.GaussianNB, {"a": math.inf}, "a", "not finite"),
    (streamnb.GaussianNB, {"a": 1e300}, "a", "beyond"),
    (streamnb.GaussianNB, {"a": [1, 2]}, "a", "expected a number"),
    (streamnb.GaussianNB, {"a": 1 + 2j}, "a", "expected a number"),
    (streamnb.MultinomialNB, {"w": -1.0}, "w", "negative"),
    (streamnb.MultinomialNB, {"w": "3"}, "w", "expected a number"),
    (streamnb.BernoulliNB, {"w": {"nested": 1}}, "w", "expected a number"),
    (streamnb.CategoricalNB, {"c": ["un", "hashable"]}, "c", "hashable"),
    (streamnb.CategoricalNB, {"c": {"x": 1}}, "c", "hashable"),
    (streamnb.MixedNB, {"num": "now a string"}, "num", "expected a number"),
]


def trained(cls):
    model = cls()
    if cls is streamnb.CategoricalNB:
        events = [({"c": "red"}, "x"), ({"c": "blue"}, "y")]
    elif cls is streamnb.MixedNB:
        events = [({"num": 3.0, "c": "red"}, "x"), ({"num": 1.0, "c": "blue"}, "y")]
    else:
        events = [({"a": 0.5, "b": 1.0, "w": 2.0}, "x"), ({"a": 1.5, "b": 0.0, "w": 0.0}, "y")]
    for x, y in events:
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("cls,x,feature,reason", BAD, ids=[f"{c.__name__}-{f}-{r}" for c, _, f, r in BAD])
def test_rejected_event_names_the_feature_and_changes_nothing(cls, x, feature, reason):
    model = trained(cls)
    before = persistence.dumps(model)
    with pytest.raises(streamnb.InvalidEventError) as err:
        model.learn_one(x, "z")  # a new class too: it must not be registered either
    assert err.value.feature == feature and reason in str(err.value)
    assert isinstance(err.value, ValueError) and isinstance(err.value, streamnb.StreamnbError)
    with pytest.raises(streamnb.InvalidEventError):
        model.predict_proba_one(x)
    assert persistence.dumps(model) == before


@pytest.mark.parametrize("y", [None, float("nan"), ["list"]])
def test_bad_labels(y):
    model = trained(streamnb.GaussianNB)
    before = persistence.dumps(model)
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_one({"a": 1.0}, y)
    assert persistence.dumps(model) == before


@pytest.mark.parametrize("w", [-1.0, math.nan, math.inf, "heavy"])
def test_bad_weights(w):
    model = trained(streamnb.GaussianNB)
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_one({"a": 1.0}, "x", w=w)


def test_bad_batch_is_rejected_whole():
    model = trained(streamnb.GaussianNB)
    before = persistence.dumps(model)
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, "oops", 2.0]})
    with pytest.raises(streamnb.InvalidEventError) as err:
        model.learn_many(X, pd.Series(["x", "y", "new"]))
    assert err.value.feature == "b"
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_many(X[["a"]], pd.Series(["x", None, "y"]))
    assert persistence.dumps(model) == before


def test_missing_values_are_skipped_not_learned():
    model = streamnb.MixedNB()
    model.learn_one({"t": 1.0, "c": "red"}, "x")
    model.learn_one({"t": 3.0, "c": "blue"}, "y")
    before = model.predict_proba_one({"t": 2.5})
    for missing in (None, math.nan, pd.NA):
        assert model.predict_proba_one({"t": 2.5, "c": missing}) == before
    model.learn_one({"t": None, "c": math.nan}, "x")  # learns only the class count
    assert model.tables()["count"].loc["x", "t"] == 1.0
    assert model.tables()["class_counts"].loc["x", "n"] == 2.0


def test_a_boolean_category_is_not_the_number_equal_to_it():
    """True == 1 in Python; as categories they stay apart, one by one and in batches."""
    one = streamnb.CategoricalNB()
    one.learn_one({"n": 1, "flag": True}, "a")
    one.learn_one({"n": True, "flag": 1}, "b")
    index = one.tables()["category_counts"].index.tolist()
    assert index == [("n", 1), ("flag", True), ("n", True), ("flag", 1)]
    assert [type(v) for _, v in index] == [int, bool, bool, int]
    batch = streamnb.CategoricalNB()
    batch.learn_many(
        pd.DataFrame([{"n": 1, "flag": True}, {"n": True, "flag": 1}], dtype=object), pd.Series(["a", "b"])
    )
    assert batch.tables()["category_counts"].equals(one.tables()["category_counts"])
    # the category seen with class b only: b is favoured, as for any category
    assert one.predict_proba_one({"n": True})["b"] > 0.5


@pytest.mark.parametrize("x", [
    {"a": np.float32(1.5), "b": 1e50},
    {"a": np.int64(2**62), "b": np.int64(2**62), "c": np.int64(-(2**63))},
    {"a": np.float32(3e38), "b": np.float32(3e38)},
    {"a": np.int32(-(2**31)), "b": 1e99},
])
@pytest.mark.parametrize("cls", [streamnb.GaussianNB, streamnb.BernoulliNB, streamnb.TANClassifier])
def test_valid_numpy_values_learn_without_warnings(cls, x):
    """The shortcut that bounds the values of an event sums them as Python floats: numpy's
    arithmetic warned of an overflow on valid values (an error under ``-W error``)."""
    model, plain = cls(), cls()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.learn_one(x, "y")
        got = model.predict_proba_one(x)
    plain.learn_one({k: float(v) for k, v in x.items()}, "y")
    assert persistence.dumps(model) == persistence.dumps(plain)
    assert got == plain.predict_proba_one({k: float(v) for k, v in x.items()})
