"""TAN, per-class Chow-Liu and AODE: exact oracles, relearning, batches, merge and state."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import streamnb
from streamnb import persistence
from streamnb.bn import AODE, ChowLiuClassifier, TANClassifier
from streamnb.bn.tree_inference import MARGINAL_PRIOR
from streamnb.naive_bayes.values import is_missing
from tests.bn.counting import counted
from tests.structure.helpers import DATA, NETWORKS, sample

REL = 1e-9


@pytest.fixture(scope="module")
def car() -> pd.DataFrame:
    return pd.read_csv(DATA / "car.csv")


def rows_of(df: pd.DataFrame, target: str) -> list:
    return [({k: v for k, v in r.items() if k != target}, r[target]) for r in df.to_dict("records")]


def learned(model, rows):
    for x, y in rows:
        model.learn_one(x, y)
    return model


def assert_proba_equal(a: dict, b: dict, rel: float = REL) -> None:
    assert set(a) == set(b)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=rel, abs=1e-300)


# -- known answers ----------------------------------------------------------------------------
def test_car_structure_and_cmi(car):
    # the spanning tree of Friedman et al. (and bnclassify): no edge penalty
    tan = learned(TANClassifier(relearn_every=len(car), edge_penalty=None), rows_of(car, "class"))
    s = tan.structure()
    assert {frozenset(e) for e in s.edges} == {
        frozenset(e) for e in [("buying", "maint"), ("persons", "safety"), ("lug_boot", "safety"),
                               ("buying", "safety"), ("doors", "lug_boot")]
    }
    w = {frozenset(e): v for e, v in s.weights.items()}
    assert round(w[frozenset(("buying", "maint"))], 5) == 0.07200
    assert round(w[frozenset(("doors", "lug_boot"))], 5) == 0.00554
    assert tan.history == [{"event": len(car), "added": s.edges, "removed": []}]
    dot = tan.to_dot()
    assert dot.count("->") == 6 + 5 and '"class" -> "doors";' in dot


def pgmpy_posterior(df: pd.DataFrame, target: str, edges: list, queries: list) -> list:
    from pgmpy.estimators import BayesianEstimator, MaximumLikelihoodEstimator
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

    feats = [c for c in df.columns if c != target]
    model = DiscreteBayesianNetwork([(target, f) for f in feats] + edges)
    cpds = BayesianEstimator(model, df).get_parameters(prior_type="K2")
    # the class prior is the maximum-likelihood one, as in every streamnb naive Bayes
    cpds = [c for c in cpds if c.variable != target] + [MaximumLikelihoodEstimator(model, df).estimate_cpd(target)]
    model.add_cpds(*cpds)
    infer = VariableElimination(model)
    out = []
    for q in queries:
        f = infer.query([target], evidence=q, show_progress=False)
        out.append(dict(zip(f.state_names[target], f.values.tolist())))
    return out


@NETWORKS
@pytest.mark.parametrize("name,n,target", [("car", None, "class"), ("child", 2000, "Disease")])
def test_tan_posterior_equals_pgmpy_exact_inference(car, name, n, target):
    """Laplace CPTs (``smoothing="lidstone"``) = pgmpy's K2 prior on the TAN DAG; with features
    missing (parents included) our marginalization equals pgmpy's variable elimination."""
    df = car.astype(str) if name == "car" else sample(name, n, 21)
    tan = learned(TANClassifier(relearn_every=0, smoothing="lidstone"), rows_of(df, target))
    tan.relearn()
    rng = np.random.default_rng(5)
    queries = []
    for x, _ in rows_of(df.sample(30, random_state=2), target):
        queries.append(x)  # complete
        queries.append({f: v for f, v in x.items() if rng.random() < 0.5})  # half missing
    oracle = pgmpy_posterior(df, target, tan.structure().edges, queries)
    for q, p in zip(queries, oracle):
        assert_proba_equal(tan.predict_proba_one(q), p)


def test_categorical_nb_is_tan_without_tree(car):
    rows = rows_of(car.sample(300, random_state=10), "class")
    for alpha in (1.0, 0.5):
        tan = learned(TANClassifier(alpha=alpha, relearn_every=0), rows)
        nb = learned(streamnb.CategoricalNB(alpha=alpha), rows)
        for x, _ in rows[:50]:
            x = {k: v for k, v in x.items() if k != "doors"}
            assert_proba_equal(tan.predict_proba_one(x), nb.predict_proba_one(x))


def test_numeric_features_are_gaussian_leaves():
    rng = np.random.default_rng(3)
    rows = [({"u": float(rng.normal(y, 1)), "v": float(rng.normal(2 * y, 3))}, y) for y in rng.integers(0, 2, 200)]
    tan = learned(TANClassifier(relearn_every=10), rows)
    nb = learned(streamnb.GaussianNB(), rows)
    assert tan.structure().edges == []
    for x, _ in rows[:20]:
        assert_proba_equal(tan.predict_proba_one(x), nb.predict_proba_one(x))


def brute_class_trees(df: pd.DataFrame, target: str, model: ChowLiuClassifier, alpha: float, x: dict,
                      strength: float = MARGINAL_PRIOR) -> dict:
    """P(y | x) of a per-class tree model by direct counting, unobserved features summed out; a
    feature given its parent pulled toward its Lidstone marginal with ``strength`` (0:
    Lidstone)."""
    feats = [c for c in df.columns if c != target]
    values = {f: sorted(df[f].unique()) for f in feats}
    prior = df[target].value_counts()
    out = {}
    for y, g in df.groupby(target):
        parents = model.structure(y).parents

        def p(f, v, pv):
            par = parents.get(f)
            return counted(g, f, v, par, pv[par] if par else None, alpha, strength, len(values[f]))

        missing = [f for f in feats if f not in x]
        total = 0.0
        for combo in itertools.product(*[values[f] for f in missing]):
            full = {**x, **dict(zip(missing, combo))}
            total += float(np.prod([p(f, full[f], full) for f in feats]))
        out[y] = prior[y] / len(df) * total
    z = sum(out.values())
    return {y: v / z for y, v in out.items()}


@pytest.mark.parametrize("smoothing", ["marginal", "lidstone"])
def test_class_chow_liu_equals_brute_force(car, smoothing):
    df = car.sample(600, random_state=8).reset_index(drop=True)
    model = learned(ChowLiuClassifier(relearn_every=0, smoothing=smoothing), rows_of(df, "class"))
    prior = MARGINAL_PRIOR if smoothing == "marginal" else 0.0
    model.relearn()
    assert set(model.structures()) == set(df["class"])
    assert len({tuple(s.edges) for s in model.structures().values()}) > 1  # trees differ by class
    for x, _ in rows_of(df.sample(8, random_state=0), "class"):
        for drop in ([], ["buying"], ["safety", "maint"]):
            q = {k: v for k, v in x.items() if k not in drop}
            assert_proba_equal(model.predict_proba_one(q), brute_class_trees(df, "class", model, 1.0, q, prior))


def brute_aode(df: pd.DataFrame, target: str, alpha: float, x: dict, min_count: float = 1,
               prior: float = MARGINAL_PRIOR) -> dict:
    classes = list(dict.fromkeys(df[target]))
    feats = list(x)
    n_values = {f: df[f].nunique() for f in df.columns}
    out = {}
    for y in classes:
        terms = []
        for i in feats:
            if (df[i] == x[i]).sum() < min_count:
                continue
            t = ((df[i] == x[i]) & (df[target] == y)).sum() + alpha
            t /= len(df) + alpha * len(classes) * n_values[i]
            g = df[df[target] == y]
            for j in feats:
                if j != i:
                    sub = df[(df[i] == x[i]) & (df[target] == y)]
                    if prior > 0:
                        marginal = ((g[j] == x[j]).sum() + alpha) / (len(g) + alpha * n_values[j])
                        t *= ((sub[j] == x[j]).sum() + prior * marginal) / (len(sub) + prior)
                    else:
                        t *= ((sub[j] == x[j]).sum() + alpha) / (len(sub) + alpha * n_values[j])
            terms.append(t)
        out[y] = float(np.mean(terms))
    z = sum(out.values())
    return {y: v / z for y, v in out.items()}


@pytest.mark.parametrize("alpha,min_count,smoothing", [(1.0, 1, "marginal"), (0.5, 30, "marginal"),
                                                       (1.0, 1, "lidstone"), (0.5, 30, "lidstone")])
def test_aode_equals_formula(car, alpha, min_count, smoothing):
    df = car.sample(800, random_state=9).reset_index(drop=True)
    model = learned(AODE(alpha=alpha, min_count=min_count, smoothing=smoothing), rows_of(df, "class"))
    prior = MARGINAL_PRIOR if smoothing == "marginal" else 0.0
    for x, _ in rows_of(df.sample(10, random_state=1), "class"):
        for drop in ([], ["doors", "persons"]):
            q = {k: v for k, v in x.items() if k not in drop}
            assert_proba_equal(model.predict_proba_one(q), brute_aode(df, "class", alpha, q, min_count, prior))


# -- streaming behaviour ----------------------------------------------------------------------
def drifting_stream(n: int, seed: int = 0) -> list:
    """y is hidden in a XOR: first b = a ^ y, then (after n // 2 events) d = c ^ y; 5% noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n):
        y = int(rng.integers(0, 2))
        x = {f: int(rng.integers(0, 2)) for f in "abcd"}
        noise = int(rng.random() < 0.05)
        if t < n // 2:
            x["b"] = x["a"] ^ y ^ noise
        else:
            x["d"] = x["c"] ^ y ^ noise
        rows.append(({k: str(v) for k, v in x.items()}, y))
    return rows


def test_relearning_follows_a_change_of_structure():
    n = 4000
    rows = drifting_stream(n)
    tan = TANClassifier(relearn_every=100)
    nb = streamnb.CategoricalNB()
    hits_tan, hits_nb = [], []
    for t, (x, y) in enumerate(rows):
        hits_tan.append(tan.predict_one(x) == y)
        hits_nb.append(nb.predict_one(x) == y)
        tan.learn_one(x, y)
        nb.learn_one(x, y)
        if t == n // 2 - 1:
            before = tan.structure()
            assert frozenset("ab") in {frozenset(e) for e in before.edges}
            tan.decay(0.01)  # forget the first concept (the tree is a view of the counts)
    after = tan.structure()
    assert frozenset("cd") in {frozenset(e) for e in after.edges}
    changes = [h for h in tan.history if h["event"] > n // 2]
    assert any(frozenset("cd") in {frozenset(e) for e in h["added"]} for h in changes)
    late = slice(n - 1000, n)
    assert np.mean(hits_tan[n // 2 - 1000 : n // 2]) > 0.9  # first concept learned
    assert np.mean(hits_tan[late]) > 0.9  # recovered after the switch
    assert np.mean(hits_nb[late]) < 0.6  # naive Bayes cannot see a XOR


def test_learn_many_equals_learn_one_with_missing_values_and_relearns(car):
    rng = np.random.default_rng(7)
    rows = []
    for x, y in rows_of(car.sample(400, random_state=3), "class"):
        rows.append(({k: (None if rng.random() < 0.15 else v) for k, v in x.items()}, y))
    for cls, params in [(TANClassifier, {"relearn_every": 13}), (ChowLiuClassifier, {"relearn_every": 29}),
                        (AODE, {})]:
        one = learned(cls(**params), rows[:300])
        many = cls(**params)
        for i in range(0, 300, 41):
            chunk = rows[i : min(i + 41, 300)]
            many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
        assert one.history == many.history
        X = pd.DataFrame([x for x, _ in rows[300:]])
        P = many.predict_proba_many(X)
        for r, (x, _) in enumerate(rows[300:]):
            p1 = one.predict_proba_one(x)
            assert p1 == many.predict_proba_one(x)  # identical statistics, identical numbers
            assert_proba_equal(p1, P.iloc[r].to_dict(), rel=1e-12)


def test_a_batch_whose_new_feature_changes_kind_is_refused_whole():
    """A new feature's first row fixes its kind, as one by one: a later row of the other kind
    refuses the batch before any row is learned (a number then a string for a new feature)."""
    model = TANClassifier(relearn_every=5)
    model.learn_many(pd.DataFrame({"a": [1, 2, 3]}), pd.Series(["x", "y", "x"]))
    before = persistence.dumps(model)
    batch = pd.DataFrame({"a": [3, 3], "b": [0, "1"]})
    with pytest.raises(streamnb.InvalidEventError, match="feature 'b': expected a number, got str '1'"):
        model.learn_many(batch, pd.Series(["x", "y"]))
    assert persistence.dumps(model) == before
    # the other order is accepted one by one (0 is a category of a categorical feature)
    flipped = TANClassifier(relearn_every=5)
    flipped.learn_many(pd.DataFrame({"a": [3, 3], "b": ["1", 0]}), pd.Series(["x", "y"]))
    assert flipped.kind_of("b") == "categorical"


def test_merge_then_relearn_equals_one_model(car):
    rows = rows_of(car.sample(600, random_state=4), "class")
    a = learned(TANClassifier(relearn_every=0), rows[:250])
    b = learned(TANClassifier(relearn_every=0), rows[250:])
    both = learned(TANClassifier(relearn_every=0), rows)
    a.merge(b)
    a.relearn()
    both.relearn()
    assert a.structure() == both.structure()
    assert a.n_learned == both.n_learned == 600
    for x, _ in rows[:20]:
        assert_proba_equal(a.predict_proba_one(x), both.predict_proba_one(x), rel=1e-12)


def test_save_and_load_keep_structure_and_history(car):
    persistence.register(TANClassifier)
    persistence.register(ChowLiuClassifier)
    for model in (TANClassifier(relearn_every=150), ChowLiuClassifier(relearn_every=150)):
        learned(model, rows_of(car.sample(500, random_state=5), "class"))
        back = persistence.loads(persistence.dumps(model))
        assert back.history == model.history and back.n_learned == model.n_learned
        x = {"buying": "low", "safety": "high", "doors": "2"}
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
        assert back.to_dot() == model.to_dot()


def test_wide_inputs_keep_the_top_k_features_in_the_tree():
    rng = np.random.default_rng(9)
    rows = []
    for _ in range(600):
        y = int(rng.integers(0, 2))
        x = {f"n{i}": str(rng.integers(0, 3)) for i in range(8)}  # noise
        x["s1"] = str(y ^ int(rng.random() < 0.1))
        x["s2"] = str(y ^ int(rng.random() < 0.2))
        x["s3"] = str(int(x["s1"]) ^ int(rng.random() < 0.2))
        rows.append((x, y))
    tan = learned(TANClassifier(relearn_every=600, max_tree_features=3, edge_penalty=None), rows)
    s = tan.structure()
    in_tree = {v for e in s.edges for v in e}
    assert in_tree == {"s1", "s2", "s3"} and len(s.edges) == 2
    assert all(s.parents[f"n{i}"] is None for i in range(8))


def test_missing_and_unseen_values_are_marginalized_not_guessed(car):
    tan = learned(TANClassifier(relearn_every=0), rows_of(car, "class"))
    tan.relearn()
    x = {"buying": "low", "maint": "low", "safety": "high", "persons": "4"}
    for v in (None, float("nan"), "never seen"):
        assert tan.predict_proba_one({**x, "lug_boot": v}) == tan.predict_proba_one(x)
    assert not is_missing(tan.predict_proba_one(x)["unacc"])


def test_a_merge_bringing_a_new_numeric_feature_predicts_as_its_reloaded_copy():
    """A (structure relearned at its 100th event, then read) merged with B, which brings a
    numeric feature of a wider spread: the variance smoothing follows the merged statistics,
    as in the merge's save -> load copy and in one learner fed A then B."""
    rng = np.random.default_rng(198)

    def rows(n: int, numeric: list) -> list:
        out = []
        for _ in range(n):
            y = "ab"[int(rng.integers(0, 2))]
            a = str(int(y == "a") ^ int(rng.random() < 0.2))
            x = {"a": a, "b": a if rng.random() < 0.8 else "z"}
            x.update({f: float(rng.lognormal(int(a), 0.5)) * scale for f, scale in numeric})
            out.append((x, y))
        return out

    first, second = rows(100, [("n", 1.0)]), rows(60, [("n", 1.0), ("m", 1e3)])
    a, b, one = TANClassifier(), TANClassifier(), TANClassifier()
    for x, y in first:
        a.learn_one(x, y)
        one.learn_one(x, y)
    queries = [x for x, _ in second[:8]] + [{"m": 1.0}, {"n": 2.0}]
    for x in queries:
        a.predict_proba_one(x)
    for x, y in second:
        b.learn_one(x, y)
        one.learn_one(x, y)
    a.merge(b)
    again = TANClassifier()
    again.load_state(a.to_state())
    assert a.structure() == again.structure() == one.structure()
    for x in queries:
        assert a.predict_proba_one(x) == again.predict_proba_one(x)
        assert_proba_equal(a.predict_proba_one(x), one.predict_proba_one(x), rel=1e-9)
