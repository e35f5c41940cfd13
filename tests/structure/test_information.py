"""MI / CMI against scikit-learn and a direct formula; car's published CMI; spanning trees."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import mutual_info_score

from streamnb.structure import (
    class_mutual_information,
    conditional_mutual_information,
    maximum_spanning_tree,
    mutual_information,
    orient,
    tan,
    tree_structure,
)
from tests.structure.helpers import DATA, pair_counts

REL = 1e-9


def cmi_direct(df: pd.DataFrame, a: str, b: str, y: str) -> float:
    """sum_y p(y) I(A; B | Y = y), each term by scikit-learn (as pgmpy's TreeSearch does)."""
    total = 0.0
    for _, g in df.groupby(y):
        total += len(g) / len(df) * mutual_info_score(g[a], g[b])
    return total


@pytest.fixture(scope="module")
def car() -> pd.DataFrame:
    return pd.read_csv(DATA / "car.csv")


def test_mi_and_cmi_equal_sklearn_on_car(car):
    pc = pair_counts(car, "class")
    names = pc.features.keys
    mi = mutual_information(pc.n, pc.cell_features())
    cmi = conditional_mutual_information(pc.n, pc.cell_features())
    for i, j in itertools.combinations(range(len(names)), 2):
        assert mi[i, j] == pytest.approx(mutual_info_score(car[names[i]], car[names[j]]), rel=REL, abs=1e-15)
        assert cmi[i, j] == pytest.approx(cmi_direct(car, names[i], names[j], "class"), rel=REL, abs=1e-15)
        assert mi[i, j] == mi[j, i] and cmi[i, j] == cmi[j, i]
    cls = class_mutual_information(pc.n, pc.cell_features())
    for i, f in enumerate(names):
        assert cls[i] == pytest.approx(mutual_info_score(car[f], car["class"]), rel=REL)


def test_car_tan_matches_bnclassify(car):
    """bnclassify 0.4.8 vignette: CMI of the five TAN edges (5 significant digits) and the edges."""
    s = tan(pair_counts(car, "class"))
    published = {
        ("buying", "maint"): 0.07200, ("persons", "safety"): 0.03196, ("lug_boot", "safety"): 0.02543,
        ("buying", "safety"): 0.01165, ("doors", "lug_boot"): 0.00554,
    }
    assert s.skeleton() == {frozenset(e) for e in published}
    weights = {frozenset(e): w for e, w in s.weights.items()}
    for e, w in published.items():
        assert round(weights[frozenset(e)], 5) == w
    assert s.class_parent and len(s.roots) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 1), st.sampled_from("pq")),
                min_size=1, max_size=40))
def test_cmi_property_against_direct_formula(rows):
    df = pd.DataFrame(rows, columns=["a", "b", "c", "y"]).astype(str)
    pc = pair_counts(df, "y")
    names = pc.features.keys
    cmi = conditional_mutual_information(pc.n, pc.cell_features())
    mi = mutual_information(pc.n, pc.cell_features())
    for i, j in itertools.combinations(range(3), 2):
        assert cmi[i, j] == pytest.approx(cmi_direct(df, names[i], names[j], "y"), rel=1e-9, abs=1e-12)
        assert mi[i, j] == pytest.approx(mutual_info_score(df[names[i]], df[names[j]]), rel=1e-9, abs=1e-12)


def test_missing_values_use_co_observed_events():
    df = pd.DataFrame({"a": ["0", "1", "0", "1", None, "1"], "b": ["0", "1", "0", None, "1", "0"]})
    pc = pair_counts(df)
    both = df.dropna()
    assert mutual_information(pc.n, pc.cell_features())[0, 1] == pytest.approx(
        mutual_info_score(both["a"], both["b"]), rel=REL
    )


def test_smoothing_shrinks_towards_zero():
    df = pd.DataFrame({"a": list("0011"), "b": list("0011")})
    pc = pair_counts(df)
    plug_in = mutual_information(pc.n, pc.cell_features())[0, 1]
    assert plug_in == pytest.approx(math.log(2), rel=REL)
    # alpha = 1 on a 2x2 table of counts [[2, 0], [0, 2]]: p = [[3, 1], [1, 3]] / 8
    p = np.array([[3, 1], [1, 3]]) / 8
    expected = float((p * np.log(p / 0.25)).sum())
    assert mutual_information(pc.n, pc.cell_features(), alpha=1.0)[0, 1] == pytest.approx(expected, rel=REL)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_prim_weight_equals_networkx(n, seed):
    rng = np.random.default_rng(seed)
    w = rng.random((n, n))
    w = (w + w.T) / 2
    edges = maximum_spanning_tree(w)
    assert len(edges) == n - 1 and len({v for e in edges for v in e}) == n
    g = nx.from_numpy_array(w)
    best = sum(d["weight"] for *_, d in nx.maximum_spanning_tree(g).edges(data=True))
    assert sum(w[a, b] for a, b in edges) == pytest.approx(best, rel=1e-12)
    if len(set(w[np.triu_indices(n, 1)])) == n * (n - 1) // 2:  # distinct weights: unique tree
        assert {frozenset(e) for e in edges} == {frozenset(e) for e in nx.maximum_spanning_tree(g).edges()}


def test_prim_ties_are_deterministic():
    w = np.zeros((4, 4))  # all ties: a star from the start, smaller vertices first
    assert maximum_spanning_tree(w) == [(0, 1), (0, 2), (0, 3)]
    assert maximum_spanning_tree(w, start=3) == [(3, 0), (3, 1), (3, 2)]
    w = np.ones((3, 3)) * np.nan  # no usable edge at all: still a spanning tree
    assert maximum_spanning_tree(w) == [(0, 1), (0, 2)]


def test_orient_and_structure():
    assert orient([(0, 1), (1, 2), (1, 3)], root=3).tolist() == [1, 3, 1, -1]
    s = tree_structure(np.array([[0, 5, 1], [5, 0, 2], [1, 2, 0]], float), ["a", "b", "c"], root="c")
    assert s.parents == {"a": "b", "b": "c", "c": None}
    assert s.weights == {("b", "a"): 5.0, ("c", "b"): 2.0}
    assert '"c" -> "b" [label="2"];' in s.to_dot()
