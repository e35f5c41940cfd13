"""The per-event path (plain floats) and the array path (numpy) agree: to 1e-12 on the
posterior, for every naive Bayes learner, on streams with missing values, unseen values and
every parameter set of the learner."""

from __future__ import annotations

import random

import pandas as pd
import pytest

import streamnb


def _stream(kind: str, rng: random.Random, n: int = 300) -> list:
    out = []
    for _ in range(n):
        y = rng.choice("abc")
        x: dict = {}
        for j in range(8):
            if rng.random() < 0.15:
                x[f"f{j}"] = None
            elif kind == "numeric":
                x[f"f{j}"] = rng.gauss(" abc".index(y) * (j % 3), 1 + j % 2)
            elif kind == "counts":
                if rng.random() < 0.5:
                    x[f"t{rng.randrange(30)}"] = float(rng.randrange(4))
            else:
                x[f"f{j}"] = rng.choice(["r", "g", "b", y])
        if kind == "mixed":
            x["t"] = rng.gauss(" abc".index(y), 1.0)
        out.append((x, y))
    return out


KINDS = {
    "GaussianNB": "numeric", "CategoricalNB": "categories", "MultinomialNB": "counts", "BernoulliNB": "counts",
    "ComplementNB": "counts", "MixedNB": "mixed",
}
CASES = [(name, params) for name in KINDS for params in getattr(streamnb, name)._unit_test_params()]
CASES.append(("MixedNB", {"kinds": {"t": "gaussian", "f1": "categorical"}}))


@pytest.mark.parametrize("name,params", CASES, ids=lambda v: str(v))
def test_one_event_and_the_array_path_agree(name, params):
    rng = random.Random(7)
    stream = _stream(KINDS[name], rng)
    model = getattr(streamnb, name)(**params)
    queries = [x for x, _ in _stream(KINDS[name], rng, 40)]
    for i, (x, y) in enumerate(stream):
        model.learn_one(x, y)
        if i % 50 == 49:  # predictions as the model grows
            columns = sorted({f for q in queries for f in q})
            fill = 0.0 if KINDS[name] == "counts" else None
            X = pd.DataFrame([{f: q.get(f, fill) for f in columns} for q in queries], columns=columns)
            batch = model.predict_proba_many(X)
            for r, q in enumerate(queries):
                if KINDS[name] == "counts":
                    q = {f: q.get(f, 0.0) for f in columns}  # the same event as the frame's row
                one = model.predict_proba_one(q)
                for c, p in one.items():
                    assert batch.iloc[r][c] == pytest.approx(p, rel=1e-12, abs=1e-12), (i, r, c)


@pytest.mark.parametrize("n_classes", range(1, 11))
def test_the_batch_posteriors_row_reductions_are_numpys_bit_for_bit(n_classes):
    """The row maximum and row sum of a batch's posterior, combined column by column for
    few classes, equal numpy's reductions exactly, with NaN and infinities in the rows."""
    import numpy as np

    from streamnb.naive_bayes.posterior import last_axis

    rng = np.random.default_rng(n_classes)
    a = rng.normal(size=(400, n_classes)) * rng.choice([1e-12, 1e-3, 1.0, 1e8], size=(400, n_classes))
    a[3, 0], a[4, -1], a[5, :], a[6, 0] = np.nan, -np.inf, np.inf, np.inf
    for ufunc, reduce in ((np.maximum, np.max), (np.add, np.sum)):
        got, want = last_axis(ufunc, a), reduce(a, axis=-1, keepdims=True)
        assert got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("make, value", [
    (streamnb.GaussianNB, lambda i, j: float((i * j) % 5)),
    (streamnb.MultinomialNB, lambda i, j: (i + j) % 3),
    (streamnb.CategoricalNB, lambda i, j: "abc"[(i * j) % 3]),
    (streamnb.MixedNB, lambda i, j: float(i % 4) if j % 2 else "ab"[(i + j) % 2]),
])  # fmt: skip
def test_features_named_by_ints_give_what_the_same_stream_named_by_strings_gives(make, value):
    """Feature names that are not strings take the per-event path too (they are checked by
    the part's prepare, not by the event reader): the same probabilities as the stream with
    the names as strings, at every event."""
    models = make(), make()
    for i in range(60):
        x = {j: value(i, j) for j in range(4)}
        named = {f"f{j}": v for j, v in x.items()}
        assert models[0].predict_proba_one(x) == models[1].predict_proba_one(named)
        models[0].learn_one(x, i % 2)
        models[1].learn_one(named, i % 2)
