"""One event of categories (streamnb/stats/category_cells.py), run as plain Python and compiled:
the same bits as each other and as the statistics' own updates (Counts.add), CategoricalNB's
formula, every refusal before anything changes."""

from __future__ import annotations

import math
import random

import pytest

from streamnb import kernels
from streamnb.stats import Counts, Index
from streamnb.stats import category_cells as source

from tests.conftest import needs_native

BUILT = kernels.compiled(source)
MODULES = [pytest.param(source, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip


@needs_native
def test_the_compiled_module_is_built_from_this_source():
    assert BUILT is not source, "streamnb.stats.category_cells is not compiled from this source (pip install -e .)"


@pytest.mark.parametrize("module", MODULES)
def test_take_refuses_ids_of_different_lengths(module):
    event = module.Categories()
    with pytest.raises(ValueError):
        event.take([0, 1], [0])
    event.take([0, 1], [5, -1])  # the same lengths: taken


class Table:
    """Class-by-(feature, category) Counts (3 classes) and class-by-feature totals, with a
    CategoryCells over their views; |X_f| per feature kept as CategoricalPart keeps it."""

    def __init__(self, module) -> None:
        self.cells, self.features = Index(), Index()
        classes = Index(["a", "b", "c"])
        self.counts, self.totals = Counts([classes, self.cells]), Counts([classes, self.features])
        self.nv: list = []
        self.module = module
        self.event = None

    def register(self, x: dict) -> None:
        """What CategoricalPart.learn_one does for new categories (outside the compiled path)."""
        for f, v in x.items():
            if (f, v) not in self.cells.ids:
                self.cells.add((f, v))
                if f not in self.features.ids:
                    self.features.add(f)
                    self.nv.append(0.0)
                self.nv[self.features.ids[f]] += 1.0
        self.counts.fit()
        self.totals.fit()
        self.event = None

    def view(self):
        if self.event is None:
            (cv, (c0, c1)), (tv, (t0, t1)) = self.counts.flat("n"), self.totals.flat("n")
            self.event = self.module.CategoryCells(cv, c0, c1, tv, t0, t1)
        return self.event

    def learn(self, x: dict, k: int, w: float = 1.0) -> bool:
        return self.view().learn(x, self.cells.ids, self.features.ids, k, w, None, False)

    def joint(self, x: dict, alpha: float = 1.0, smooth: bool = False):
        return self.view().joint(x, self.cells.ids, self.features.ids, self.nv, 3, alpha, smooth, None, False)

    def step(self, x: dict, k: int, w: float = 1.0, alpha: float = 0.5):
        """Predict, then learn, on one read (as :meth:`Part.step_fast`): ``joint``, then
        ``learn`` of the event read (None)."""
        out = self.joint(x, alpha)
        return None if out is None else (out, self.view().learn(None, self.cells.ids, self.features.ids, k, w, None,
                                                                 False))

    def state(self) -> bytes:
        return self.counts.raw("n").tobytes() + self.totals.raw("n").tobytes()


def rows(seed: int, count: int = 300) -> list:
    rng = random.Random(seed)
    return [({f"f{j}": rng.choice(["x", "y", "z", 1, 2]) for j in rng.sample(range(5), rng.randint(1, 5))},
             rng.randrange(3), rng.choice([1.0, 0.5, 2.0])) for _ in range(count)]  # fmt: skip


@pytest.mark.parametrize("module", MODULES)
def test_category_learning_and_joint(module):
    """Counts as Counts.add counts them; the joint is CategoricalNB's formula."""
    ours, oracle = Table(module), Table(source)
    for x, k, w in rows(0):
        if not ours.learn(x, k, w):  # a new category: the general path registers it first
            ours.register(x)
            assert ours.learn(x, k, w)
        oracle.register(x)
        oracle.counts.add((k, oracle.cells.lookup(list(x.items()))), w)
        oracle.totals.add((k, oracle.features.lookup(list(x))), w)
    assert ours.state() == oracle.state()
    n, total = ours.counts.view("n"), ours.totals.view("n")
    got = ours.joint({"f0": "x", "f1": "new", "f9": "y"}, alpha=0.5)
    smoothed = ours.joint({"f0": "x", "f1": "new"}, alpha=0.5, smooth=True)
    x0, f0, f1 = ours.cells.ids[("f0", "x")], ours.features.ids["f0"], ours.features.ids["f1"]
    for c in range(3):
        p0 = (n[c, x0] + 0.5) / (total[c, f0] + 0.5 * ours.nv[f0])
        assert got[c] == pytest.approx(math.log(p0), rel=1e-13)
        unseen = 0.5 / (total[c, f1] + 0.5 * ours.nv[f1])
        assert smoothed[c] == pytest.approx(math.log(p0) + math.log(unseen), rel=1e-13)


@needs_native
def test_category_cells_compiled_and_python_give_the_same_bits():
    fast, slow = Table(BUILT), Table(source)
    for i, (x, k, w) in enumerate(rows(1, 400)):
        assert fast.joint(x, smooth=i % 2 == 0) == slow.joint(x, smooth=i % 2 == 0)
        got = fast.step(x, k, w) if i % 3 else fast.learn(x, k, w)
        assert got == (slow.step(x, k, w) if i % 3 else slow.learn(x, k, w))
        if not (got[1] if i % 3 else got):
            fast.register(x)
            slow.register(x)
        assert fast.state() == slow.state()


@pytest.mark.parametrize("module", MODULES)
def test_a_category_event_that_is_not_plain_changes_nothing(module):
    cells = Table(module)
    for x, k, w in rows(2, 30):
        cells.register(x)
        cells.learn(x, k, w)
    before = cells.state()
    for bad in ({"f0": True}, {"f0": 1.5}, {"f0": None}, {1: "x"}, {"f0": ("t",)}):
        assert not cells.learn(bad, 0), bad
        assert cells.joint(bad) is None, bad
        assert cells.step(bad, 0) is None, bad
        assert cells.view().learn(None, cells.cells.ids, cells.features.ids, 0, 1.0, None, False) is False
    assert cells.view().learn({"f0": 1}, cells.cells.ids, cells.features.ids, 0, 1.0, None, True) is False  # ints: numbers
    assert cells.view().learn({"f0": "x"}, cells.cells.ids, cells.features.ids, 0, 1.0, {"f0": 0}, False) is False
    assert not cells.learn({"f0": "x", "f1": "never"}, 0)  # a new category: the general path
    assert cells.step({"f0": "x", "f1": "never"}, 0)[1] is False
    assert not cells.learn({}, 0) and not cells.learn({"f0": "x"}, 0, 0.0)
    assert cells.state() == before
    with pytest.raises(IndexError):
        cells.view().learn({"f0": "x"}, {("f0", "x"): 10**6}, cells.features.ids, 0, 1.0, None, False)
    with pytest.raises(IndexError):
        cells.step({"f0": "x"}, 10**6)  # a class outside the cells
    assert cells.state() == before
