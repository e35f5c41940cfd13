"""A structure that holds still: the swap margin is relative to the edges that change (or, when
lower, a bar of standard errors of their weights), and an edge in place pays only the price to
stay."""

from __future__ import annotations

import numpy as np
import pytest

from streamnb.structure import Structure
from streamnb.structure.chow_liu import edge_price, edge_prices, favour_incumbents, forest_structure, hold
from streamnb.structure.hysteresis import SWAP_Z, swap_noise

NAMES = ["a", "b", "c", "d", "e", "f"]


def chain_weights() -> np.ndarray:
    """Strong chain a-b-c-d-e (2 nats each); f weighs 0.30 with a and 0.40 with e."""
    w = np.zeros((6, 6))
    for i in range(4):
        w[i, i + 1] = w[i + 1, i] = 2.0
    w[0, 5] = w[5, 0] = 0.30
    w[4, 5] = w[5, 4] = 0.40
    np.fill_diagonal(w, -np.inf)
    return w


def test_a_large_structure_does_not_shield_a_wrong_edge():
    w = chain_weights()
    old = Structure({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "f": "a"}, {}, True)
    new = forest_structure(w, NAMES, class_parent=True)
    assert ("e", "f") in new.edges
    # a margin relative to the whole structure (5% of 8.3 nats) would keep a-f; relative to the
    # edges at stake (0.70 nats) the gain of 0.10 is clear
    assert ("e", "f") in hold(old, new, w, NAMES, 0.05).edges
    assert ("a", "f") in hold(old, new, w, NAMES, 0.20).edges  # 0.10 < 0.20 * 0.70: held


def test_a_near_tie_does_not_swap():
    w = chain_weights()
    w[0, 5] = w[5, 0] = 0.39
    old = Structure({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "f": "a"}, {}, True)
    held = hold(old, forest_structure(w, NAMES, class_parent=True), w, NAMES, 0.05)
    assert ("a", "f") in held.edges and held.weights[("a", "f")] == 0.39  # weights refreshed


def test_an_edge_in_place_pays_the_price_to_stay_only():
    n_params, n = np.full((2, 2), 2.0), np.full((2, 2), 10_000.0)
    prices = edge_prices("chi2", n_params, n)
    enter, stay = float(prices[0, 0, 1]), float(prices[1, 0, 1])
    assert stay < enter and enter == float(edge_price("chi2", np.array(2.0), np.array(10_000.0)))
    raw = np.array([[-np.inf, (enter + stay) / 2], [(enter + stay) / 2, -np.inf]])  # between the two
    w = raw - prices[0]
    assert forest_structure(w, ["x", "y"], class_parent=True).edges == []  # a newcomer stays out
    current = Structure({"x": None, "y": "x"}, {}, True)
    kept = favour_incumbents(w, prices, ["x", "y"], current)
    assert forest_structure(kept, ["x", "y"], class_parent=True).edges == [("x", "y")]  # the incumbent stays
    gone = favour_incumbents(np.full((2, 2), stay / 2) - prices[0], prices, ["x", "y"], current)
    assert forest_structure(gone, ["x", "y"], class_parent=True).edges == []  # below the price to stay: out


def heavy_weights(bc: float, ac: float) -> np.ndarray:
    """a-b at 5 nats; b-c and a-c as given (strongly correlated numbers weigh nats each)."""
    w = np.array([[-np.inf, 5.0, ac], [5.0, -np.inf, bc], [ac, bc, -np.inf]])
    return w


def test_between_heavy_edges_a_clear_gain_beats_the_relative_margin():
    w = heavy_weights(bc=4.66, ac=4.55)  # a gain of 0.11 nats per event, 9.2 nats at stake
    old = Structure({"a": None, "b": "a", "c": "a"}, {}, True)
    new = forest_structure(w, ["a", "b", "c"], class_parent=True)
    assert ("b", "c") in new.edges
    assert hold(old, new, w, ["a", "b", "c"], 0.05).edges == old.edges  # 0.11 < 0.05 * 9.2: held
    # the gain's standard error over 5,000 events: sqrt((1 - e^-9.32) + (1 - e^-9.1)) / 5000) = 0.020
    assert abs(swap_noise([4.66, 4.55], 5000.0) - 0.0200) < 1e-4
    assert ("b", "c") in hold(old, new, w, ["a", "b", "c"], 0.05, n=5000.0).edges  # 0.11 > 3.09 * 0.020
    assert hold(old, new, w, ["a", "b", "c"], 0.05, n=1000.0).edges == old.edges  # 0.11 < 3.09 * 0.045


def test_light_edges_keep_the_relative_margin_whatever_the_events():
    w = chain_weights()
    w[0, 5] = w[5, 0] = 0.39  # the near tie above: 0.01 nats of gain
    old = Structure({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "f": "a"}, {}, True)
    new = forest_structure(w, NAMES, class_parent=True)
    assert ("a", "f") in hold(old, new, w, NAMES, 0.05, n=10_000.0).edges  # 3.09 standard errors: 0.032 > 0.01
    assert ("e", "f") in hold(old, new, w, NAMES, 0.05, n=10_000_000.0).edges  # 0.0010 < 0.01: a real gain
    assert SWAP_Z == pytest.approx(3.090232306167813, abs=1e-12)
