"""Wrong-typed arguments get a StreamnbError saying what was expected; an empty model answers."""

from __future__ import annotations

import pandas as pd
import pytest

import streamnb
from streamnb import StreamnbError

LEARNERS = {
    "CategoricalNB": streamnb.CategoricalNB,
    "GaussianNB": streamnb.GaussianNB,
    "MultinomialNB": streamnb.MultinomialNB,
    "BernoulliNB": streamnb.BernoulliNB,
    "ComplementNB": streamnb.ComplementNB,
    "MixedNB": streamnb.MixedNB,
    "TANClassifier": streamnb.TANClassifier,
    "ChowLiuClassifier": streamnb.ChowLiuClassifier,
    "AODE": streamnb.AODE,
    "BayesNetClassifier": lambda: streamnb.BayesNetClassifier([("y", "a")]),
    "Forgetful": lambda: streamnb.Forgetful(streamnb.CategoricalNB(), half_life=100),
    "Windowed": lambda: streamnb.Windowed(streamnb.CategoricalNB(), window=100),
    "DriftTriggered": lambda: streamnb.DriftTriggered(streamnb.CategoricalNB()),
    "SpamFilter": streamnb.SpamFilter,
    "PerKey": lambda: streamnb.PerKey(streamnb.SpamFilter(), by="user"),
}

NOT_EVENTS = [None, "some text", 5, ["a", 1], b"bytes"]

#: learners of numbers only (the others take string categories, or strings as tokens)
NUMERIC = {"GaussianNB", "MultinomialNB", "BernoulliNB", "ComplementNB"}


def test_every_exported_learner_is_covered():
    exported = {
        name for name in streamnb.__all__
        if isinstance(getattr(streamnb, name), type) and hasattr(getattr(streamnb, name), "learn_one")
    }
    # Tokenizer transforms text (strings are its input); Trainer drives one of these learners
    assert exported - {"Tokenizer", "Trainer"} <= set(LEARNERS)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("x", NOT_EVENTS, ids=repr)
def test_an_event_that_is_not_a_dict_is_refused(name, x):
    model = LEARNERS[name]()
    with pytest.raises(StreamnbError, match="expected a dict"):
        model.learn_one(x, "spam")
    model.learn_one({"a": 1}, "spam")
    for method in ("predict_proba_one", "predict_one"):
        with pytest.raises(StreamnbError, match="expected a dict"):
            getattr(model, method)(x)
    if hasattr(model, "explain_one"):
        with pytest.raises(StreamnbError, match="expected a dict"):
            model.explain_one(x)


BATCH_LEARNERS = sorted(name for name, make in LEARNERS.items() if hasattr(make(), "learn_many"))


@pytest.mark.parametrize("name", BATCH_LEARNERS)
@pytest.mark.parametrize("X", [None, "text", [{"a": 1}]], ids=repr)
def test_a_batch_that_is_not_a_frame_is_refused(name, X):
    model = LEARNERS[name]()
    with pytest.raises(StreamnbError, match="expected a pandas DataFrame"):
        model.learn_many(X, pd.Series(["spam"]))
    with pytest.raises(StreamnbError, match="expected a pandas DataFrame"):
        model.predict_proba_many(X)


@pytest.mark.parametrize("name", BATCH_LEARNERS)
@pytest.mark.parametrize("values", [[[1, 2], [3, 0]], [["u", "v"], ["w", "u"]], [[1.5, "v"], [0.5, "w"]]], ids=repr)
def test_a_batch_whose_column_names_repeat_is_refused_and_changes_nothing(name, values):
    """A frame with two columns of one name has no event equivalent (a dict has one value per
    key): refused, whatever the learner or the columns' kinds, before anything is learned."""
    from streamnb import persistence

    model = LEARNERS[name]()
    before = persistence.dumps(model)
    X = pd.DataFrame(values, columns=["a", "a"])
    with pytest.raises(StreamnbError, match="column names repeat"):
        model.learn_many(X, pd.Series(["spam", "ham"]))
    with pytest.raises(StreamnbError, match="column names repeat"):
        model.predict_proba_many(X)
    assert persistence.dumps(model) == before


BAD_LABELS_AND_WEIGHTS = {
    "no labels": (None, 1.0),
    "labels as a frame": (pd.DataFrame({"y": ["spam", "ham"]}), 1.0),
    "labels as a string": ("sh", 1.0),
    "too few labels": (["spam"], 1.0),
    "too many weights": (["spam", "ham"], [1.0, 1.0, 1.0]),
    "weights in two dimensions": (["spam", "ham"], [[1.0, 1.0], [1.0, 1.0]]),
    "weights as text": (["spam", "ham"], "heavy"),
    "a negative weight": (["spam", "ham"], [1.0, -1.0]),
    "a complex weight": (["spam", "ham"], 1j),
}


@pytest.mark.parametrize("name", BATCH_LEARNERS)
@pytest.mark.parametrize("case", sorted(BAD_LABELS_AND_WEIGHTS))
def test_a_batch_with_bad_labels_or_weights_is_refused_and_changes_nothing(name, case):
    from streamnb import persistence

    y, w = BAD_LABELS_AND_WEIGHTS[case]
    model = LEARNERS[name]()
    before = persistence.dumps(model)
    with pytest.raises(StreamnbError):
        model.learn_many(pd.DataFrame({"a": ["u", "v"]} if name not in NUMERIC else {"a": [1, 2]}), y, w)
    assert persistence.dumps(model) == before


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_an_empty_model_answers(name):
    model = LEARNERS[name]()
    x = {"a": 1}
    if name in ("SpamFilter", "PerKey"):  # a spam filter: two classes (True = spam until labels are seen)
        assert model.predict_proba_one(x) == {True: 0.5, False: 0.5}
        return
    assert model.predict_proba_one(x) == {}
    assert model.predict_one(x) is None
    if hasattr(model, "joint_log_likelihood"):
        assert model.joint_log_likelihood(x) == {}
    if hasattr(model, "explain_one"):
        explanation = model.explain_one(x)
        assert dict(explanation) == {} and explanation.log_prior == {}
    if hasattr(model, "predict_proba_many"):
        assert model.predict_proba_many(pd.DataFrame([x])).shape == (1, 0)
