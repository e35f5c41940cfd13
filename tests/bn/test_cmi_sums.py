"""The pair weights kept between relearns equal a fresh computation from the table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from streamnb.bn import TANClassifier
from streamnb.structure.chow_liu import counted
from streamnb.structure.information import conditional_mutual_information


def rows(n: int, seed: int, values: int = 6) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = str(rng.integers(0, 3))
        a = int(rng.integers(0, values))
        x = {"a": str(a), "b": str((a + int(rng.integers(0, 2))) % values), "c": str(rng.integers(0, values))}
        if rng.random() < 0.2:
            del x["c"]
        if rng.random() < 0.05:
            x["late"] = str(rng.integers(0, 3))  # a feature that appears later, rarely
        out.append((x, y))
    return out


def fresh(model: TANClassifier) -> np.ndarray:
    """I(Xi; Xj | Y) from the table, over pairs.features, as a [F, F] array."""
    pairs = model._part.pairs
    n, cf, names = counted(pairs)
    w = conditional_mutual_information(n, cf)
    ids = pairs.features.lookup(names)
    out = np.zeros((len(pairs.features), len(pairs.features)))
    out[np.ix_(ids, ids)] = w
    return out


def check(model: TANClassifier) -> None:
    kept, _ = model._part.sums.weights()
    np.testing.assert_allclose(kept, fresh(model), rtol=1e-10, atol=1e-13)


def test_kept_weights_equal_the_table_through_events_batches_merges_and_decay():
    data = rows(3000, 0)
    model = TANClassifier(relearn_every=97)
    for i, (x, y) in enumerate(data[:1500]):
        model.learn_one(x, y)
        if i % 250 == 0:
            check(model)
    X = pd.DataFrame([x for x, _ in data[1500:2000]])
    model.learn_many(X, pd.Series([y for _, y in data[1500:2000]]))
    check(model)
    other = TANClassifier(relearn_every=97)
    for x, y in rows(300, 1, values=9):  # new cells
        other.learn_one(x, y)
    model.merge(other)
    check(model)
    model.decay(0.5)
    check(model)
    for x, y in data[2000:]:
        model.learn_one(x, y)
    check(model)
    assert model.history  # the structure was learned from these weights along the way
