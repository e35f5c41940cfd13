"""One event on Welford cells (streamnb/stats/welford_event.py), run as plain Python and compiled:
the same bits as each other and as :meth:`Welford.update_ids`, every refusal before anything
changes, and the compiled module used only when it was built from this source."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from streamnb import kernels
from streamnb.stats import Index, Welford, welford_event

from tests.conftest import needs_native

BUILT = kernels.compiled(welford_event)
MODULES = [pytest.param(welford_event, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip


class Cells:
    """A Welford statistic (3 classes) and its pooled row, with a WelfordCells over their views."""

    def __init__(self, module, features: int = 6) -> None:
        self.names = [f"f{j}" for j in range(features)]
        self.welford = Welford([Index(["a", "b", "c"]), Index(self.names)])
        self.pooled = Welford([Index(["all"]), Index(self.names)])
        self.spread = [0.0] * features
        self.top, self.top_id = None, -1
        (n, (n0, n1)), (pn, (_, p1)) = self.welford.flat("n"), self.pooled.flat("n")
        self.cells = module.WelfordCells(n, self.welford.flat("mean")[0], self.welford.flat("m2")[0], n0, n1,
                                         pn, self.pooled.flat("mean")[0], self.pooled.flat("m2")[0], p1)  # fmt: skip
        self.ids = self.welford.axes[1].ids

    def learn(self, x: dict, k: int, w: float = 1.0, tracked: int = -1):
        got = self.cells.learn(x, self.ids, k, w, self.spread, self.top, self.top_id, None, True, tracked)
        if got is not None:
            self.top, self.top_id = got
        return got

    def joint(self, x: dict, ddof: int = 0, eps: float = 1e-9):
        return self.cells.joint(x, self.ids, 3, ddof, eps, None, True)

    def state(self) -> bytes:
        arrays = [s.raw(f) for s in (self.welford, self.pooled) for f in ("n", "mean", "m2")]
        return b"".join(a.tobytes() for a in arrays) + repr((self.spread, self.top, self.top_id)).encode()


def events(seed: int, count: int = 300, features: int = 6) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        keys = rng.sample(range(features), rng.randint(1, features))
        x = {f"f{j}": rng.choice([rng.gauss(50.0, 20.0), float(rng.randint(-3, 3)), rng.randint(0, 9)]) for j in keys}
        out.append((x, rng.randrange(3), rng.choice([1.0, 0.5, 2.0, 1e-3])))
    return out


@pytest.mark.parametrize("module", MODULES)
def test_learning_equals_welford_update_ids_bit_for_bit(module):
    """The cells after a stream: what Welford.update_ids (numpy, the batch statistic's one-event
    form) gives on the same events, and the spread is the pooled M2 / n."""
    ours, oracle = Cells(module), Cells(welford_event)
    for x, k, w in events(0):
        assert ours.learn(x, k, w) is not None
        ids = oracle.welford.axes[1].lookup(list(x))
        values = np.array([float(v) for v in x.values()])
        oracle.welford.update_ids(k, ids, values, w)
        oracle.pooled.update_ids(0, ids, values, w)
    for field in ("n", "mean", "m2"):
        assert ours.welford.raw(field).tobytes() == oracle.welford.raw(field).tobytes()
        assert ours.pooled.raw(field).tobytes() == oracle.pooled.raw(field).tobytes()
    n, m2 = oracle.pooled.count()[0], oracle.pooled.m2()[0]
    assert ours.spread == (m2 / n).tolist()
    assert ours.top == max(ours.spread) or ours.top is None


@needs_native
def test_compiled_and_python_give_the_same_bits():
    assert BUILT is not welford_event and BUILT.__name__ == "streamnb.stats.welford_event_compiled"
    fast, slow = Cells(BUILT), Cells(welford_event)
    for i, (x, k, w) in enumerate(events(1, 500)):
        if i % 3 == 0:
            assert fast.joint(x) == slow.joint(x)
            assert fast.joint(x, ddof=1, eps=0.0) == slow.joint(x, ddof=1, eps=0.0)
        tracked = i % 4 - 1  # -1 (all), 0, 1, 2
        assert fast.learn(x, k, w, tracked) == slow.learn(x, k, w, tracked)
        assert fast.state() == slow.state()


@pytest.mark.parametrize("module", MODULES)
def test_joint_is_the_gaussian_log_density(module):
    cells = Cells(module, features=2)
    for x, k, w in events(2, 60, features=2):
        cells.learn(x, k, w)
    n, mean, m2 = cells.welford.count(), cells.welford.mean(), cells.welford.m2()
    eps = 1e-9 * max(cells.spread)
    got = cells.joint({"f0": 1.5, "f1": -2}, eps=eps)
    for c in range(3):
        var = m2[c] / n[c] + eps
        expect = sum(-0.5 * math.log(2 * math.pi * v) - (x - m) ** 2 / (2 * v)
                     for x, m, v in zip((1.5, -2.0), mean[c], var))  # fmt: skip
        assert got[c] == pytest.approx(expect, rel=1e-13)


@pytest.mark.parametrize("module", MODULES)
def test_an_event_that_is_not_plain_changes_nothing(module):
    """None, nothing changed: the caller's general path decides (registers a feature, drops a
    missing value, raises the error)."""
    cells = Cells(module)
    for x, k, w in events(3, 20):
        cells.learn(x, k, w)
    before = cells.state()
    for bad in ({"f0": 1.0, "new": 2.0}, {"f0": 1.0, "f1": None}, {"f0": "x"}, {"f0": float("inf")},
                {"f0": float("nan")}, {"f0": 1e101}, {"f0": 10**400}, {"f0": True}, {1: 2.0}, {}):  # fmt: skip
        assert cells.learn(bad, 0) is None, bad
        if bad and "new" not in bad:
            assert cells.joint(bad) is None, bad
    for w in (0.0, -1.0, float("inf"), float("nan")):
        assert cells.learn({"f0": 1.0}, 0, w) is None
    assert cells.cells.learn({"f0": 1.0}, cells.ids, 0, 1.0, cells.spread, None, -1, {"f0": 0}, True, -1) is None
    assert cells.state() == before
    assert cells.joint({"f0": 1.0, "unknown": 2.0}) == cells.joint({"f0": 1.0})  # unknown features: left out
    fresh = Cells(module)
    fresh.learn({"f0": 1.0}, 0)
    assert fresh.joint({"f0": 1.0}) is None  # classes with no variance estimate: the careful path


@pytest.mark.parametrize("module", MODULES)
def test_ids_outside_the_cells_raise_before_anything_changes(module):
    """Views that do not match the ids are a bug: an IndexError, never a write past the end."""
    cells = Cells(module)
    cells.learn({"f0": 1.0, "f1": 2.0}, 0)
    before = cells.state()
    for ids in ({"f0": 0, "f1": 10**6}, {"f0": 0, "f1": -1}):
        with pytest.raises(IndexError):
            cells.cells.learn({"f0": 1.0, "f1": 2.0}, ids, 0, 1.0, cells.spread, None, -1, None, True, -1)
        with pytest.raises(IndexError):
            cells.cells.joint({"f0": 1.0, "f1": 2.0}, ids, 3, 0, 0.0, None, True)
    with pytest.raises(IndexError):  # a class outside the cells
        cells.cells.learn({"f0": 1.0}, cells.ids, 10**6, 1.0, cells.spread, None, -1, None, True, -1)
    assert cells.state() == before


@needs_native
def test_out_of_memory_half_way_changes_nothing():
    """The new spread floats are the only allocations, all made before anything is written: when
    one fails, whichever it is, a MemoryError and nothing changed; learning the event after it
    gives the same state as never failing. CPython's allocation hooks make every allocation from
    the ``start``-th on fail (floats come from a free list first: the old spread entries are
    kept alive so that the event's 300 floats run it dry)."""
    _testcapi = pytest.importorskip("_testcapi")
    event = {f"f{j}": float(j % 7) for j in range(300)}

    def trained() -> Cells:
        cells = Cells(BUILT, features=300)
        for i in range(2):
            cells.learn({f: v + i for f, v in event.items()}, 0)
        return cells

    expected = trained()
    expected.learn(event, 0)
    failures = 0
    for start in range(0, 100_000, 10):  # until the call needs fewer allocations than allowed
        cells = trained()
        kept, before = list(cells.spread), cells.state()
        _testcapi.set_nomemory(start)
        try:
            got = cells.learn(event, 0)
        except MemoryError:
            got = MemoryError
        finally:
            _testcapi.remove_mem_hooks()
        if got is not MemoryError:
            break
        failures += 1
        assert all(a is b for a, b in zip(cells.spread, kept)) and cells.state() == before, start
        cells.learn(event, 0)
        assert cells.state() == expected.state(), start
    assert got is not MemoryError and cells.state() == expected.state()
    assert failures > 12  # 300 new floats: many of the calls failed, at different allocations


@needs_native
@pytest.mark.parametrize("make_view", [
    lambda a: memoryview(a.view(np.int64)),  # the same itemsize
    lambda a: memoryview(np.zeros(2 * a.size))[::2],  # every other element
    lambda a: memoryview(a).toreadonly(),
])  # fmt: skip
def test_the_compiled_cells_refuse_a_view_of_another_type_or_layout(make_view):
    cells = Cells(welford_event)
    arrays = [cells.welford.flat(f)[0] for f in ("n", "mean", "m2")]
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.WelfordCells(arrays[0], make_view(np.asarray(arrays[1]).copy()), arrays[2], 1, 1, *arrays, 1)


def test_the_compiled_module_is_used_only_when_built_from_this_source(tmp_path, monkeypatch):
    """A build of other source text (another checkout, an edit since the build) is not used."""
    fake = type(welford_event)("streamnb.stats.welford_event")
    source, declarations = tmp_path / "welford_event.py", tmp_path / "welford_event.pxd"
    source.write_text("x = 1\n")
    declarations.write_text("cdef int x\n")
    fake.__file__ = str(source)
    built = type(welford_event)("streamnb.stats.welford_event_compiled")
    built.__file__ = str(tmp_path / "welford_event_compiled.so")
    monkeypatch.setitem(__import__("sys").modules, "streamnb.stats.welford_event_compiled", built)
    monkeypatch.setattr(kernels, "_PURE", False)
    built.SOURCE_SHA256 = kernels.source_digest(source, declarations)
    assert kernels.compiled(fake) is built
    built.SOURCE_SHA256 = "another"
    assert kernels.compiled(fake) is fake
    built.__file__ = "/elsewhere/welford_event_compiled.so"
    built.SOURCE_SHA256 = kernels.source_digest(source, declarations)
    assert kernels.compiled(fake) is fake
