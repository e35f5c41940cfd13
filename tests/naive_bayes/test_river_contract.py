"""Every learner passes River's estimator checks, with nothing skipped."""

from __future__ import annotations

import pytest
from river import checks, compose, datasets, evaluate, metrics, preprocessing

import streamnb
from streamnb.naive_bayes.base import BaseNB

LEARNERS = [streamnb.GaussianNB, streamnb.CategoricalNB, streamnb.MultinomialNB, streamnb.BernoulliNB, streamnb.MixedNB]
CASES = [pytest.param(cls(**params), id=f"{cls.__name__}{params}") for cls in LEARNERS for params in cls._unit_test_params()]


@pytest.mark.parametrize("model", CASES)
def test_check_estimator_without_skips(model):
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)


@pytest.mark.parametrize("cls", LEARNERS)
def test_is_a_river_minibatch_classifier_exported_from_streamnb(cls):
    from river.base import MiniBatchClassifier

    assert issubclass(cls, MiniBatchClassifier) and issubclass(cls, BaseNB)
    assert getattr(streamnb, cls.__name__) is cls


def test_in_a_pipeline_with_progressive_validation():
    model = compose.Pipeline(preprocessing.StandardScaler(), streamnb.GaussianNB())
    metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    assert metric.get() > 0.7


@pytest.mark.parametrize("cls", LEARNERS)
def test_posterior_before_any_event_and_predicting_is_pure(cls):
    model = cls()
    assert model.predict_proba_one({"a": 1.0}) == {} and model.predict_one({"a": 1.0}) is None
    model.learn_one({"a": 1.0, "b": 0.0}, "x")
    before = streamnb.persistence.dumps(model)
    model.predict_proba_one({"a": 2.0, "zzz": 3.0})
    model.explain_one({"a": 2.0})
    model.tables()
    assert streamnb.persistence.dumps(model) == before
