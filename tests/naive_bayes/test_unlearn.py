"""Unlearning restores the exact previous state; the vocabulary cap holds on long streams."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import streamnb
from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes import ComplementNB
from streamnb import persistence
from streamnb.persistence import to_plain
from streamnb.spam import explain

COUNTING = [streamnb.MultinomialNB, ComplementNB, streamnb.BernoulliNB]


def state(model) -> tuple:
    """A comparable form of ``to_state``: JSON-able structure and the exact array bytes."""
    arrays: list[np.ndarray] = []
    plain = to_plain(model.to_state(), arrays)
    return plain, [(a.shape, a.tobytes()) for a in arrays]


def messages(rng, n, vocab=200):
    words = [f"w{i}" for i in range(vocab)]
    for _ in range(n):
        size = rng.integers(1, 12)
        label = "spam" if rng.random() < 0.3 else "ham"
        offset = 0 if label == "spam" else vocab // 3
        toks = rng.zipf(1.5, size) % (vocab - offset) + offset
        x: dict = {}
        for t in toks.tolist():
            x[words[t]] = x.get(words[t], 0) + 1
        yield x, label


@pytest.mark.parametrize("cls", COUNTING)
def test_learn_then_unlearn_restores_the_exact_state(cls, rng):
    model = cls()
    stream = list(messages(rng, 300))
    for x, y in stream[:250]:
        model.learn_one(x, y)
    for x, y in stream[250:]:
        before = state(model)
        model.learn_one(x, y)
        model.predict_one(x)  # fold the buffer in
        model.unlearn_one(x, y)
        assert state(model) == before
    # correcting a label: unlearn then learn the right one equals having learned it right
    wrong, right = cls(), cls()
    for x, y in stream[:100]:
        wrong.learn_one(x, y)
        right.learn_one(x, y)
    x, y = stream[100]
    other = "ham" if y == "spam" else "spam"
    wrong.learn_one(x, other)
    wrong.unlearn_one(x, other)
    wrong.learn_one(x, y)
    right.learn_one(x, y)
    assert state(wrong) == state(right)


@pytest.mark.parametrize("cls", COUNTING)
def test_unlearning_everything_forgets_every_key_and_class(cls):
    model = cls()
    model.learn_one({"a": 1, "b": 2}, "spam")
    empty = state(model.clone())
    model.unlearn_one({"a": 1, "b": 2}, "spam")
    assert state(model) == empty and model.classes == []


@pytest.mark.parametrize("cls", COUNTING)
def test_unlearning_what_was_not_learned_changes_nothing(cls):
    model = cls()
    model.learn_one({"a": 1}, "spam")
    before = state(model)
    for x, y in [({"a": 1}, "ham"), ({"zzz": 1}, "spam"), ({"a": 5}, "spam" if cls is not streamnb.BernoulliNB else "eggs")]:
        with pytest.raises(InvalidEventError):
            model.unlearn_one(x, y)
    assert state(model) == before


def test_gaussian_cannot_unlearn():
    model = streamnb.GaussianNB()
    model.learn_one({"a": 1.0}, "x")
    with pytest.raises(NotImplementedError):
        model.unlearn_one({"a": 1.0}, "x")


@pytest.mark.parametrize("cls", COUNTING)
def test_vocabulary_cap_holds_on_a_long_stream(cls, rng):
    cap = 150
    model = cls(max_features=cap)
    part = next(iter(model._parts.values()))
    sizes = []
    for i, (x, y) in enumerate(messages(rng, 6000, vocab=3000)):
        model.learn_one(x, y)
        if i % 97 == 0:
            model.predict_one(x)
            sizes.append(len(part.vocabulary))
            if i % 970 == 0:
                model.decay(0.9)
    assert max(sizes) <= cap and sizes[-1] >= cap * 0.8
    # the heavy hitters stay: the most frequent spam token is known
    assert "w1" in part.vocabulary.keys


def test_capped_batches_equal_capped_one_by_one(rng):
    stream = list(messages(rng, 400, vocab=500))
    one, many = streamnb.MultinomialNB(max_features=60), streamnb.MultinomialNB(max_features=60)
    for x, y in stream:
        one.learn_one(x, y)
    frame = pd.DataFrame([x for x, _ in stream]).astype(float)
    for start in range(0, 400, 90):
        many.learn_many(frame.iloc[start : start + 90], pd.Series([y for _, y in stream[start : start + 90]]))
    a, b = one.tables()["token_counts"], many.tables()["token_counts"]
    assert sorted(a.index) == sorted(b.index)
    pd.testing.assert_frame_equal(a.sort_index(), b.sort_index()[a.columns])


@pytest.mark.parametrize("cls", COUNTING)
def test_explanations_sum_to_the_log_odds(cls, rng):
    model = cls()
    for x, y in messages(rng, 300):
        model.learn_one(x, y)
    for x, _ in messages(rng, 20):
        p = model.predict_proba_one(x)
        contributions = explain(model, x)
        assert sum(v for _, v in contributions) == pytest.approx(np.log(p["spam"] / p["ham"]), rel=1e-9, abs=1e-9)


def test_decay_half_life():
    a, b = streamnb.MultinomialNB(), streamnb.MultinomialNB()
    for m in (a, b):
        m.learn_one({"x": 4}, "s")
    a.decay_half_life(50, half_life=100)
    b.decay(0.5**0.5)
    assert a.tables()["token_counts"].equals(b.tables()["token_counts"])


@pytest.mark.parametrize("learner", [streamnb.MultinomialNB, streamnb.BernoulliNB, streamnb.ComplementNB])
def test_a_merge_keeps_the_vocabulary_cap(learner):
    a, b = learner(max_features=100), learner(max_features=100)
    for i in range(100):
        a.learn_one({f"a{i}": 1 + i % 3}, "spam")
        b.learn_one({f"b{i}": 1 + i % 5}, "ham")
    a.merge(b)
    assert len(a.tables()[next(iter(a.tables()))]) <= 100  # not 200


@pytest.mark.parametrize("learner", [streamnb.MultinomialNB, streamnb.BernoulliNB])
def test_a_merge_within_the_cap_is_one_learner_on_both_streams(learner):
    a, b, both = learner(max_features=50), learner(max_features=50), learner(max_features=50)
    for i in range(40):
        x, y = {f"t{i % 20}": 1, f"u{i % 7}": 2}, "spam" if i % 3 else "ham"
        (a if i % 2 else b).learn_one(x, y)
        both.learn_one(x, y)
    a.merge(b)
    for name, table in both.tables().items():
        merged = a.tables()[name].sort_index().sort_index(axis=1)
        pd.testing.assert_frame_equal(merged, table.sort_index().sort_index(axis=1))


@pytest.mark.parametrize("batch", [False, True])
def test_bernoulli_unlearn_keeps_a_feature_an_earlier_event_gave_a_value_not_present(batch):
    """A token first seen with value 0 is in the vocabulary without a count; learning and
    unlearning an event where it is present (2) restores that, not a vocabulary without it
    (P(x) went 0.625 -> 0.667)."""
    model = streamnb.BernoulliNB()
    first = [({"a": 1, "t": 0}, "x"), ({"a": 1}, "y"), ({"b": 1, "t": 0.0}, "y"), ({"b": 1}, "x")]
    if batch:
        model.learn_many(pd.DataFrame([x for x, _ in first]), pd.Series([y for _, y in first]))
    else:
        for x, y in first:
            model.learn_one(x, y)
    before, proba = state(model), model.predict_proba_one({"a": 1})
    model.learn_one({"a": 1, "t": 2}, "x")
    model.unlearn_one({"a": 1, "t": 2}, "x")
    assert state(model) == before
    assert model.predict_proba_one({"a": 1}) == proba
    # unlearning the events that gave it a value forgets it, as a learner never given them
    for x, y in first:
        if "t" in x:
            model.unlearn_one(x, y)
    fresh = streamnb.BernoulliNB()
    for x, y in first:
        if "t" not in x:
            fresh.learn_one(x, y)
    assert sorted(model.classes) == sorted(fresh.classes) and model._parts["bernoulli"].features.keys == ["a", "b"]
    assert model.predict_proba_one({"a": 1}) == fresh.predict_proba_one({"a": 1})



TOKEN_COUNTS = [streamnb.MultinomialNB, ComplementNB]


@pytest.mark.parametrize("batch", [None, "frame", "sparse"])
@pytest.mark.parametrize("cls", TOKEN_COUNTS)
def test_token_unlearn_keeps_a_token_an_earlier_event_gave_a_count_of_0(cls, batch):
    """A token first seen with count 0 is in the vocabulary (V) without a count; learning and
    unlearning an event that counted it (2) restores that, as a learner that never saw the
    event: the same saved bytes and predictions (it was forgotten, so V and the smoothing
    changed). Learned in a batch, a count of 0 is a value in a frame, a stored entry in a
    sparse matrix."""
    first = [({"a": 1, "t": 0}, "x"), ({"a": 2}, "x"), ({"b": 1}, "y"), ({"b": 2, "t": 0.0}, "y")]
    second = ({"a": 1, "t": 2}, "x")

    def learned(events):
        model = cls()
        labels = pd.Series([y for _, y in events])
        if batch == "frame":
            model.learn_many(pd.DataFrame([x for x, _ in events]), labels)
        elif batch == "sparse":
            columns = list(dict.fromkeys(key for x, _ in events for key in x))
            rows, cols, values = zip(*[(i, columns.index(key), float(v)) for i, (x, _) in enumerate(events)
                                       for key, v in x.items()])
            matrix = scipy.sparse.csr_matrix((values, (rows, cols)), shape=(len(events), len(columns)))
            assert matrix.nnz == len(values)  # the zeros are stored
            model.learn_many(matrix, labels, columns=columns)
        else:
            for x, y in events:
                model.learn_one(x, y)
        return model

    model, only_first = learned(first), learned(first)
    model.learn_one(*second)
    model.unlearn_one(*second)
    assert persistence.dumps(model) == persistence.dumps(only_first)
    for x in ({"a": 1}, {"a": 1, "t": 1}, {"b": 1, "t": 3}):
        assert model.predict_proba_one(x) == only_first.predict_proba_one(x)
    # unlearning the events that gave it a count of 0 forgets it, as a learner never given them
    for x, y in first:
        if "t" in x:
            model.unlearn_one(x, y)
    fresh = learned([(x, y) for x, y in first if "t" not in x])
    assert model.part(next(iter(model._parts))).vocabulary.keys == ["a", "b"]
    assert persistence.dumps(model) == persistence.dumps(fresh)
    assert model.predict_proba_one({"a": 1, "b": 1}) == fresh.predict_proba_one({"a": 1, "b": 1})


@pytest.mark.parametrize("cls", COUNTING)
def test_states_saved_without_zeros_load(cls):
    """A state saved before the zeros were kept: a feature without a count gets weight 1."""
    model = cls()
    model.learn_one({"a": 1, "t": 0}, "x")
    model.learn_one({"a": 1, "u": 0}, "x")
    model.learn_one({"u": 1}, "y")
    saved = model.to_state()
    old = {**saved, "stats": {k: v for k, v in saved["stats"].items() if not k.endswith(".zeros")}}
    assert len(old["stats"]) == len(saved["stats"]) - 1
    again = cls()
    again.load_state(old)
    assert again.part(next(iter(again._parts))).zeros.n.tolist() == [0.0, 1.0, 0.0]
    assert again.predict_proba_one({"a": 1}) == model.predict_proba_one({"a": 1})
    again.unlearn_one({"a": 1, "t": 0}, "x")
    assert again.part(next(iter(again._parts))).vocabulary.keys == ["a", "u"]
