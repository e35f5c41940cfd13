"""One event through plain floats, many through numpy: the two paths agree (issue #10).

``predict_proba_one`` goes through ``joint_one`` (plain floats, the CPT normalizers kept per
event by :class:`~streamnb.bn.margins.Margins`); ``explain_one`` and ``predict_proba_many``
through the array path (numpy, vectorized over rows). They agree to 1e-12 on random streams
with missing and unseen values, parents included; the normalizers kept event by event equal
those derived from the whole table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streamnb.bn.aode as aode_module
from streamnb.bn import AODE, ChowLiuClassifier, TANClassifier
from streamnb.bn.margins import Margins
from streamnb.naive_bayes.base import posterior

TOL = 1e-12

CASES = [
    (TANClassifier, {"relearn_every": 25}),
    (TANClassifier, {"relearn_every": 40, "alpha": 0.0}),
    (ChowLiuClassifier, {"relearn_every": 30, "alpha": 0.5}),
    (ChowLiuClassifier, {"relearn_every": 30, "alpha": 0.0}),
    (AODE, {}),
    (AODE, {"alpha": 0.0, "min_count": 3}),
]
IDS = [f"{c.__name__}-{p}" for c, p in CASES]


def stream(seed: int, n: int, n_features: int = 7) -> list:
    """Tree-shaped categorical rows (each feature copies the previous one, shifted by the
    class) with ~20% missing values and a few values never seen in training."""
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, 6, n_features)
    rows = []
    for _ in range(n):
        y = int(rng.integers(0, 3))
        prev = int(rng.integers(0, 5))
        x = {}
        for j, card in enumerate(cards):
            v = (prev + y) % card if rng.random() < 0.7 else int(rng.integers(0, card))
            prev = v
            x[f"f{j}"] = None if rng.random() < 0.2 else str(v)
        rows.append((x, f"c{y}"))
    return rows


def queries(seed: int, n: int) -> list:
    rng = np.random.default_rng(seed + 1000)
    out = []
    for x, _ in stream(seed + 500, n):
        x = dict(x)
        if rng.random() < 0.3:
            x[f"f{int(rng.integers(0, 7))}"] = "never seen"
        out.append(x)
    return out


def proba_of_explanation(model, x: dict) -> dict:
    """The posterior from ``explain_one`` (the array path, one row)."""
    e = model.explain_one(x)
    classes = list(e.log_prior)
    ll = np.array([[e[f][c] for c in classes] for f in e]).reshape(len(e), len(classes))
    dead = np.isneginf(ll).all(axis=1) if len(ll) else np.zeros(0, dtype=bool)
    with np.errstate(invalid="ignore"):
        jll = np.array([e.log_prior[c] for c in classes]) + ll[~dead].sum(axis=0)
    p = posterior(jll)
    if np.isnan(p).any():
        p = posterior(np.array([e.log_prior[c] for c in classes]))
    return dict(zip(classes, p.tolist()))


def assert_close(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=TOL, abs=1e-14)


@pytest.mark.parametrize("cls,params", CASES, ids=IDS)
@pytest.mark.parametrize("seed", range(3))
def test_scalar_and_array_paths_agree(cls, params, seed):
    model = cls(**params)
    rows = stream(seed, 300)
    qs = queries(seed, 40)
    for t, (x, y) in enumerate(rows):
        if t % 50 == 49:  # along the stream too, not only at the end
            for q in qs[:5]:
                assert_close(model.predict_proba_one(q), proba_of_explanation(model, q))
        model.learn_one(x, y)
    many = model.predict_proba_many(pd.DataFrame(qs))
    for r, q in enumerate(qs):
        one = model.predict_proba_one(q)
        assert_close(one, proba_of_explanation(model, q))
        assert_close(one, many.iloc[r].to_dict())


@pytest.mark.parametrize("cls,params", CASES[::2], ids=IDS[::2])
def test_paths_agree_after_decay_and_merge(cls, params):
    """Non-integer counts (decay), then more events on the kept normalizers, then a merge."""
    model = cls(**params)
    rows = stream(7, 400)
    for x, y in rows[:200]:
        model.learn_one(x, y)
    model.decay(0.8)
    for x, y in rows[200:300]:
        model.learn_one(x, y, w=0.7)
    other = cls(**params)
    for x, y in rows[300:]:
        other.learn_one(x, y)
    model.merge(other)
    for x, y in rows[:20]:
        model.learn_one(x, y, w=1.3)
    qs = queries(7, 30)
    many = model.predict_proba_many(pd.DataFrame(qs))
    for r, q in enumerate(qs):
        assert_close(model.predict_proba_one(q), many.iloc[r].to_dict())


@pytest.mark.parametrize("weights", ["integer", "float"])
def test_normalizers_kept_per_event_equal_the_table(weights):
    rng = np.random.default_rng(3)
    model = TANClassifier(relearn_every=0)
    for x, y in stream(3, 500):
        model.learn_one(x, y, w=1.0 if weights == "integer" else float(rng.uniform(0.1, 3)))
    part = model._part
    kept = part.margins.current()
    assert kept.changes == part.pairs.changes  # kept one event at a time, never rebuilt since
    fresh = Margins(part.pairs)
    fresh.rebuild()
    n_c, n_f, n_k = len(model.classes), len(fresh.fcells), len(part.cells)
    assert kept.cf == fresh.cf and kept.fcells == fresh.fcells and kept.nv == fresh.nv
    if weights == "integer":
        assert np.array_equal(kept.D[:n_c, :n_f, :n_k], fresh.D[:n_c, :n_f, :n_k])
        assert np.array_equal(kept.T[:n_c, :n_f], fresh.T[:n_c, :n_f])
    else:
        np.testing.assert_allclose(kept.D[:n_c, :n_f, :n_k], fresh.D[:n_c, :n_f, :n_k], rtol=1e-12)
        np.testing.assert_allclose(kept.T[:n_c, :n_f], fresh.T[:n_c, :n_f], rtol=1e-12)


def test_events_never_rebuild_the_normalizers(monkeypatch):
    """Predict-then-learn touches the event's cells only: over 3,000 events, each with a new
    id-like value (3,000 new cells up to the cap), the normalizers are derived from the whole
    table only when their capacity doubles (and at the first read)."""
    calls = []
    original = Margins.rebuild

    def counting(self):
        calls.append(len(self.pairs.cells))
        original(self)

    monkeypatch.setattr(Margins, "rebuild", counting)
    model = TANClassifier(relearn_every=0)
    for i in range(3000):
        x = {"id": f"u{i}", "a": str(i % 3), "b": str(i % 5)}
        model.predict_proba_one(x)
        model.learn_one(x, i % 2)
    assert len(model._part.cells) == 1024
    assert len(calls) <= 12, calls  # log2(1024) doublings, not one per event


def test_aode_plain_floats_and_numpy_agree_on_large_events(monkeypatch):
    """AODE's one-event path switches to numpy above SCALAR_TERMS: both give the same."""
    model = AODE()
    rows = stream(11, 300, n_features=9)
    for x, y in rows:
        model.learn_one(x, y)
    qs = queries(11, 20)
    big = [model.predict_proba_one(q) for q in qs]
    monkeypatch.setattr(aode_module, "SCALAR_TERMS", 10**9)
    for q, p in zip(qs, big):
        assert_close(model.predict_proba_one(q), p)


@pytest.mark.parametrize("cls", [TANClassifier, ChowLiuClassifier, AODE])
def test_boolean_categories_in_batches(cls):
    """A boolean category is its own cell (never the number 1) in batches as one by one."""
    rng = np.random.default_rng(5)
    rows = []
    for _ in range(120):
        y = int(rng.integers(0, 2))
        flag = bool(rng.random() < (0.8 if y else 0.3))
        rows.append(({"flag": flag, "n": int(rng.integers(0, 2)), "sky": ["sun", "rain"][y ^ flag]}, y))
    params = {"kinds": {"n": "categorical"}, **({} if cls is AODE else {"relearn_every": 30})}
    one, many = cls(**params), cls(**params)
    for x, y in rows:
        one.learn_one(x, y)
    X = pd.DataFrame([x for x, _ in rows])
    many.learn_many(X, pd.Series([y for _, y in rows]))
    assert one._part.cells.keys == many._part.cells.keys
    assert ("flag", True, "bool") in one._part.cells.keys and ("n", 1) in one._part.cells.keys
    P = one.predict_proba_many(X.iloc[:20])
    for r, (x, _) in enumerate(rows[:20]):
        assert_close(one.predict_proba_one(x), P.iloc[r].to_dict())
        assert one.predict_proba_one(x) == many.predict_proba_one(x)
