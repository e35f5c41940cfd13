"""One event on a tree learner's pair counts (streamnb/stats/pair_cells.py), run as plain Python
and compiled: the same bits as each other and as the statistics' own updates (PairCounts'
buffered add, the margins and entropy sums rebuilt from the table), every refusal before anything
changes."""

from __future__ import annotations

import importlib.util

import math
import random
from pathlib import Path

import numpy as np
import pytest

from streamnb import kernels
from streamnb.bn.cmi_sums import CMISums
from streamnb.bn.margins import Margins
from streamnb.stats import Index, PairCounts
from streamnb.stats import pair_cells as source

from tests.conftest import needs_native
from tests.stats.cells_checks import WRONG_VIEWS, assert_out_of_memory_changes_nothing

BUILT = kernels.compiled(source)
MODULES = [pytest.param(source, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip
CLASSES = ["a", "b", "c"]


@needs_native
def test_the_compiled_module_is_built_from_this_source():
    assert BUILT is not source, "streamnb.stats.pair_cells is not compiled from this source (pip install -e .)"


def test_the_digest_covers_every_compiled_source(tmp_path, monkeypatch):
    """PairCells extends category_cells.Categories, which extends cells.Event: the digest every
    build records covers every module with declarations, so an edit of any makes them stale."""
    root = Path(kernels.__file__).parent
    compiled = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.pxd"))
    assert {"stats/cells.pxd", "stats/category_cells.pxd", "stats/pair_cells.pxd"} <= set(compiled)
    for stem in ("cells", "category_cells", "pair_cells"):
        (tmp_path / "stats").mkdir(exist_ok=True)
        for ext in (".py", ".pxd"):
            (tmp_path / "stats" / f"{stem}{ext}").write_bytes((root / "stats" / f"{stem}{ext}").read_bytes())
    fake = tmp_path / "kernels.py"
    fake.write_bytes(Path(kernels.__file__).read_bytes())
    digests = []
    for edit in (None, "cells.py", "category_cells.pxd"):
        if edit is not None:
            (tmp_path / "stats" / edit).write_text((tmp_path / "stats" / edit).read_text() + "\n")
        spec = importlib.util.spec_from_file_location(f"kernels_copy_{len(digests)}", fake)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        digests.append(module.source_digest())
    assert len(set(digests)) == 3


class Tree:
    """Pair counts over 3 classes, their margins and entropy sums, learned through the cells of
    ``module`` (a new cell registered first, as TreePart does)."""

    def __init__(self, module, sums: bool = True) -> None:
        self.module = module
        self.pairs = PairCounts(Index(CLASSES))
        self.margins = Margins(self.pairs)
        self.sums = CMISums(self.pairs, self.margins) if sums else None
        self.made: tuple | None = None
        self.made_sums: tuple = ((), None)

    def cells(self):
        m = self.margins.current()
        key = (self.pairs.generation, len(self.pairs.cells.keys))
        if self.made is None or self.made[0] != key or self.made[1] is not m.D:
            n, ns = self.pairs.flat("n")
            self.made = (key, m.D, self.module.PairCells(n, *ns, m.Dv, *m.ds, m.Tv, *m.ts))
        return m, self.made[2]

    def sum_cells(self):
        views = self.sums.tables() if self.sums is not None else None
        if views is None:
            return None
        if self.made_sums[0] is not views:
            self.made_sums = (views, self.module.SumCells(*[v for table in views for v in table]))
        return self.made_sums[1]

    def learn(self, x: dict, k: int, w: float) -> bool:
        """Learn ``x``: through :meth:`PairCells.learn` if every cell is known (True), else
        registered, then :meth:`PairCells.learn_ids` (False)."""
        m, cells = self.cells()
        s = self.sum_cells()
        if cells.learn(x, self.pairs.cells.ids, m.cf, None, True, k, w, s):
            self.counted(m, s)
            return True
        ids = self.pairs.register(list(x.items()))
        m, cells = self.cells()
        s = self.sum_cells()
        cells.learn_ids(ids, [m.cf[c] for c in ids], k, w, s)
        self.counted(m, s)
        return False

    def counted(self, m: Margins, s) -> None:
        self.pairs.changes += 1
        m.changes = self.pairs.changes
        if s is not None:
            self.sums.counted()

    def state(self) -> bytes:
        m = self.margins
        arrays = [self.pairs.raw("n"), m.D, m.T]
        if self.sums is not None and getattr(self.sums, "L", None) is not None:
            arrays += [self.sums.S_joint, self.sums.S_marg, self.sums.GL, self.sums.T, self.sums.TL]
        return b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)


def stream(seed: int, count: int = 300, features: int = 5) -> list:
    """Events of categories, some features missing, new values appearing all along; weights
    that are binary fractions (sums of them are exact in any order)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        keys = rng.sample(range(features), rng.randint(1, features))
        x = {f"f{j}": str(rng.randint(0, 2 + i // 60)) for j in keys}
        out.append((x, rng.randrange(3), rng.choice([1.0, 0.5, 2.0, 0.25])))
    return out


def learned(module, events: list) -> Tree:
    tree = Tree(module)
    for i, (x, k, w) in enumerate(events):
        tree.learn(x, k, w)
        if i % 50 == 10:
            tree.sums.weights()  # a relearn: the sums current from here on (rebuilt if behind)
    return tree


@pytest.mark.parametrize("module", MODULES)
def test_learning_equals_the_statistics_own_updates(module):
    events = stream(1)
    tree = learned(module, events)
    oracle = PairCounts(Index(CLASSES))
    fast = 0
    for x, k, w in events:
        ids = oracle.register(list(x.items()))
        oracle.update_ids(k, np.array(ids, dtype=np.intp), w)
    np.testing.assert_array_equal(tree.pairs.n, oracle.n)  # np.add.at in event order: the same bits
    assert tree.pairs.cells.keys == oracle.cells.keys
    m, fresh = tree.margins.current(), Margins(oracle).current()
    C, F, K = len(CLASSES), len(fresh.fcells), len(fresh.cf)
    np.testing.assert_array_equal(m.D[:C, :F, :K], fresh.D[:C, :F, :K])
    np.testing.assert_array_equal(m.T[:C, :F], fresh.T[:C, :F])
    kept, n_kept = tree.sums.weights()  # kept one event at a time since the last growth
    again, n_again = CMISums(oracle, fresh).weights()  # from the table
    np.testing.assert_allclose(kept, again, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(n_kept, n_again)
    for x, k, w in events[-50:]:
        fast += tree.learn(x, k, w)
    assert fast == 50  # every cell known: the raw event read by the cells


@needs_native
def test_compiled_and_python_give_the_same_bits():
    events = stream(2, count=400)
    assert learned(source, events).state() == learned(BUILT, events).state()


def joint_oracle(tree: Tree, x: dict, parents: list, alpha: float, prior: float) -> list:
    """The log-likelihood per class of ``x`` from the arrays, term by term."""
    m = tree.margins.current()
    n = tree.pairs.n
    cells = {m.cf[tree.pairs.cells.get(c)]: tree.pairs.cells.get(c) for c in x.items()}
    out = []
    for c in range(len(CLASSES)):
        pa = parents[0 if len(parents) == 1 else c]
        terms = []
        for j, a in cells.items():
            av = alpha * m.nv[j]
            if pa[j] < 0:
                terms.append(math.log(n[c, a, a] + alpha) - math.log(m.T[c, j] + av))
            elif prior > 0:
                b = cells[pa[j]]
                th = (n[c, a, a] + alpha) / (m.T[c, j] + av)
                terms.append(math.log(n[c, a, b] + prior * th) - math.log(m.D[c, j, b] + prior))
            else:
                b = cells[pa[j]]
                terms.append(math.log(n[c, a, b] + alpha) - math.log(m.D[c, j, b] + av))
        out.append(math.fsum(terms))
    return out


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("prior", [0.0, 5.0])
def test_joint_is_the_tree_log_likelihood(module, prior):
    tree = learned(module, stream(3))
    m, cells = tree.cells()
    fid = m.fid
    chain = [-1] * len(m.fcells)  # f0 <- f1 <- f2, f3 and f4 roots
    chain[fid["f0"]], chain[fid["f1"]] = fid["f1"], fid["f2"]
    per_class = [chain, [-1] * len(m.fcells), chain]
    for parents in ([chain], per_class):
        x = {"f0": "1", "f1": "0", "f2": "2", "f4": "1"}
        got = cells.joint(x, tree.pairs.cells.ids, m.cf, None, True, parents, m.nv, 0.5, 3, prior)
        assert got == joint_oracle(tree, x, parents, 0.5, prior)
    assert cells.joint({"f0": "1", "f2": "2"}, tree.pairs.cells.ids, m.cf, None, True, [chain], m.nv, 0.5, 3,
                       prior) is None  # f0's parent is missing: summed out on the general path


@pytest.mark.parametrize("module", MODULES)
def test_an_event_that_is_not_plain_changes_nothing(module):
    tree = learned(module, stream(4, count=60))
    m, cells = tree.cells()
    s = tree.sum_cells()
    ids = tree.pairs.cells.ids
    before = tree.state()
    for x, exclude, strings_only, w in [
        ({"f0": "1", "f1": "unseen"}, None, True, 1.0),
        ({"f0": "1", "f1": True}, None, False, 1.0),
        ({"f0": "1", "f1": 1}, None, True, 1.0),
        ({"f0": "1", "f1": None}, None, True, 1.0),
        ({"f0": "1", 1: "1"}, None, True, 1.0),
        ({"f0": "1", "f1": "1"}, {"f1": 0}, True, 1.0),
        ({"f0": "1"}, None, True, 0.0),
        ({"f0": "1"}, None, True, -1.0),
        ({"f0": "1"}, None, True, math.nan),
        ({"f0": "1"}, None, True, math.inf),
        ({}, None, True, 1.0),
    ]:
        assert not cells.learn(x, ids, m.cf, exclude, strings_only, 0, w, s)
        assert cells.joint(x, ids, m.cf, exclude, strings_only, [[-1] * len(m.fcells)], m.nv, 1.0, 3, 0.0) is None \
            or w != 1.0
    x = {"f0": "1"}
    for parents, nv, alpha, n_classes in [([[-1] * 9] * 2, m.nv, 1.0, 3), ([[-1] * 9], m.nv, 0.0, 3),
                                          ([[-1] * 9], m.nv, 1.0, 0), ([[]], m.nv, 1.0, 3), ([[-1] * 9], [], 1.0, 3),
                                          ([[-1] * 9], [1] * 9, 1.0, 3)]:  # fmt: skip
        assert cells.joint(x, ids, m.cf, None, True, parents, nv, alpha, n_classes, 0.0) is None
    for w in (0.0, math.nan, -1.0):
        with pytest.raises(ValueError):
            cells.learn_ids([0], [0], 0, w, s)
    with pytest.raises(ValueError):
        cells.learn_ids([0, 1], [0], 0, 1.0, s)
    assert tree.state() == before


@pytest.mark.parametrize("module", MODULES)
def test_ids_outside_the_views_raise_before_anything_changes(module):
    """Views that do not match the ids are a bug: an IndexError, never a write past the end."""
    tree = learned(module, stream(5, count=60))
    m, cells = tree.cells()
    s = tree.sum_cells()
    assert s is not None
    ids = tree.pairs.cells.ids
    x = {"f0": "1", "f1": "0"}
    before = tree.state()
    a, b = ids[("f0", "1")], ids[("f1", "0")]
    for cell_ids, fids in ([a, 10**6], [m.cf[a], m.cf[b]]), ([a, b], [m.cf[a], 10**6]), ([a, -1], [0, 1]), \
            ([a, b], [m.cf[a], -1]):
        with pytest.raises(IndexError):
            cells.learn_ids(cell_ids, fids, 0, 1.0, s)
    for k in (-1, 10**6):
        with pytest.raises(IndexError):
            cells.learn(x, ids, m.cf, None, True, k, 1.0, s)
    far = dict(ids)
    far[("f1", "0")] = 10**6
    wide = m.cf + [0] * (10**6 + 1 - len(m.cf))
    with pytest.raises(IndexError):
        cells.learn(x, far, wide, None, True, 0, 1.0, None)
    with pytest.raises(IndexError):
        cells.joint(x, far, wide, None, True, [[-1] * len(m.fcells)], m.nv, 1.0, 3, 0.0)
    with pytest.raises(IndexError):
        cells.joint(x, ids, m.cf, None, True, [[-1] * len(m.fcells)], m.nv, 1.0, 10**6, 0.0)
    small = tree.module.SumCells(*[v for table in tree.sums.tables() for v in table][:16], np.zeros(0).data, 1, 1, 1)
    with pytest.raises(IndexError):  # the sums checked too, before the counts are written
        cells.learn(x, ids, m.cf, None, True, 0, 1.0, small)
    assert tree.state() == before


@needs_native
@WRONG_VIEWS
def test_the_compiled_cells_refuse_a_view_of_another_type_or_layout(make_view):
    tree = learned(source, stream(6, count=30))
    m = tree.margins.current()
    n, ns = tree.pairs.flat("n")
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.PairCells(n, *ns, make_view(m.Dv), *m.ds, m.Tv, *m.ts)
    views = [v for table in tree.sums.tables() for v in table]
    views[4] = make_view(views[4])
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.SumCells(*views)


@pytest.mark.parametrize("module", MODULES)
def test_a_negative_stride_is_refused(module):
    tree = learned(module, stream(7, count=30))
    m = tree.margins.current()
    n, (n0, n1, n2) = tree.pairs.flat("n")
    with pytest.raises(ValueError):
        module.PairCells(n, n0, -n1, n2, m.Dv, *m.ds, m.Tv, *m.ts)


@needs_native
def test_out_of_memory_half_way_changes_nothing():
    """An event of known cells on new cells (their scratch not grown yet): every allocation is
    made before anything is written."""
    events = stream(8, count=200, features=40)
    x = {f"f{j}": str(j % 3) for j in range(40)}

    def trained() -> Tree:
        tree = learned(BUILT, events)
        tree.learn(x, 0, 1.0)  # every cell of x known
        return tree

    def act(tree: Tree):
        m, sums = tree.margins.current(), tree.sum_cells()
        n, ns = tree.pairs.flat("n")
        cells = BUILT.PairCells(n, *ns, m.Dv, *m.ds, m.Tv, *m.ts)
        return lambda: cells.learn(x, tree.pairs.cells.ids, m.cf, None, True, 1, 0.5, sums)

    failures = assert_out_of_memory_changes_nothing(trained, act, Tree.state, step=1)
    assert failures >= 5, failures  # the five scratch arrays
