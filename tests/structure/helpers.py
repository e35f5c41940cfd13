"""Shared helpers of the structure-learning tests: networks, sampling, pgmpy oracles."""

from __future__ import annotations

import gzip
import logging
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from streamnb.naive_bayes.values import is_missing
from streamnb.stats.pairwise import PairCounts

DATA = Path(__file__).resolve().parents[1] / "data"
logging.getLogger("pgmpy").setLevel(logging.ERROR)

#: The mark of the tests that read the networks of ``tests/data`` (pgmpy's oracles): with
#: ``--dist loadgroup`` (the Makefile's tiers) they run in one process, where pgmpy is imported
#: and each network parsed and sampled once (:func:`network` and :func:`sample` are cached).
NETWORKS = pytest.mark.xdist_group("networks")


@lru_cache(maxsize=None)
def network(name: str):
    """A pgmpy network from ``tests/data/<name>.bif.gz``."""
    from pgmpy.readwrite import BIFReader

    text = gzip.open(DATA / f"{name}.bif.gz").read().decode()
    return BIFReader(string=text).get_model()


@lru_cache(maxsize=None)
def sample(name: str, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows forward-sampled from a network, values as strings (a cached, read-only frame)."""
    df = network(name).simulate(n, seed=seed, show_progress=False)
    return df.astype(str)


def pair_counts(df: pd.DataFrame, target: str | None = None) -> PairCounts:
    """PairCounts of the rows of ``df`` (class ``target``, or a single class)."""
    pc = PairCounts()
    feats = [c for c in df.columns if c != target]
    cols = [df[c].tolist() for c in feats]
    ys = df[target].tolist() if target else [0] * len(df)
    for r, y in enumerate(ys):
        pc.update([(f, col[r]) for f, col in zip(feats, cols) if not is_missing(col[r])], y)
    return pc


def pgmpy_edges(df: pd.DataFrame, root: str, kind: str = "chow-liu", class_node: str | None = None) -> set:
    """Directed feature edges of pgmpy's TreeSearch (class edges left out)."""
    from pgmpy.estimators import TreeSearch

    dag = TreeSearch(df, root_node=root, n_jobs=1).estimate(
        estimator_type=kind, class_node=class_node, show_progress=False
    )
    return {(p, c) for p, c in dag.edges() if p != class_node}


def random_tree(rng: np.random.Generator, n_nodes: int) -> np.ndarray:
    """Parent of each node of a random tree rooted at 0 (parent[0] = -1)."""
    parent = np.full(n_nodes, -1)
    for v in range(1, n_nodes):
        parent[v] = rng.integers(0, v)
    return parent


def sample_tree(rng: np.random.Generator, parent: np.ndarray, n_rows: int, card: int,
                strength: float = 0.8, target: np.ndarray | None = None) -> np.ndarray:
    """Rows of a tree-structured network: ``x_v`` copies its parent's value (shifted by the
    class when ``target`` is given) with probability ``strength``, else uniform."""
    x = np.zeros((n_rows, len(parent)), dtype=int)
    shift = np.zeros(n_rows, dtype=int) if target is None else target
    for v in range(len(parent)):
        uniform = rng.integers(0, card, n_rows)
        if parent[v] < 0:
            x[:, v] = (uniform + shift) % card if target is not None else uniform
        else:
            copy = rng.random(n_rows) < strength
            x[:, v] = np.where(copy, (x[:, parent[v]] + shift) % card, uniform)
    return x
