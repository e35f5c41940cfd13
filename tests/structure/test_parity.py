"""Structure parity with pgmpy's TreeSearch, and recovery of planted trees.

Conventions. pgmpy builds a networkx graph from the weight matrix (``nx.maximum_spanning_tree``,
Kruskal) and directs it with a BFS from ``root_node``; we run Prim from the same root. A tree
has exactly one orientation away from a given root, so with ``root`` passed to both sides the
*directed* edge sets must be equal whenever the maximum spanning tree is unique (no exact ties
between competing edges). pgmpy's TAN weights are ``sum_y p(y) MI(Xi; Xj | Y = y)`` by
scikit-learn, which is the same plug-in CMI as ours (in nats).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from streamnb.bn import TANClassifier
from streamnb.structure import (
    chow_liu,
    conditional_mutual_information,
    maximum_spanning_tree,
    mutual_information,
    tan,
)
from streamnb.structure.chow_liu import canonical
from tests.structure.helpers import NETWORKS, pair_counts, pgmpy_edges, random_tree, sample, sample_tree

pytestmark = NETWORKS


def unique_tree(w: np.ndarray, tol: float = 1e-9) -> bool:
    """The maximum spanning tree is unique with margin: every non-tree edge is lighter, by more
    than ``tol`` (relative), than every tree edge on the path between its endpoints."""
    n = len(w)
    tree = {frozenset(e) for e in maximum_spanning_tree(w)}
    adj: dict = {v: [] for v in range(n)}
    for a, b in map(tuple, tree):
        adj[a].append(b)
        adj[b].append(a)
    for u in range(n):
        lightest = {u: np.inf}  # lightest tree edge on the path u -> v
        stack = [u]
        while stack:
            a = stack.pop()
            for b in adj[a]:
                if b not in lightest:
                    lightest[b] = min(lightest[a], w[a, b])
                    stack.append(b)
        for v in range(u + 1, n):
            if frozenset((u, v)) not in tree and not w[u, v] < lightest[v] - tol * max(1e-12, lightest[v]):
                return False
    return True


CASES = [("asia", 4000, 1), ("child", 2000, 2), ("alarm", 1500, 3)]


@pytest.mark.parametrize("name,n,seed", CASES)
def test_chow_liu_equals_pgmpy(name, n, seed):
    df = sample(name, n, seed)
    pc = pair_counts(df)
    root = df.columns[0]
    mine = chow_liu(pc, root=root)
    assert set(mine.edges) == pgmpy_edges(df, root, "chow-liu")
    assert len(mine.edges) == df.shape[1] - 1


TAN_CASES = [("asia", 4000, 4, "either"), ("child", 2000, 5, "Disease"), ("alarm", 1000, 6, "BP")]


@pytest.mark.parametrize("name,n,seed,target", TAN_CASES)
def test_tan_and_the_plain_tan_learner_equal_pgmpy(name, n, seed, target):
    """At a prefix of the sample and at its end, pgmpy's ``TreeSearch(estimator_type="tan")``
    tree (given our root, the first feature in canonical order) is, edge for edge and direction
    for direction, both ``tan`` on the batch's counts and the tree of
    ``TANClassifier(edge_penalty=None, swap_margin=0)`` learned on the stream (a recompute every
    100 events, so earlier trees stood in between). One oracle per prefix serves both (pgmpy's
    tree is most of this test's time)."""
    df = sample(name, n, seed)
    root = min((c for c in df.columns if c != target), key=canonical)
    model = TANClassifier(edge_penalty=None, swap_margin=0)
    rows = [({k: v for k, v in r.items() if k != target}, r[target]) for r in df.to_dict("records")]
    for stop in (n // 2, n):
        for x, y in rows[stop - n // 2: stop]:
            model.learn_one(x, y)
        model.relearn()
        seen = df.iloc[:stop]
        expected = pgmpy_edges(seen, root, "tan", class_node=target)
        assert len(expected) == df.shape[1] - 2  # a spanning tree over the features
        assert set(tan(pair_counts(seen, target), root=root).edges) == expected, stop
        assert set(model.structure().edges) == expected, stop


@pytest.mark.parametrize("seed", range(4))
def test_planted_tree_is_recovered_and_matches_pgmpy(seed):
    rng = np.random.default_rng(seed)
    parent = random_tree(rng, 9)
    x = sample_tree(rng, parent, 3000, card=3)
    df = pd.DataFrame(x, columns=[f"v{i}" for i in range(9)]).astype(str)
    s = chow_liu(pair_counts(df), root="v0")
    truth = {(f"v{p}", f"v{c}") for c, p in enumerate(parent) if p >= 0}
    assert set(s.edges) == truth  # rooted at the true root: even the directions are recovered
    assert set(s.edges) == pgmpy_edges(df, "v0", "chow-liu")


@pytest.mark.parametrize("seed", range(3))
def test_planted_tan_tree_is_recovered(seed):
    """Features copy (parent + class) mod 3: marginally the tree is blurred by the class,
    given the class it is exact; TAN recovers it, with the same edges as pgmpy."""
    rng = np.random.default_rng(100 + seed)
    parent = random_tree(rng, 7)
    y = rng.integers(0, 3, 4000)
    x = sample_tree(rng, parent, 4000, card=3, strength=0.7, target=y)
    df = pd.DataFrame(x, columns=[f"v{i}" for i in range(7)]).astype(str)
    df["y"] = y.astype(str)
    s = tan(pair_counts(df, "y"), root="v0")
    truth = {(f"v{p}", f"v{c}") for c, p in enumerate(parent) if p >= 0}
    assert set(s.edges) == truth
    assert set(s.edges) == pgmpy_edges(df, "v0", "tan", class_node="y")


def test_parity_cases_have_unique_trees():
    """The parity above is meaningful: the weights have no ties to break differently."""
    for name, n, seed in CASES:
        pc = pair_counts(sample(name, n, seed))
        assert unique_tree(mutual_information(pc.n, pc.cell_features())), name
    assert not unique_tree(np.ones((3, 3)))
    for name, n, seed, target in TAN_CASES:
        pc = pair_counts(sample(name, n, seed), target)
        w = conditional_mutual_information(pc.n, pc.cell_features())
        assert unique_tree(w), name
