"""Classes that first appear late: TAN and Chow-Liu keep their entropy sums (CMISums) between
relearns, and a class added past the arrays' capacity must leave them consistent with the
counts, whatever the point of the stream (before or after a relearn, after a load, in a batch)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streamnb
from streamnb.drift import DriftTriggered, Forgetful, Windowed
from tests.bn.test_cmi_sums import check

QUERIES = [{"a": "x"}, {"a": "y", "b": "u"}, {"b": "v"}, {"a": "x", "b": "v", "c": "1"}]


def reloaded(model):
    """A copy through save -> load: its sums are rebuilt from the table at the first read."""
    copy = model.clone()
    copy.load_state(model.to_state())
    return copy


def same_as_rebuilt(model) -> None:
    """The model predicts, and relearns, exactly as its copy whose sums come from the table."""
    copy = reloaded(model)
    for x in QUERIES:
        a, b = model.predict_proba_one(x), copy.predict_proba_one(x)
        assert a.keys() == b.keys()
        assert [a[k] for k in a] == pytest.approx([b[k] for k in a], rel=1e-12, abs=1e-15)
    model.relearn()
    copy.relearn()
    mine, theirs = model._part.structures, copy._part.structures
    assert mine.keys() == theirs.keys()
    for key, s in mine.items():  # the weights by rounding only (kept sums against rebuilt ones)
        assert s.parents == theirs[key].parents
        assert s.weights == pytest.approx(theirs[key].weights, rel=1e-10)


MAKERS = {
    "tan": lambda: streamnb.TANClassifier(),
    "tan-every-1": lambda: streamnb.TANClassifier(relearn_every=1),
    "chow-liu": lambda: streamnb.ChowLiuClassifier(),
    "chow-liu-every-1": lambda: streamnb.ChowLiuClassifier(relearn_every=1),
}


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_a_late_class_is_learned_not_rejected(make):
    model = make()
    for _ in range(100):
        model.learn_one({"a": "x"}, 1)
    model.learn_one({"a": "x"}, 2)
    model.learn_one({"a": "x"}, 3)
    assert model.classes == [1, 2, 3]
    assert model.n_seen == 102.0
    same_as_rebuilt(model)


@pytest.mark.parametrize("wrap", [
    lambda m: DriftTriggered(m, keep=5.0),
    lambda m: Forgetful(m, half_life=50),
    lambda m: Windowed(m, window=40, blocks=4),
], ids=["triggered", "forgetful", "windowed"])
def test_a_late_class_in_a_drift_wrapper_around_tan(wrap):
    model = wrap(streamnb.TANClassifier(relearn_every=1))
    for _ in range(100):
        model.learn_one({"a": "x"}, 1)
    model.learn_one({"a": "x"}, 2)
    model.learn_one({"a": "x"}, 3)
    assert set(model.predict_proba_one({"a": "x"})) == {1, 2, 3}


def stream(n: int, seed: int, late_at: int, first: int = 3, last: int = 5) -> list:
    """Labels 1..first until ``late_at``, 1..last after; ``b`` follows ``a`` mostly."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(1, (first if i < late_at else last) + 1))
        a = str((y + int(rng.integers(0, 2))) % 4)
        x = {"a": a, "b": a if rng.random() < 0.8 else str(rng.integers(0, 4)), "c": str(rng.integers(0, 3))}
        if rng.random() < 0.1:
            del x["b"]
        out.append((x, y))
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("name", ["tan", "chow-liu"])
def test_labels_one_to_three_then_one_to_five(name, seed):
    model = MAKERS[name]()
    for x, y in stream(400, seed, late_at=300):
        model.learn_one(x, y)
    assert set(model.classes[:3]) == {1, 2, 3} and set(model.classes) == {1, 2, 3, 4, 5}
    if name == "tan":
        check(model)
    same_as_rebuilt(model)


@pytest.mark.parametrize("late_at", [50, 99, 100, 101, 150])
@pytest.mark.parametrize("name", ["tan", "chow-liu"])
def test_late_classes_before_and_after_a_relearn(name, late_at):
    model = MAKERS[name]()
    for x, y in stream(250, 7, late_at=late_at, first=1, last=6):
        model.learn_one(x, y)
    if name == "tan":
        check(model)
    same_as_rebuilt(model)


@pytest.mark.parametrize("name", ["tan", "chow-liu"])
def test_late_classes_after_a_load_and_in_batches(name):
    data = stream(400, 3, late_at=200, first=2, last=6)
    model = MAKERS[name]()
    for x, y in data[:150]:
        model.learn_one(x, y)
    model = reloaded(model)  # its sums rebuilt at the first read, then kept
    model.predict_proba_one(QUERIES[0])
    for x, y in data[150:250]:
        model.learn_one(x, y)
    X = pd.DataFrame([x for x, _ in data[250:]])
    model.learn_many(X, pd.Series([y for _, y in data[250:]]))
    one = MAKERS[name]()
    for x, y in data:
        one.learn_one(x, y)
    for x in QUERIES:
        assert model.predict_proba_one(x) == pytest.approx(one.predict_proba_one(x), rel=1e-12)
    same_as_rebuilt(model)
