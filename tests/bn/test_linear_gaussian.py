"""Numeric features in TAN's structure: conditional linear Gaussians against independent oracles.

Oracles: weighted least squares (numpy ``lstsq``) for every CPT, the multivariate normal of a
linear Gaussian tree (scipy) for evidence with missing features, a batch maximum spanning
forest over the same weights, a known tree for the structure.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import streamnb
from streamnb import persistence
from streamnb.bn import TANClassifier
from streamnb.bn.linear_gaussian import PRIOR, gaussian_pair_weights
from streamnb.bn.tree_inference import MARGINAL_PRIOR
from streamnb.structure.chow_liu import forest_structure
from tests.bn.counting import counted

#: The planted tree: child -> (parent, slope per class, residual sd); roots have class means.
TREE = {
    "x1": ("x0", (1.5, -1.0), 0.5),
    "x2": ("x1", (0.8, 0.8), 0.4),
    "x3": ("x0", (-2.0, -0.5), 1.0),
    "x4": ("x3", (0.7, 1.2), 0.3),
}
ROOT_MEAN = {"x0": (0.0, 1.0), "x5": (0.0, 0.5)}  # x5: a root with no child


def sample(n: int, seed: int = 0, tree: dict = TREE) -> list:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        y = int(rng.integers(0, 2))
        x = {f: float(rng.normal(m[y], 1.0)) for f, m in ROOT_MEAN.items()}
        for child, (parent, slope, sd) in tree.items():  # parents come first in TREE
            x[child] = 0.3 * y + slope[y] * x[parent] + float(rng.normal(0, sd))
        rows.append((x, y))
    return rows


def learned(model, rows):
    for x, y in rows:
        model.learn_one(x, y)
    return model


def frame(rows: list) -> tuple[pd.DataFrame, np.ndarray]:
    X = pd.DataFrame([x for x, _ in rows])
    return X, np.array([y for _, y in rows])


def oracle_cpts(X: pd.DataFrame, y: np.ndarray, parents: dict, var_smoothing: float = 1e-9) -> dict:
    """``{(class, feature): (a, b, var)}`` by least squares (b = 0 and the class Gaussian at a root)."""
    values = X.to_numpy(dtype=float)
    seen = ~np.isnan(values)
    pooled = [np.var(values[seen[:, j], j]) for j in range(values.shape[1])]
    eps = var_smoothing * max(pooled)
    col = {f: j for j, f in enumerate(X.columns)}
    out = {}
    for cls in np.unique(y):
        for f, j in col.items():
            own = (y == cls) & seen[:, j]
            v_j = np.var(values[own, j])
            p = parents.get(f)
            if p is None:
                out[cls, f] = (values[own, j].mean(), 0.0, v_j + eps)
                continue
            rows = own & seen[:, col[p]]
            A = np.column_stack([np.ones(rows.sum()), values[rows, col[p]]])
            (a, b), rss, *_ = np.linalg.lstsq(A, values[rows, j], rcond=None)
            out[cls, f] = (a, b, (float(rss[0]) + PRIOR * v_j) / (rows.sum() + PRIOR) + eps)
    return out


def oracle_loglik(cpts: dict, parents: dict, cls: int, x: dict) -> float:
    """log density of the observed features of ``x`` under the tree of class ``cls``: the
    multivariate normal of the whole tree, marginalized to the observed features."""
    order: list = []
    while len(order) < len(parents):
        for f, p in parents.items():
            if f not in order and (p is None or p in order):
                order.append(f)
    mean, cov = {}, {}
    for f in order:
        a, b, var = cpts[cls, f]
        p = parents[f]
        if p is None:
            mean[f] = a
            cov[f, f] = var
            for g in order[: order.index(f)]:
                cov[f, g] = cov[g, f] = 0.0
            continue
        mean[f] = a + b * mean[p]
        for g in order[: order.index(f)]:
            cov[f, g] = cov[g, f] = b * cov[p, g]
        cov[f, f] = var + b * b * cov[p, p]
    obs = [f for f in order if f in x]
    m = np.array([mean[f] for f in obs])
    S = np.array([[cov[f, g] for g in obs] for f in obs])
    return float(scipy.stats.multivariate_normal(m, S).logpdf(np.array([x[f] for f in obs])))


def parents_of(model) -> dict:
    return dict(model.structure().parents)


def assert_close(a: dict, b: dict, rel: float = 1e-9) -> None:
    assert set(a) == set(b)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=rel, abs=1e-12)


# -- structure ---------------------------------------------------------------------------------
def test_the_planted_tree_is_found_exactly():
    model = learned(TANClassifier(relearn_every=500), sample(3000))
    planted = {frozenset((c, p)) for c, (p, _, _) in TREE.items()}
    assert model.structure().skeleton() == planted
    assert model.structure().parents["x5"] is None  # independent: stays a leaf of the class


def test_edges_equal_a_batch_spanning_forest_over_the_same_weights():
    rows = sample(800, seed=1)
    model = learned(TANClassifier(relearn_every=0, swap_margin=0.0), rows)
    model.relearn()
    assert_batch_forest(model, rows)


def assert_batch_forest(model, rows: list) -> None:
    """The model's edges and weights equal the maximum spanning forest (chi2 prices) over the
    weights of co-moments counted from ``rows`` in one batch (every feature observed)."""
    X, y = frame(rows)
    names = sorted(X.columns)
    f = len(names)
    n = np.zeros((2, f, f)); m2 = np.zeros((2, f, f)); c = np.zeros((2, f, f))
    for k in range(2):
        Z = X[names].to_numpy()[y == k]
        d = Z - Z.mean(axis=0)
        n[k] = len(Z)
        m2[k] = (d * d).sum(axis=0)[:, None] * np.ones(f)[None, :]
        c[k] = d.T @ d
    expected = forest_structure(gaussian_pair_weights(n, m2, c, "chi2"), names, class_parent=True)
    assert model.structure().edges == expected.edges
    for e, v in expected.weights.items():
        assert model.structure().weights[e] == pytest.approx(v, rel=1e-9)


def test_a_weak_pair_stays_out_and_a_stationary_stream_keeps_its_structure():
    rows = sample(20000, seed=2, tree={**TREE, "x5": ("x0", (0.02, 0.02), 1.0)})  # x5 barely depends
    model = learned(TANClassifier(relearn_every=100), rows)
    late = [h for h in model.history if h["event"] > 2000]
    assert late == []
    churn = learned(TANClassifier(relearn_every=100, edge_penalty=None, swap_margin=0.0), rows)
    assert len([h for h in churn.history if h["event"] > 2000]) > 0  # what the penalty and margin prevent


def changes_after(model, event: int) -> list:
    return [h for h in model.history if h["event"] > event]


def test_changes_after_warm_up_only_move_toward_the_planted_tree():
    # x6 depends on x5 weakly (found only after thousands of events): entering is a change that
    # means something; no edge may flap in and out or swap back
    tree = {**TREE, "x6": ("x5", (0.06, 0.06), 1.0)}
    planted = {frozenset((c, p)) for c, (p, _, _) in tree.items()}
    model = learned(TANClassifier(relearn_every=100), sample(30000, seed=21, tree=tree))
    for h in changes_after(model, 3000):
        assert all(frozenset(e) in planted for e in h["added"]), h
        assert not any(frozenset(e) in planted for e in h["removed"]), h
    assert model.structure().skeleton() == planted


def test_a_wrong_edge_learned_early_is_replaced_once_a_better_one_is_clear():
    # the first 500 events make x4 a child of x1, the next ones of x3 (the planted tree): the
    # margin is relative to the edges that change, so a large structure does not shield a wrong edge
    early = {**TREE, "x4": ("x1", (0.7, 1.2), 0.3)}
    model = learned(TANClassifier(relearn_every=100), sample(500, seed=22, tree=early))
    assert ("x1", "x4") in model.structure().edges
    learned(model, sample(6000, seed=23))
    assert ("x3", "x4") in model.structure().edges and ("x1", "x4") not in model.structure().edges
    moved = [h for h in changes_after(model, 500) if ("x3", "x4") in h["added"]]
    assert moved and moved[0]["event"] <= 2500


# -- conditional probabilities and inference ----------------------------------------------------
@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_cpts_and_missing_features_equal_least_squares_and_the_multivariate_normal(missing):
    rng = np.random.default_rng(5)
    rows = sample(1500, seed=3)
    rows = [({f: v for f, v in x.items() if rng.random() >= missing}, y) for x, y in rows]
    model = learned(TANClassifier(relearn_every=0), rows)
    model.relearn()
    parents = parents_of(model)
    assert sum(p is not None for p in parents.values()) == 4
    X, y = frame(rows)
    cpts = oracle_cpts(X[sorted(X.columns)], y, parents)
    queries = [
        {"x0": 0.3, "x1": 1.0, "x2": 0.5, "x3": -0.4, "x4": 0.1, "x5": 0.2},  # complete
        {"x1": 1.0, "x2": 0.5, "x4": 0.1},                                      # x0, x3 missing (root + inner)
        {"x0": 0.3, "x4": -1.0},                                                # x3 missing between
        {"x2": 2.0},                                                            # a chain summed out
        {"x4": 0.1, "x2": 0.5, "x5": 1.0},
    ]
    for x in queries:
        joint = model.joint_log_likelihood(x)
        prior = model.joint_log_likelihood({})
        for cls in (0, 1):
            got = joint[cls] - prior[cls]
            assert got == pytest.approx(oracle_loglik(cpts, parents, cls, x), rel=1e-9, abs=1e-9), (x, cls)
        contributions = model.explain_one(x)
        assert set(contributions) <= set(x) | {p for p in parents.values() if p is not None}


def test_without_edges_tan_is_gaussian_naive_bayes():
    rng = np.random.default_rng(3)
    rows = [({"u": float(rng.normal(y, 1)), "v": float(rng.normal(2 * y, 3))}, int(y)) for y in rng.integers(0, 2, 300)]
    tan = learned(TANClassifier(relearn_every=10), rows)
    nb = learned(streamnb.GaussianNB(), rows)
    assert tan.structure().edges == []
    for x, _ in rows[:20]:
        assert tan.predict_proba_one(x) == nb.predict_proba_one(x)


# -- batches, merge, state ----------------------------------------------------------------------
def with_holes(rows: list, seed: int, share: float = 0.2) -> list:
    rng = np.random.default_rng(seed)
    return [({f: (None if rng.random() < share else v) for f, v in x.items()}, y) for x, y in rows]


def test_learn_many_and_predict_proba_many_equal_one_at_a_time():
    rows = with_holes(sample(900, seed=4), 6)
    one = learned(TANClassifier(relearn_every=70), rows[:700])
    many = TANClassifier(relearn_every=70)
    for i in range(0, 700, 130):
        X, y = frame(rows[i : min(i + 130, 700)])
        many.learn_many(X, pd.Series(y))
    assert one.history == many.history and one.structure() == many.structure()
    X, _ = frame(rows[700:])
    P = many.predict_proba_many(X)
    for r, (x, _) in enumerate(rows[700:]):
        p1 = one.predict_proba_one(x)
        assert_close(p1, many.predict_proba_one(x), rel=1e-9)
        assert_close(p1, P.iloc[r].to_dict(), rel=1e-9)


def test_merge_of_two_halves_equals_one_pass():
    rows = with_holes(sample(1200, seed=7), 8)
    a = learned(TANClassifier(relearn_every=0), rows[:500])
    b = learned(TANClassifier(relearn_every=0), rows[500:])
    both = learned(TANClassifier(relearn_every=0), rows)
    a.merge(b)
    a.relearn()
    both.relearn()
    assert a.structure().edges == both.structure().edges and a.n_learned == 1200
    for x, _ in rows[:30]:
        assert_close(a.predict_proba_one(x), both.predict_proba_one(x), rel=1e-9)


def test_save_and_load_keep_the_numeric_structure():
    persistence.register(TANClassifier)
    model = learned(TANClassifier(relearn_every=300), sample(900, seed=9))
    back = persistence.loads(persistence.dumps(model))
    assert back.structure() == model.structure() and back.history == model.history
    x = {"x0": 0.1, "x2": 0.4, "x4": 1.0}
    assert back.predict_proba_one(x) == model.predict_proba_one(x)


def test_decay_keeps_the_lines_and_forgets_weight():
    rows = sample(600, seed=10)
    model = learned(TANClassifier(relearn_every=0), rows)
    model.relearn()
    x = {"x0": 0.3, "x1": 1.0, "x3": 0.2}
    before = model.predict_proba_one(x)
    model.decay(0.5)
    after = model.predict_proba_one(x)
    # every weight halved: means, slopes and MLE variances stay; only the shrinkage's pseudo-event
    # (PRIOR) counts twice as much, so the posterior moves, but little
    assert after[1] == pytest.approx(before[1], abs=0.02)
    assert math.isclose(model.n_seen, 300.0)


# -- numeric children of categorical parents ------------------------------------------------------
MU_X = {"p": 0.0, "q": 3.0, "r": -2.0}   # x given a
MU_W = {"s": -1.0, "t": 1.5}              # w given b


def mixed_rows(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        y = int(rng.integers(0, 2))
        a = str(rng.choice(["p", "q", "r"], p=[0.5, 0.3, 0.2] if y else [0.2, 0.3, 0.5]))
        b = ("s" if a == "p" else "t") if rng.random() < 0.85 else str(rng.choice(["s", "t"]))
        x = MU_X[a] + 0.5 * y + float(rng.normal(0, 1))
        rows.append(({"a": a, "b": b, "x": x, "z": 2 * x + float(rng.normal(0, 0.5)),
                      "w": MU_W[b] + float(rng.normal(0, 0.7))}, y))
    return rows


def pooled_with_class(group: np.ndarray, cls: np.ndarray, prior: float) -> tuple[float, float]:
    """Mean and variance of ``group`` with ``prior`` pseudo-events of the class's Gaussian: two
    points at the class's mean -+ its standard deviation, weight ``prior / 2`` each (their mean
    and variance are the class's), a weighted sample from numpy."""
    sd = float(np.std(cls))
    values = np.concatenate([group, [cls.mean() - sd, cls.mean() + sd]])
    weights = np.concatenate([np.ones(len(group)), [prior / 2, prior / 2]])
    mean = float(np.average(values, weights=weights))
    return mean, float(np.average((values - mean) ** 2, weights=weights))


def brute_force_mixed(rows: list, parents: dict, x: dict, alpha: float = 1.0, var_smoothing: float = 1e-9,
                      prior: float = MARGINAL_PRIOR) -> dict:
    """log P(observed features | y) by enumeration of the missing categorical values and the
    multivariate normal of the numeric features given them; every parameter counted from the
    rows (Lidstone counts, a categorical feature given its parent pulled toward its Lidstone
    marginal given the class with strength ``prior`` (0: Lidstone); a numeric feature given a
    categorical parent: the group's mean and variance, with ``prior`` pseudo-events of the
    class's Gaussian (:func:`pooled_with_class`) or, with ``prior`` 0, its variance shrunk by
    PRIOR; least squares), nothing from the model."""
    X, y = frame(rows)
    cats = ["a", "b"]
    nums = ["w", "x", "z"]
    values = {f: sorted(X[f].unique()) for f in cats}
    eps = var_smoothing * max(np.var(X[f].to_numpy()) for f in nums)
    out = {}
    for cls in (0, 1):
        D = X[y == cls]

        def p_cat(f: str, v: str, assign: dict) -> float:
            par = parents[f]
            return counted(D, f, v, par, assign[par] if par else None, alpha, prior, len(values[f]))

        def gauss(f: str, assign: dict) -> tuple:
            """(a, b, var, numeric parent or None): f ~ N(a + b x_parent, var)."""
            v_f = np.var(D[f].to_numpy())
            par = parents[f]
            if par is None:
                return D[f].mean(), 0.0, v_f + eps, None
            if par in cats:
                g = D[D[par] == assign[par]][f].to_numpy()
                if prior > 0:  # the group and `prior` pseudo-events with the class's mean and variance
                    mean, var = pooled_with_class(g, D[f].to_numpy(), prior)
                    return mean, 0.0, var + eps, None
                return g.mean(), 0.0, (np.sum((g - g.mean()) ** 2) + PRIOR * v_f) / (len(g) + PRIOR) + eps, None
            A = np.column_stack([np.ones(len(D)), D[par].to_numpy()])
            (a, b), rss, *_ = np.linalg.lstsq(A, D[f].to_numpy(), rcond=None)
            return a, b, (float(rss[0]) + PRIOR * v_f) / (len(D) + PRIOR) + eps, par

        missing = [f for f in cats if f not in x]
        total = 0.0
        for combo in itertools.product(*[values[f] for f in missing]):
            assign = {**{f: x[f] for f in cats if f in x}, **dict(zip(missing, combo))}
            p = 1.0
            for f in cats:
                p *= p_cat(f, assign[f], assign)
            order = [f for f in ("x", "z", "w")]  # parents first in this network
            mean, cov = {}, {}
            for f in order:
                a, b, var, par = gauss(f, assign)
                mean[f] = a + b * (mean[par] if par else 0.0)
                for g in order[: order.index(f)]:
                    cov[f, g] = cov[g, f] = b * cov[par, g] if par else 0.0
                cov[f, f] = var + (b * b * cov[par, par] if par else 0.0)
            obs = [f for f in order if f in x]
            if obs:
                p *= scipy.stats.multivariate_normal([mean[f] for f in obs], [[cov[f, g] for g in obs] for f in obs]).pdf(
                    [x[f] for f in obs])
            total += p
        out[cls] = math.log(total)
    return out


@pytest.mark.parametrize("smoothing", ["marginal", "lidstone"])
def test_a_mixed_network_is_found_and_its_posteriors_equal_brute_force(smoothing):
    rows = mixed_rows(3000)
    model = learned(TANClassifier(relearn_every=0, smoothing=smoothing), rows)
    model.relearn()
    s = model.structure()
    assert s.skeleton() == {frozenset(e) for e in [("a", "b"), ("a", "x"), ("x", "z"), ("b", "w")]}
    assert s.parents["a"] is None and s.parents["x"] == "a" and s.parents["w"] == "b"  # categorical on top
    parents = dict(s.parents)
    queries = [
        {"a": "q", "b": "t", "x": 2.5, "z": 5.2, "w": 1.0},   # complete
        {"b": "t", "x": 2.5, "w": 1.0},                        # a missing: summed with x's density
        {"x": 2.5, "z": 5.0},                                  # both categorical missing
        {"a": "r", "z": -3.0},                                 # x missing between a and z
        {"z": 1.0, "w": -0.5},                                 # everything above summed out
        {"a": "p"},
    ]
    for x in queries:
        joint, prior = model.joint_log_likelihood(x), model.joint_log_likelihood({})
        expected = brute_force_mixed(rows, parents, x, prior=MARGINAL_PRIOR if smoothing == "marginal" else 0.0)
        for cls in (0, 1):
            assert joint[cls] - prior[cls] == pytest.approx(expected[cls], rel=1e-9, abs=1e-9), (x, cls)
    X, _ = frame(rows[:40])
    P = model.predict_proba_many(X.mask(np.random.default_rng(1).random(X.shape) < 0.3))
    for r, row in enumerate(X.mask(np.random.default_rng(1).random(X.shape) < 0.3).to_dict("records")):
        one = model.predict_proba_one({k: v for k, v in row.items() if v == v})
        assert_close(one, P.iloc[r].to_dict(), rel=1e-12)


def test_mixed_batches_merge_and_state_equal_one_learner():
    rows = with_holes(mixed_rows(900, seed=2), 3, share=0.15)
    one = learned(TANClassifier(relearn_every=60), rows)
    many = TANClassifier(relearn_every=60)
    for i in range(0, 900, 200):
        X, y = frame(rows[i : i + 200])
        many.learn_many(X, pd.Series(y))
    assert one.history == many.history
    a = learned(TANClassifier(relearn_every=0), rows[:400])
    b = learned(TANClassifier(relearn_every=0), rows[400:])
    both = learned(TANClassifier(relearn_every=0), rows)
    a.merge(b)
    a.relearn()
    both.relearn()
    assert a.structure().edges == both.structure().edges and a.structure().edges
    persistence.register(TANClassifier)
    back = persistence.loads(persistence.dumps(one))
    assert back.structure() == one.structure()
    for x, _ in rows[:25]:
        x = {k: v for k, v in x.items() if v is not None}
        assert_close(a.predict_proba_one(x), both.predict_proba_one(x), rel=1e-9)
        assert back.predict_proba_one(x) == one.predict_proba_one(x)


def test_the_order_features_arrive_in_changes_nothing():
    rows = mixed_rows(1500, seed=5)
    rng = np.random.default_rng(0)
    a, b = TANClassifier(relearn_every=50), TANClassifier(relearn_every=50)
    for x, y in rows:
        keys = list(x)
        rng.shuffle(keys)
        a.learn_one(x, y)
        b.learn_one({k: x[k] for k in keys}, y)
    assert a.history == b.history and a.structure() == b.structure()  # same weights, bit for bit
    for x, _ in rows[:50]:
        assert_close(a.predict_proba_one(x), b.predict_proba_one(x), rel=1e-12)


# -- a bounded numeric structure -------------------------------------------------------------------
def only(rows: list, features: list) -> list:
    return [({f: x[f] for f in features}, y) for x, y in rows]


@pytest.mark.parametrize("scales", ["auto", "linear"])
def test_numeric_features_past_max_numeric_are_leaves_and_take_no_memory(scales):
    # sample() meets x0, x5, x1, x2 first: with room for four, x3 and x4 stay Gaussian leaves
    slots = 2 if scales == "auto" else 1  # each feature and its log slot
    model = learned(TANClassifier(relearn_every=0, max_numeric=4, scales=scales), sample(1500, seed=11))
    model.relearn()
    assert sorted(model.structure().edges) == [("x0", "x1"), ("x1", "x2")]
    part = model._parts["gaussian"]
    assert part.co.shape == (2, 4 * slots, 4 * slots) and max(part.co.raw("n").shape[1:]) == 4 * slots
    leaves = {"x3": 0.4, "x4": -1.0}
    nb = learned(streamnb.GaussianNB(), only(sample(1500, seed=11), ["x3", "x4"]))
    assert_close(model.predict_proba_one(leaves), nb.predict_proba_one(leaves), rel=1e-12)
    wide = TANClassifier(max_numeric=16, scales=scales)
    wide.learn_one({f"w{i}": float(i % 7) for i in range(50_000)}, "a")
    wide.learn_one({f"w{i}": float(i % 5) for i in range(50_000)}, "b")
    assert wide._parts["gaussian"].co.shape == (2, 16 * slots, 16 * slots)
    assert wide._children.cross.shape[2] == 16 * slots


@pytest.mark.parametrize("scales", ["auto", "linear"])
def test_a_merge_keeps_max_numeric_as_one_learner_would(scales):
    rows = sample(800, seed=12)
    first, second = only(rows[:400], ["x0", "x1", "x2"]), only(rows[400:], ["x3", "x4", "x0"])
    a = learned(TANClassifier(relearn_every=0, max_numeric=4, scales=scales), first)
    b = learned(TANClassifier(relearn_every=0, max_numeric=4, scales=scales), second)
    both = learned(TANClassifier(relearn_every=0, max_numeric=4, scales=scales), first + second)
    a.merge(b)
    a.relearn()
    both.relearn()
    co_a, co_both = a._parts["gaussian"].co, both._parts["gaussian"].co
    slots = 2 if scales == "auto" else 1
    assert co_a.shape == co_both.shape == (2, 4 * slots, 4 * slots)
    for f in co_a.fields:
        np.testing.assert_allclose(co_a.view(f), co_both.view(f), rtol=1e-12, atol=1e-12)
    assert a.structure() == both.structure()
    persistence.register(TANClassifier)
    back = persistence.loads(persistence.dumps(a))
    for x, _ in rows[:20]:
        assert_close(a.predict_proba_one(x), both.predict_proba_one(x), rel=1e-9)
        assert back.predict_proba_one(x) == a.predict_proba_one(x)


def test_max_numeric_must_be_a_positive_integer():
    for bad in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError, match="max_numeric"):
            TANClassifier(max_numeric=bad)


# -- a numeric child of a categorical parent: smoothing toward the class Gaussian -----------------
#: class 0: a = p with x 1 and 3, a = q with x 10; class 1: a = p with x 4, a = q with x 6 and 8.
SMALL = [({"a": "p", "x": 1.0}, 0), ({"a": "p", "x": 3.0}, 0), ({"a": "q", "x": 10.0}, 0),
         ({"a": "p", "x": 4.0}, 1), ({"a": "q", "x": 6.0}, 1), ({"a": "q", "x": 8.0}, 1)]


def x_term(model, a: str, x: float) -> dict:
    """The term of ``x`` per class, with ``a`` observed: its log density given ``a`` and the class."""
    joint, given = model.joint_log_likelihood({"a": a, "x": x}), model.joint_log_likelihood({"a": a})
    return {k: joint[k] - given[k] for k in joint}


def log_normal(x: float, mean: float, var: float) -> float:
    return -0.5 * (math.log(2 * math.pi * var) + (x - mean) ** 2 / var)


def test_a_numeric_child_of_a_categorical_parent_is_pooled_with_five_events_of_its_class_gaussian():
    model = learned(TANClassifier(relearn_every=0, edge_penalty=None, swap_margin=0, var_smoothing=0.0), SMALL)
    model.relearn()
    assert model.structure().parents["x"] == "a"
    # by hand, class 0 given a = p: n = 2, mean 2, m2 = 2; class Gaussian: mean 14/3, variance
    # 402/27; t = 2 + 5 = 7: mean (2*2 + 5*14/3)/7 = 82/21, variance (2 + 5*402/27 + (10/7)(2 - 14/3)**2)/7
    var0 = (2 + 5 * 402 / 27 + 10 / 7 * (2 - 14 / 3) ** 2) / 7
    # class 1 given a = q: n = 2, mean 7, m2 = 2; class Gaussian: mean 6, variance 8/3
    var1 = (2 + 5 * 8 / 3 + 10 / 7 * (7 - 6) ** 2) / 7
    assert x_term(model, "p", 2.5)[0] == pytest.approx(log_normal(2.5, 82 / 21, var0), rel=1e-13)
    assert x_term(model, "q", 2.5)[1] == pytest.approx(log_normal(2.5, (14 + 30) / 7, var1), rel=1e-13)
    # Lidstone (as before the marginal smoothing): the group's mean, its m2 shrunk by one pseudo-event
    lid = learned(TANClassifier(relearn_every=0, edge_penalty=None, swap_margin=0, var_smoothing=0.0,
                                smoothing="lidstone"), SMALL)
    lid.relearn()
    assert x_term(lid, "p", 2.5)[0] == pytest.approx(log_normal(2.5, 2.0, (2 + 402 / 27) / 3), rel=1e-13)

    # decay: the same formula on the halved statistics (n = 1, m2 = 1; the class's variance and
    # the means unchanged), so the five pseudo-events weigh more: t = 6
    model.decay(0.5)
    var0 = (1 + 5 * 402 / 27 + 5 / 6 * (2 - 14 / 3) ** 2) / 6
    assert x_term(model, "p", 2.5)[0] == pytest.approx(log_normal(2.5, (2 + 5 * 14 / 3) / 6, var0), rel=1e-13)
    halves = TANClassifier(relearn_every=0, edge_penalty=None, swap_margin=0, var_smoothing=0.0)
    for x, y in SMALL:
        halves.learn_one(x, y, 0.5)
    halves.relearn()
    for a in ("p", "q"):
        assert_close(x_term(halves, a, 5.0), x_term(model, a, 5.0), rel=1e-12)


def test_the_pooled_gaussians_are_exact_after_merge_and_save():
    rows = with_holes(mixed_rows(300, seed=11), 12, share=0.1)
    make = lambda: TANClassifier(relearn_every=0, edge_penalty=None, swap_margin=0)  # noqa: E731
    a, b, both = learned(make(), rows[:90]), learned(make(), rows[90:]), learned(make(), rows)
    a.merge(b)
    a.relearn()
    both.relearn()
    assert a.structure().edges == both.structure().edges and both.structure().parents["x"] == "a"
    persistence.register(TANClassifier)
    back = persistence.loads(persistence.dumps(both))
    for x in ({"a": "q", "x": 2.5}, {"a": "r", "b": "s", "x": -1.0, "w": 0.3}, {"b": "t", "x": 2.5, "w": 1.0}):
        assert_close(a.joint_log_likelihood(x), both.joint_log_likelihood(x), rel=1e-9)
        assert back.joint_log_likelihood(x) == both.joint_log_likelihood(x)
