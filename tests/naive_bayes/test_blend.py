"""The blend capability of the counting learners: this model's counts plus ``weight`` times
another's, read per event, equal to one model that learned both (counts add)."""

from __future__ import annotations

import random

import pytest

import streamnb
from streamnb import persistence
from streamnb.perkey import PerKey

PARAMS = [{}, {"alpha": 0.0, "unseen": "smooth"}, {"alpha": 0.0, "epsilon": 1e-4}, {"alpha": 0.5, "unseen": "smooth"}]


def token_events(n: int, users: int, seed: int) -> list[tuple[dict, str]]:
    """Token counts; w0-w9 spam for everyone, w30-w39 spam for odd users only; some zero counts."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        user = rng.randrange(users)
        label = "spam" if rng.random() < 0.4 else "ham"
        pool = range(10) if label == "spam" else range(10, 30)
        if rng.random() < 0.3:
            pool, label = range(30, 40), ("spam" if user % 2 else "ham")
        x = {f"w{i}": rng.choice([0, 1, 1, 2, 3]) for i in rng.sample(list(pool), 4)}
        out.append(({"user": f"u{user}", **x}, label if rng.random() > 0.05 else "news"))
    return out


def category_events(n: int, users: int, seed: int) -> list[tuple[dict, str]]:
    """Categories of four features; f3 is missing at times; the label depends on the user."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        user = rng.randrange(users)
        x = {f"f{i}": rng.choice("abcde"[: 2 + i]) for i in range(3)}
        if rng.random() < 0.7:
            x["f3"] = rng.randrange(4)
        y = ("yes" if x["f0"] == "a" else "no") if user % 2 else ("yes" if x["f1"] == "b" else "no")
        out.append(({"user": f"u{user}", **x}, y if rng.random() > 0.1 else "maybe"))
    return out


CASES = [(streamnb.MultinomialNB, p, token_events) for p in PARAMS] + [
    (streamnb.CategoricalNB, p, category_events) for p in PARAMS[:3]
]


def features(x: dict) -> dict:
    return {k: v for k, v in x.items() if k != "user"}


@pytest.mark.parametrize("takeover", [1.0, 40.0])
@pytest.mark.parametrize(("cls", "params", "events"), CASES)
def test_the_blend_equals_a_model_that_learned_the_shared_events_and_the_keys_weighted(cls, params, events, takeover):
    data = events(300, 4, seed=1)
    model = PerKey(cls(**params), by="user", takeover=takeover)
    for x, y in data:
        model.learn_one(x, y)
    for user in ("u0", "u1", "u3"):
        weight = model.weight(user)
        assert weight == max(1.0, 300 / takeover)
        oracle = cls(**params)
        for x, y in data:
            oracle.learn_one(features(x), y)
            if x["user"] == user:
                oracle.learn_one(features(x), y, w=weight)
        unseen = {"w0": 1, "never": 2} if cls is streamnb.MultinomialNB else {"f0": "z", "f9": "q", "f1": "a"}
        for x in [features(x) for x, _ in events(60, 4, seed=2)] + [unseen, {}]:
            got = model.predict_proba_one({**x, "user": user})
            want = oracle.predict_proba_one(x)
            assert list(got) == list(want) or sorted(got) == sorted(want)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15), x


@pytest.mark.parametrize(("cls", "params", "events"), CASES)
def test_a_class_only_the_other_knows_counts_in_the_blend(cls, params, events):
    data = events(200, 3, seed=5)
    mine, other, oracle = cls(**params), cls(**params), cls(**params)
    for x, y in data:
        mine.learn_one(features(x), y)
        oracle.learn_one(features(x), y)
    for x, y in data[:30]:  # the other's events: known values, a class of its own
        other.learn_one(features(x), "other-" + y)
        oracle.learn_one(features(x), "other-" + y, w=2.5)
    for x, _ in events(40, 3, seed=6):
        got = mine.predict_proba_blend(features(x), other, 2.5)
        assert got == pytest.approx(oracle.predict_proba_one(features(x)), rel=1e-12, abs=1e-15)
        assert set(got) == set(oracle.classes)


@pytest.mark.parametrize("cls", [streamnb.MultinomialNB, streamnb.CategoricalNB])
def test_weight_zero_or_an_empty_other_is_the_model_alone_and_nothing_changes(cls):
    events = token_events if cls is streamnb.MultinomialNB else category_events
    model, other = cls(), cls()
    for x, y in events(100, 2, seed=3):
        model.learn_one(features(x), y)
    other.learn_one(features(events(1, 1, seed=4)[0][0]), "ham")
    before = persistence.dumps(model), persistence.dumps(other)
    for x, _ in events(20, 2, seed=7):
        x = features(x)
        assert model.predict_proba_blend(x, other, 0.0) == model.predict_proba_one(x)
        assert model.predict_proba_blend(x, cls(), 3.0) == model.predict_proba_one(x)
        model.predict_proba_blend(x, other, 3.0)
    assert (persistence.dumps(model), persistence.dumps(other)) == before


def test_bad_partners_and_weights_are_refused():
    model = streamnb.MultinomialNB()
    model.learn_one({"a": 1}, "x")
    with pytest.raises(streamnb.InvalidEventError, match="MultinomialNB"):
        model.predict_proba_blend({"a": 1}, streamnb.CategoricalNB(), 1.0)
    for w in (-1.0, float("nan"), float("inf")):
        with pytest.raises(streamnb.InvalidEventError):
            model.predict_proba_blend({"a": 1}, model.clone(), w)
    with pytest.raises(streamnb.InvalidEventError):
        model.predict_proba_blend({"a": -1}, model.clone(), 1.0)


def test_only_the_counting_learners_that_can_blend_offer_it():
    assert callable(getattr(streamnb.MultinomialNB(), "predict_proba_blend", None))
    assert callable(getattr(streamnb.CategoricalNB(), "predict_proba_blend", None))
    for cls in (streamnb.GaussianNB, streamnb.ComplementNB, streamnb.MixedNB):
        assert not hasattr(cls(), "predict_proba_blend")
