"""TAN's swap rule between heavy numeric edges: a structure chosen on the first events gives way
when the events that follow say otherwise, though the edges at stake weigh nats each."""

from __future__ import annotations

import numpy as np

from streamnb import TANClassifier


def events(rng: np.random.Generator, n: int, ac_first: bool) -> list[tuple[dict, int]]:
    """``b = a + 0.05 e1``, ``c = b + 0.1 e2`` (a chain a-b-c: b-c, 2.3 nats, outweighs a-c by
    ``log(1.25) / 2 = 0.11``), or, ``ac_first``, ``c = a + 0.02 e2`` (a-c the heavier)."""
    y = rng.integers(0, 2, n)
    a = rng.standard_normal(n) + y
    b = a + 0.05 * rng.standard_normal(n)
    c = (a + 0.02 * rng.standard_normal(n)) if ac_first else (b + 0.1 * rng.standard_normal(n))
    return [({"a": float(a[i]), "b": float(b[i]), "c": float(c[i])}, int(y[i])) for i in range(n)]


def undirected(edges) -> set:
    return {frozenset(e) for e in edges}


def test_a_structure_from_the_first_events_gives_way_to_clear_evidence():
    rng = np.random.default_rng(3)
    model = TANClassifier(relearn_every=100)
    for x, y in events(rng, 100, ac_first=True):
        model.learn_one(x, y)
    assert frozenset(("a", "c")) in undirected(model.structure().edges)  # chosen on the first 100
    for x, y in events(rng, 5000, ac_first=False):
        model.learn_one(x, y)
    assert undirected(model.structure().edges) == {frozenset(("a", "b")), frozenset(("b", "c"))}
    # one change, at the 2,000th event (when 0.11 nats clear 3.09 standard errors); the margin
    # alone (5% of the 4.5 nats at stake) would hold a-c however many events came
    assert [(e["added"], e["removed"]) for e in model.history[1:]] == [([("b", "c")], [("a", "c")])]
    assert model.history[1]["event"] == 2000
