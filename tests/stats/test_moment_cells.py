"""One event on the numeric tree's cells (streamnb/stats/moment_cells.py), run as plain Python and
compiled: the same bits as each other and as the statistics' own updates (Welford.update_ids,
CoMoments.update_ids) and the tree's own terms (streamnb.bn.gaussian_terms), every refusal before
anything changes, IndexError for cells outside the views before any write."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from streamnb import kernels
from streamnb.bn import gaussian_pairs, gaussian_terms
from streamnb.bn.scales import log_key
from streamnb.stats import Index, Welford, cells
from streamnb.stats import moment_cells as source
from streamnb.stats.comoments import CoMoments

from tests.conftest import needs_native
from tests.stats.cells_checks import WRONG_VIEWS, assert_out_of_memory_changes_nothing

BUILT = kernels.compiled(source)
MODULES = [pytest.param(source, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip
FEATURES = 4  # each with its log slot after it: ids 2 j (the feature) and 2 j + 1 (its slot)
LIMIT = 6  # the last feature and its slot have no co-moments
#: Per feature, its parent's feature (-1: the class only); f2 stands on its log scale.
PARENTS = [-1, 0, 1, 1]
ON_LOG = {2}


class Tree:
    """A Welford statistic (3 classes), its pooled row and co-moments, with MomentCells over them."""

    def __init__(self, module, scales: bool = True, features: int = FEATURES) -> None:
        names: list = []
        for j in range(features):
            names += [f"f{j}", log_key(f"f{j}")]
        self.features = Index(names)
        classes = Index(["a", "b", "c"])
        self.welford = Welford([classes, self.features])
        self.pooled = Welford([Index(["all"]), self.features])
        self.co = CoMoments([classes, self.features], max_features=LIMIT)
        self.spread = [0.0] * len(names)
        self.top, self.top_id = None, -1
        self.scales = bytearray([1, 0] * features) if scales else None
        self.modes = bytearray(v for j in range(features) for v in ((2 if j in ON_LOG else 1), 0))
        for stat in (self.welford, self.pooled, self.co):
            stat.fit()
        self.module = module
        self.cells = module.MomentCells(*self.views())
        self.ids = self.features.ids

    def views(self) -> tuple:
        (n, (n0, n1)), (pn, (_, p1)) = self.welford.flat("n"), self.pooled.flat("n")
        cn, (s0, s1, s2) = self.co.flat("n")
        return (n, self.welford.flat("mean")[0], self.welford.flat("m2")[0], n0, n1,
                pn, self.pooled.flat("mean")[0], self.pooled.flat("m2")[0], p1,
                cn, self.co.flat("mean")[0], self.co.flat("m2")[0], self.co.flat("c")[0], s0, s1, s2)  # fmt: skip

    def learn(self, x: dict, k: int, w: float = 1.0, ids: dict | None = None, limit: int = LIMIT, cells=None):
        got = (cells or self.cells).learn_moments(x, self.ids if ids is None else ids, k, w, self.spread, self.top,
                                                  self.top_id, None, True, limit, self.scales)
        if got is not None:
            self.top, self.top_id = got
        return got

    def parents(self) -> list:
        """Per slot id, its parent's slot id (-1 the class only); log slots of the features on
        their log scale stand for them."""
        slot = [2 * j + (1 if j in ON_LOG else 0) for j in range(FEATURES)]
        out = [-1] * (2 * FEATURES)
        for j, p in enumerate(PARENTS):
            out[slot[j]] = -1 if p < 0 else slot[p]
        return out

    def joint(self, x: dict, eps: float = 1e-3, parents: list | None = None, ids: dict | None = None,
              modes: bytearray | None | str = "default"):
        return self.cells.joint_tree(x, self.ids if ids is None else ids, parents or self.parents(), None, True,
                                     eps, 3, self.modes if modes == "default" else modes)

    def state(self) -> bytes:
        arrays = [s.raw(f) for s in (self.welford, self.pooled, self.co) for f in s.fields]
        return b"".join(a.tobytes() for a in arrays) + repr((self.spread, self.top, self.top_id)).encode()


def events(seed: int, count: int = 300) -> list:
    """Events of the four features, values >= 0 (a log slot learns them all)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        keys = rng.sample(range(FEATURES), rng.randint(1, FEATURES))
        x = {f"f{j}": rng.choice([abs(rng.gauss(5.0, 3.0)), float(rng.randint(0, 3)), rng.randint(0, 9)]) for j in keys}
        out.append((x, rng.randrange(3), rng.choice([1.0, 0.5, 2.0, 1e-3])))
    return out


def test_the_constants_are_the_tree_terms_ones():
    assert source.PRIOR == gaussian_pairs.PRIOR and source.TINY == gaussian_terms.TINY


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("scales", [True, False])
def test_learning_equals_the_statistics_updates_bit_for_bit(module, scales):
    """The cells after a stream: what Welford.update_ids and CoMoments.update_ids (numpy) give on
    the same events with their log slots, and the spread is the pooled M2 / n of the features."""
    ours, oracle = Tree(module, scales), Tree(source, scales)
    for x, k, w in events(0):
        assert ours.learn(x, k, w) is not None
        keys = list(x) + ([log_key(f) for f in x] if scales else [])
        values = [float(v) for v in x.values()] + ([math.log1p(v) for v in x.values()] if scales else [])
        ids, v = oracle.features.lookup(keys), np.array(values)
        oracle.welford.update_ids(k, ids, v, w)
        oracle.pooled.update_ids(0, ids, v, w)
        oracle.co.update_ids(k, ids, v, w)
    for stat in ("welford", "pooled", "co"):
        for field in getattr(oracle, stat).fields:
            assert getattr(ours, stat).raw(field).tobytes() == getattr(oracle, stat).raw(field).tobytes(), field
    n, m2 = oracle.pooled.count()[0][::2], oracle.pooled.m2()[0][::2]
    assert ours.spread[::2] == (m2 / n).tolist() and ours.spread[1::2] == [0.0] * FEATURES
    assert ours.co.raw("n")[:, LIMIT - 2, 0].sum() > 0  # the pairs below the limit learned


@pytest.mark.parametrize("module", MODULES)
def test_joint_is_the_tree_terms(module):
    """Every observed feature's parent observed: the exact sum of gaussian_terms.tree_terms (the
    plain functions the tree scores with), bit for bit; a parent missing: None."""
    tree = Tree(module)
    for x, k, w in events(1):
        tree.learn(x, k, w)
    wf = tree.views()
    wf_views = (wf[0], wf[1], wf[2], (wf[3], wf[4]), wf[5], wf[6], wf[7], (0, wf[8]))
    co_views = (*wf[9:13], wf[13:16])
    parents = tree.parents()
    children: list = [[] for _ in parents]
    for j, p in enumerate(parents):
        if p >= 0:
            children[p].append(j)
    logs = frozenset(2 * j + 1 for j in ON_LOG)
    checked = 0
    for x, _, _ in events(2, 200):
        x = {f: (-v if f == "f2" and v == 3 else v) for f, v in x.items()}  # f2 below 0: outside its log scale
        got = tree.joint(x)
        obs = {}
        for f, v in x.items():
            j = tree.ids[f]
            if j // 2 in ON_LOG:
                if not v >= 0:
                    continue
                j, v = j + 1, math.log1p(v)
            obs[j] = float(v)
        if any(parents[j] >= 0 and parents[j] not in obs for j in obs):
            assert got is None
            continue
        terms = gaussian_terms.tree_terms(obs, parents, children, 1e-3, wf_views, co_views, logs, 3)
        assert got == ([math.fsum(col) for col in zip(*terms.values())] if terms else [0.0] * 3), x
        checked += 1
    assert checked > 50
    assert tree.joint({"f0": 1.0}, parents=[-2] + parents[1:]) is None  # a categorical parent: its part's term


@needs_native
def test_compiled_and_python_give_the_same_bits():
    assert BUILT is not source and BUILT.__name__ == "streamnb.stats.moment_cells_compiled"
    fast, slow = Tree(BUILT), Tree(source)
    for i, (x, k, w) in enumerate(events(3, 500)):
        if i % 3 == 0:
            assert fast.joint(x) == slow.joint(x)
            assert fast.joint(x, eps=0.0) == slow.joint(x, eps=0.0)
        if i == 250:  # f3's first value below 0 (its slot emptied by the caller) from here on
            for tree in (fast, slow):
                slot = tree.ids[log_key("f3")]
                for stat in (tree.welford, tree.pooled):
                    for field in stat.fields:
                        stat.raw(field)[:, slot] = 0.0
        if i > 250 and "f3" in x:
            x["f3"] = -float(x["f3"]) - 1.0
        assert fast.learn(x, k, w) == slow.learn(x, k, w)
        assert fast.state() == slow.state()


@pytest.mark.parametrize("module", MODULES)
def test_an_event_that_is_not_plain_changes_nothing(module):
    """None, nothing changed: the caller's general path decides (registers a feature, empties a
    log slot, drops a missing value, raises the error)."""
    tree = Tree(module)
    for x, k, w in events(4, 30):
        tree.learn(x, k, w)
    before = tree.state()
    for bad in ({"f0": 1.0, "new": 2.0}, {"f0": 1.0, "f1": None}, {"f0": "x"}, {"f0": float("inf")},
                {"f0": float("nan")}, {"f0": 1e101}, {"f0": 10**400}, {"f0": True}, {1: 2.0}, {}):  # fmt: skip
        assert tree.learn(bad, 0) is None, bad
        if bad and "new" not in bad:
            assert tree.joint(bad) is None, bad
    for w in (0.0, -1.0, float("inf"), float("nan")):
        assert tree.learn({"f0": 1.0}, 0, w) is None
    assert tree.learn({"f0": 1.0, "f1": -2.0}, 0) is None  # f1's first value below 0: its slot to empty
    assert tree.cells.learn_moments({"f0": 1.0}, tree.ids, 0, 1.0, tree.spread, None, -1, {"f0": 0}, True, LIMIT,
                                    tree.scales) is None  # another part's feature
    assert tree.cells.learn_moments({"f3": 1.0}, tree.ids, 0, 1.0, tree.spread, None, -1, None, True, LIMIT,
                                    bytearray(4)) is None  # a feature newer than the scales
    for wrong in ([1, 0], bytes([1, 0])):
        with pytest.raises(TypeError, match="scales"):
            tree.cells.learn_moments({"f0": 1.0}, tree.ids, 0, 1.0, tree.spread, None, -1, None, True, LIMIT, wrong)
    with pytest.raises(TypeError, match="scales"):
        tree.cells.joint_tree({"f0": 1.0}, tree.ids, tree.parents(), None, True, 0.0, 3, [1, 0])
    assert tree.state() == before
    assert tree.joint({"f0": 1.0, "unknown": 2.0}) == tree.joint({"f0": 1.0})  # unknown features: left out


@pytest.mark.parametrize("module", MODULES)
def test_ids_outside_the_cells_raise_before_anything_changes(module):
    """Views that do not match the ids are a bug: an IndexError, never a write past the end."""
    tree = Tree(module)
    tree.learn({"f0": 1.0, "f1": 2.0}, 0)
    before = tree.state()
    for far in (10**6, -1):
        ids = {**tree.ids, "f1": far}
        with pytest.raises(IndexError):
            tree.learn({"f0": 1.0, "f1": 2.0}, 0, ids=ids)
        if far > 0:
            with pytest.raises(IndexError):
                tree.joint({"f0": 1.0, "f1": 2.0}, parents=[-1] * (far + 1), ids=ids, modes=None)
    with pytest.raises(IndexError):  # a class outside the cells
        tree.learn({"f0": 1.0}, 10**6)
    views = tree.views()
    small = module.MomentCells(*views[:13], 10**6, 10**6, 10**6)  # every pair past the co-moments' end
    with pytest.raises(IndexError):
        tree.learn({"f0": 1.0, "f1": 2.0}, 0, cells=small)
    with pytest.raises(IndexError):
        small.joint_tree({"f0": 1.0, "f1": 2.0}, tree.ids, tree.parents(), None, True, 0.0, 3, tree.modes)
    assert tree.state() == before


@needs_native
def test_out_of_memory_half_way_changes_nothing():
    """Every allocation is made before anything is written: when one fails, whichever it is, a
    MemoryError and nothing changed; learning the event after it gives the same state as never
    failing (as tests/stats/test_cells.py: the old spread entries are kept alive so that the
    event's floats run the free list dry)."""
    names = [f"f{j}" for j in range(150)]
    event = {f: float(j % 7) for j, f in enumerate(names)}

    def trained() -> Tree:
        tree = Tree(BUILT, features=150)
        for i in range(2):
            tree.learn({f: v + i for f, v in event.items()}, 0)
        return tree

    def act(tree: Tree):
        kept = list(tree.spread)
        return lambda: (kept, tree.learn(event, 0))[1]

    failures = assert_out_of_memory_changes_nothing(trained, act, Tree.state)
    assert failures > 6  # 150 new spread floats: many of the calls failed, at different allocations


@needs_native
@WRONG_VIEWS
def test_the_compiled_cells_refuse_a_view_of_another_type_or_layout(make_view):
    views = list(Tree(source).views())
    views[10] = make_view(views[10])  # the co-moments' means
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.MomentCells(*views)


def test_the_compiled_build_covers_the_cells_it_takes_its_base_from():
    """The compiled module's base class comes from the compiled cells: its digest covers their
    source and declarations too, so an edit of either makes both builds stale."""
    if BUILT is not source:
        assert BUILT.SOURCE_SHA256 == kernels.source_digest()
        assert BUILT.MomentCells.__mro__[1] is kernels.compiled(cells).WelfordCells
