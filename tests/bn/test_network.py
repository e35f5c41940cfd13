"""BayesNetClassifier: the seeds' worked example exactly, pgmpy's exact inference as oracle."""

from __future__ import annotations

import numpy as np
import pytest

from streamnb.bn import BayesNetClassifier
from streamnb.exceptions import InvalidEventError
from tests.structure.helpers import NETWORKS, network, sample

REL = 1e-9

# The seeds' training table (003, "Bayes Net Training Example"): columns F, C, A, H, N.
SEED_ROWS = [
    (0, 0, 0, 1, 0), (0, 1, 0, 0, 0), (0, 0, 0, 1, 1), (1, 0, 0, 0, 0),
    (0, 0, 1, 1, 0), (0, 0, 1, 0, 1), (0, 0, 1, 1, 1), (0, 0, 1, 1, 1),
]
SEED_DAG = [("F", "A"), ("C", "A"), ("A", "H"), ("A", "N")]


def seed_network(alpha: float, target: str = "H") -> BayesNetClassifier:
    bn = BayesNetClassifier(SEED_DAG, target=target, alpha=alpha)
    for row in SEED_ROWS:
        x = dict(zip("FCAHN", row))
        bn.learn_one({k: v for k, v in x.items() if k != target}, x[target])
    return bn


def test_seed_training_counts():
    bn = seed_network(alpha=0)
    assert bn.probability("F", 1) == pytest.approx(1 / 8, rel=REL)
    assert bn.probability("H", 1, {"A": 1}) == pytest.approx(3 / 4, rel=REL)
    assert bn.probability("H", 1, {"A": 0}) == pytest.approx(1 / 2, rel=REL)
    # The seed prints Pr{N | not A} = 2/4, but its (OCR'd) table has N = 0, 0, 1, 0 on the four
    # rows with A = 0, i.e. 1/4: we test what the table gives.
    assert bn.probability("N", 1, {"A": 0}) == pytest.approx(1 / 4, rel=REL)
    assert bn.probability("A", 1, {"F": 0, "C": 0}) == pytest.approx(4 / 6, rel=REL)
    # (F, C) = (1, 1) never occurs: 0/0; the alpha -> 0 limit is uniform
    assert bn.probability("A", 1, {"F": 1, "C": 1}) == pytest.approx(1 / 2, rel=REL)


def test_seed_laplace():
    bn = seed_network(alpha=1)
    assert bn.probability("A", 1, {"F": 1, "C": 1}) == pytest.approx((0 + 1) / (0 + 2), rel=REL)
    assert bn.probability("A", 1, {"F": 0, "C": 0}) == pytest.approx((4 + 1) / (6 + 2), rel=REL)
    assert bn.probability("F", 1) == pytest.approx((1 + 1) / (8 + 2), rel=REL)
    table = bn.cpt("A")
    assert table.loc[(1, 1), 1] == pytest.approx(0.5, rel=REL)


def test_seed_inference():
    """P(H | not F, not C) = P(H|A) P(A|~F,~C) + P(H|~A) P(~A|~F,~C) = 3/4 * 2/3 + 1/2 * 1/3."""
    bn = seed_network(alpha=0)
    expected = 3 / 4 * 4 / 6 + 1 / 2 * 2 / 6
    assert bn.predict_proba_one({"F": 0, "C": 0})[1] == pytest.approx(expected, rel=REL)
    assert bn.query("H", {"F": 0, "C": 0})[1] == pytest.approx(expected, rel=REL)
    # A observed: H depends on A only
    assert bn.predict_proba_one({"F": 1, "C": 1, "A": 1, "N": 0})[1] == pytest.approx(3 / 4, rel=REL)
    # the same network with A as the class: Bayes' rule by hand, N observed, H missing
    bn_a = seed_network(alpha=0, target="A")
    pa1 = (4 / 6) * (3 / 4)  # P(A=1 | ~F,~C) P(N=1 | A=1): N = 0,1,1,1 on A = 1
    pa0 = (2 / 6) * (1 / 4)
    assert bn_a.predict_proba_one({"F": 0, "C": 0, "N": 1})[1] == pytest.approx(pa1 / (pa1 + pa0), rel=REL)


@pytest.fixture(scope="module")
def asia():
    return sample("asia", 3000, 11)


@NETWORKS
def test_matches_pgmpy_variable_elimination(asia):
    """Laplace CPTs equal pgmpy's BayesianEstimator with the K2 prior (one pseudo-count per
    cell); P(class | evidence) equals pgmpy's exact inference, missing features summed out."""
    from pgmpy.estimators import BayesianEstimator
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

    truth = network("asia")
    target = "dysp"
    bn = BayesNetClassifier(list(truth.edges()), target=target, alpha=1.0)
    for row in asia.to_dict("records"):
        bn.learn_one({k: v for k, v in row.items() if k != target}, row[target])
    model = DiscreteBayesianNetwork(list(truth.edges()))
    model.add_cpds(*BayesianEstimator(model, asia).get_parameters(prior_type="K2"))
    infer = VariableElimination(model)
    rng = np.random.default_rng(0)
    feats = [c for c in asia.columns if c != target]
    for row in asia.sample(25, random_state=1).to_dict("records"):
        keep = [f for f in feats if rng.random() < 0.6]
        evidence = {f: row[f] for f in keep}
        mine = bn.predict_proba_one(evidence)
        oracle = infer.query([target], evidence=evidence, show_progress=False)
        for state, p in zip(oracle.state_names[target], oracle.values):
            assert mine[state] == pytest.approx(p, rel=REL)


def test_missing_values_in_training_are_available_case():
    bn = BayesNetClassifier([("a", "y")], target="y", alpha=0)
    bn.learn_one({"a": "u"}, "p")
    bn.learn_one({"a": None}, "q")  # y's family incomplete: only y's values change
    bn.learn_one({"a": "u"}, "q")
    assert bn.classes == ["p", "q"]
    assert bn.probability("y", "q", {"a": "u"}) == pytest.approx(1 / 2, rel=REL)
    assert bn.probability("a", "u") == 1.0


def test_merge_decay_and_state():
    rows = [dict(zip("FCAHN", r)) for r in SEED_ROWS]
    a, b = BayesNetClassifier(SEED_DAG, target="H"), BayesNetClassifier(SEED_DAG, target="H")
    both = BayesNetClassifier(SEED_DAG, target="H")
    for i, r in enumerate(rows):
        x, y = {k: v for k, v in r.items() if k != "H"}, r["H"]
        (a if i % 2 else b).learn_one(x, y)
        both.learn_one(x, y)
    a.merge(b)
    q = {"F": 0, "N": 1}
    assert a.predict_proba_one(q) == pytest.approx(both.predict_proba_one(q), rel=REL)
    back = BayesNetClassifier(SEED_DAG, target="H")
    back.load_state(both.to_state())
    assert back.predict_proba_one(q) == both.predict_proba_one(q)
    both.decay(0.5)  # halving every count: maximum likelihood unchanged, Laplace moves
    assert both.predict_proba_one(q) != back.predict_proba_one(q)


def test_rejected_events_and_bad_graphs():
    bn = seed_network(alpha=1)
    before = bn.to_state()
    with pytest.raises(InvalidEventError):
        bn.learn_one({"F": [1]}, 1)
    with pytest.raises(InvalidEventError):
        bn.learn_one({"F": 1}, None)
    after = bn.to_state()
    assert [n[0] for n in after["nodes"]] == [n[0] for n in before["nodes"]]
    assert all(np.array_equal(x[2]["arrays"]["n"], y[2]["arrays"]["n"]) for x, y in zip(after["nodes"], before["nodes"]))
    with pytest.raises(ValueError, match="cycle"):
        BayesNetClassifier([("a", "b"), ("b", "a")])
    assert BayesNetClassifier().predict_proba_one({"a": 1}) == {}
