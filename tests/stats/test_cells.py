"""One event on a statistic's cells (streamnb/stats/cells.py), run as plain Python and compiled:
the same bits as each other and as the statistics' own updates (Welford.update_ids, Counts.add),
every refusal before anything changes, and the compiled module used only when it was built from
this source."""

from __future__ import annotations

import math
import random
import sys
import types

import numpy as np
import pytest

from streamnb import kernels
from streamnb.naive_bayes import checks
from streamnb.naive_bayes.posterior import posterior_one
from streamnb.stats import Counts, Index, Welford
from streamnb.stats import cells as source

from tests.conftest import needs_native
from tests.stats.cells_checks import WRONG_VIEWS, assert_out_of_memory_changes_nothing

BUILT = kernels.compiled(source)
MODULES = [pytest.param(source, id="python"),
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


def test_the_plain_value_bound_is_the_checks_one():
    """An event the cells refuse as beyond MAX_ABS is one the Python path rejects: one bound."""
    assert source.MAX_ABS == checks.MAX_ABS


class StrSub(str):
    pass


@pytest.mark.parametrize("module", MODULES)
def test_split_strings_keeps_each_entry_and_the_order(module):
    values = ["a", "", StrSub("b"), 1, 2.5, True, None, b"c", ("d",), float("nan")]
    rng = random.Random(5)
    for size in (0, 1, 5, 9, 40):
        x = {rng.choice([f"f{i}", i, (i,)]): rng.choice(values) for i in range(size)}
        strings, others = module.split_strings(x)
        assert list(strings.items()) == [(k, v) for k, v in x.items() if type(v) is str]
        assert list(others.items()) == [(k, v) for k, v in x.items() if type(v) is not str]
        assert all(a is b for a, b in zip(strings.values(), (v for v in x.values() if type(v) is str)))


def _split_by_kinds(x: dict, kinds: dict) -> tuple | None:
    """The split MixedNB(kinds=...) wants, written out per rule (the oracle)."""
    strings, others = {}, {}
    for key, value in x.items():
        declared = kinds.get(key)
        if declared == "categorical" and type(value) not in (str, int):
            return None  # a float, None, a bool of a categorical feature: the general path
        if declared == "gaussian" and type(value) is str:
            return None  # a string of a numeric feature: an error to raise there
        (strings if declared == "categorical" or type(value) is str else others)[key] = value
    return strings, others


@pytest.mark.parametrize("module", MODULES)
def test_split_strings_with_kinds_follows_the_declared_kinds(module):
    values = ["a", StrSub("b"), 1, 2.5, True, None, float("nan"), 10**30]
    rng = random.Random(7)
    splits = refused = 0
    for size in range(0, 8):
        for _ in range(60):
            kinds = {f"f{i}": rng.choice(["categorical", "gaussian"]) for i in range(8) if rng.random() < 0.4}
            x = {f"f{i}": rng.choice(values) for i in rng.sample(range(8), size)}
            want, got = _split_by_kinds(x, kinds), module.split_strings(x, kinds)
            assert got == want and (got is None or [list(part) for part in got] == [list(part) for part in want])
            splits, refused = splits + (got is not None), refused + (got is None)
    assert splits > 50 and refused > 50  # both outcomes were tried


@pytest.mark.parametrize("module", MODULES)
def test_learning_equals_welford_update_ids_bit_for_bit(module):
    """The cells after a stream: what Welford.update_ids (numpy, the batch statistic's one-event
    form) gives on the same events, and the spread is the pooled M2 / n."""
    ours, oracle = Cells(module), Cells(source)
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
    assert BUILT is not source and BUILT.__name__ == "streamnb.stats.cells_compiled"
    fast, slow = Cells(BUILT), Cells(source)
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
    event = {f"f{j}": float(j % 7) for j in range(300)}

    def trained() -> Cells:
        cells = Cells(BUILT, features=300)
        for i in range(2):
            cells.learn({f: v + i for f, v in event.items()}, 0)
        return cells

    def act(cells: Cells):
        kept = list(cells.spread)
        return lambda: (kept, cells.learn(event, 0))[1]

    failures = assert_out_of_memory_changes_nothing(trained, act, Cells.state, step=10)
    assert failures > 12  # 300 new floats: many of the calls failed, at different allocations


@needs_native
@WRONG_VIEWS
def test_the_compiled_cells_refuse_a_view_of_another_type_or_layout(make_view):
    cells = Cells(source)
    arrays = [cells.welford.flat(f)[0] for f in ("n", "mean", "m2")]
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.WelfordCells(arrays[0], make_view(arrays[1]), arrays[2], 1, 1, *arrays, 1)
    with pytest.raises((ValueError, TypeError, BufferError)):
        BUILT.posterior([0.0, 0.0], make_view(np.ones(4)), 1)


@pytest.mark.parametrize("case", ["same", "edited", "elsewhere", "missing"])
def test_the_compiled_module_is_used_only_when_built_from_this_source(case, tmp_path, monkeypatch):
    """A build of other source text (another checkout, an edit since the build) is not used."""
    name = f"streamnb.stats.fake_{case}"  # one module name per case: the choice is made once per module
    fake = types.ModuleType(name)
    path, declarations = tmp_path / f"fake_{case}.py", tmp_path / f"fake_{case}.pxd"
    path.write_text("x = 1\n")
    declarations.write_text("cdef int x\n")
    fake.__file__ = str(path)
    built = types.ModuleType(f"{name}_compiled")
    built.__file__ = str(tmp_path / f"fake_{case}_compiled.so")
    built.SOURCE_SHA256 = kernels.source_digest()  # type: ignore[attr-defined]
    if case == "edited":
        built.SOURCE_SHA256 = "another"  # type: ignore[attr-defined]
    if case == "elsewhere":
        built.__file__ = "/elsewhere/fake_compiled.so"
    if case != "missing":
        monkeypatch.setitem(sys.modules, f"{name}_compiled", built)
    monkeypatch.setattr(kernels, "_PURE", False)
    assert kernels.compiled(fake) is (built if case == "same" else fake)
    assert kernels.compiled(fake) is kernels.compiled(fake)


# -- counts --------------------------------------------------------------------------------


class Tokens:
    """Class-by-token Counts (3 classes), class totals and the tokens' zero weights, with a
    CountCells over their views."""

    def __init__(self, module, tokens: int = 8) -> None:
        self.names = [f"t{j}" for j in range(tokens)]
        self.tokens = Index(self.names)
        self.counts, self.totals = Counts([Index(["a", "b", "c"]), self.tokens]), Counts([Index(["a", "b", "c"])])
        self.zeros = Counts([self.tokens])
        (cv, (c0, c1)), (tv, (t0,)), (zv, (z0,)) = self.counts.flat("n"), self.totals.flat("n"), self.zeros.flat("n")
        self.cells = module.CountCells(cv, c0, c1, tv, t0, zv, z0)
        self.ids = self.tokens.ids

    def state(self) -> bytes:
        return self.counts.raw("n").tobytes() + self.totals.raw("n").tobytes() + self.zeros.raw("n").tobytes()

    @classmethod
    def learned(cls, module, seed: int, count: int) -> Tokens:
        """Cells that learned ``documents(seed, count)``."""
        tokens = cls(module)
        for x, k, w in documents(seed, count):
            tokens.cells.learn(x, tokens.ids, k, w, True)
        return tokens


def step(tokens: Tokens, x: dict, alpha: float, k: int, w: float) -> tuple | None:
    """Predict, then learn, on one read (as :meth:`Part.step_fast`): ``joint``, then ``learn`` of
    the event read (None)."""
    out = tokens.cells.joint(x, tokens.ids, 3, alpha, 8, True)
    return None if out is None else (out, tokens.cells.learn(None, tokens.ids, k, w, True))


def documents(seed: int, count: int = 300, tokens: int = 8) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        keys = rng.sample(range(tokens), rng.randint(1, tokens))
        x = {f"t{j}": rng.choice([rng.randint(0, 5), rng.random() * 3, 0.0]) for j in keys}
        out.append((x, rng.randrange(3), rng.choice([1.0, 0.5, 2.0])))
    return out


@pytest.mark.parametrize("module", MODULES)
def test_count_learning_equals_counts_add(module):
    ours, oracle = Tokens(module), Tokens(source)
    for x, k, w in documents(0):
        assert ours.cells.learn(x, ours.ids, k, w, True)
        v = np.array([float(value) for value in x.values()])
        ids = oracle.tokens.lookup(list(x))
        oracle.counts.add((k, ids), w * v)
        oracle.zeros.add((ids[v == 0],), w)  # the weight of the events that gave a count of 0
        total = 0.0
        for value in v.tolist():  # in order, as one event's frequencies are summed
            total += value
        oracle.totals.add((k,), w * total)
    assert ours.state() == oracle.state()


@pytest.mark.parametrize("module", MODULES)
def test_count_joint_is_the_multinomial_log_likelihood(module):
    cells = Tokens.learned(module, 1, 50)
    n, total = cells.counts.view("n"), cells.totals.view("n")
    event = {"t0": 2, "t3": 1.5, "t7": 0, "unknown": 4}
    got = cells.cells.joint(event, cells.ids, 3, 0.5, 8, True)
    for c in range(3):
        p = (n[c] + 0.5) / (total[c] + 0.5 * 8)
        assert got[c] == pytest.approx(2 * math.log(p[0]) + 1.5 * math.log(p[3]), rel=1e-13)


@needs_native
def test_count_cells_compiled_and_python_give_the_same_bits():
    fast, slow = Tokens(BUILT), Tokens(source)
    for i, (x, k, w) in enumerate(documents(2, 400)):
        if i % 5 == 0:
            x = {**x, f"new{i}": 1}  # an unknown token: scored without it, never learned
        assert fast.cells.joint(x, fast.ids, 3, 1.0, 8, True) == slow.cells.joint(x, slow.ids, 3, 1.0, 8, True)
        if i % 2:
            assert step(fast, x, 0.1, k, w) == step(slow, x, 0.1, k, w)
        else:
            assert fast.cells.learn(x, fast.ids, k, w, True) == slow.cells.learn(x, slow.ids, k, w, True)
        assert fast.state() == slow.state()


@pytest.mark.parametrize("module", MODULES)
def test_a_count_event_that_is_not_plain_changes_nothing(module):
    cells = Tokens.learned(module, 3, 20)
    before = cells.state()
    for bad in ({"t0": -1}, {"t0": 1, "t1": None}, {"t0": "x"}, {"t0": float("inf")}, {"t0": True}, {1: 2.0}):
        assert not cells.cells.learn(bad, cells.ids, 0, 1.0, True), bad
        assert cells.cells.joint(bad, cells.ids, 3, 1.0, 8, True) is None, bad
        assert step(cells, bad, 1.0, 0, 1.0) is None, bad
        assert not cells.cells.learn(None, cells.ids, 0, 1.0, True), bad  # nothing read
    assert not cells.cells.learn({"t0": 1, "new": 1}, cells.ids, 0, 1.0, True)  # unknown: the general path
    assert not cells.cells.learn({}, cells.ids, 0, 1.0, True)
    for w in (0.0, -1.0, float("inf")):
        assert not cells.cells.learn({"t0": 1}, cells.ids, 0, w, True)
        assert step(cells, {"t0": 1}, 1.0, 0, w)[1] is False  # type: ignore[index]
    assert step(cells, {"t0": 1, "new": 1}, 1.0, 0, 1.0)[1] is False  # type: ignore[index]
    assert step(cells, {}, 1.0, 0, 1.0)[1] is False  # type: ignore[index]
    assert cells.state() == before
    with pytest.raises(IndexError):
        cells.cells.learn({"t0": 1}, {"t0": 10**6}, 0, 1.0, True)
    with pytest.raises(IndexError):
        step(cells, {"t0": 1}, 1.0, 10**6, 1.0)  # a class outside the cells
    assert cells.state() == before


# -- the posterior of one event ------------------------------------------------------------------
def class_counts(values: list) -> memoryview:
    return memoryview(np.array(values, dtype=float))


@pytest.mark.parametrize("module", MODULES)
def test_posterior_is_posterior_one_bit_for_bit(module):
    """The cells' posterior from the class counts, against posterior_one with the log prior the
    learners compute (log n_c - log sum n): the same bits, up to 300 classes and with counts whose
    exact sum needs many partials; a class of weight 0 (log P(y) = -inf) is left to the general path."""
    rng = random.Random(5)
    for _ in range(300):
        n_classes = rng.choice([1, 2, 3, 7, 300])
        counts = [rng.choice([0.0, 1.0, 0.5, 1e-300, 1e300, rng.random() * 10 ** rng.randint(-20, 20)])
                  for _ in range(n_classes)]
        counts[rng.randrange(n_classes)] = rng.random() + 0.5  # some class has weight
        if rng.random() < 0.5:
            counts = [n or 2.0 for n in counts]  # every class seen
        jll = [rng.gauss(0, 10 ** rng.randint(0, 9)) for _ in range(n_classes)]
        log_total = math.log(math.fsum(counts))
        log_prior = [math.log(n) - log_total if n > 0 else -math.inf for n in counts]
        expected = posterior_one(jll, log_prior)
        step = rng.choice([1, 3])
        view = class_counts([v for n in counts for v in [n] + [7.0] * (step - 1)])
        got = module.posterior(jll, view, step)
        assert got == expected if 0.0 not in counts else got is None  # a class never seen: the general path


@pytest.mark.parametrize("module", MODULES)
def test_class_weights_answer_the_posterior_of_the_counts_they_hold(module):
    """ClassWeights holds the view once: its posterior is posterior's, and follows the counts
    written through the view afterwards (the learners add each event's weight there)."""
    data = np.array([3.0, 7.0, 1.0, 7.0, 0.5, 7.0])
    view = class_counts(data)
    for n_classes in (1, 2, 3):
        held = module.ClassWeights(view, 2)
        jll = [-1.5 * c for c in range(n_classes)]
        assert held.posterior(jll) == module.posterior(jll, view, 2)
        view[2] += 1.0
        assert held.posterior(jll) == module.posterior(jll, view, 2)
    with pytest.raises(IndexError):
        module.ClassWeights(view, 2).posterior([0.0] * 4)


@pytest.mark.parametrize("module", MODULES)
def test_posterior_leaves_what_is_not_finite_to_the_general_path(module):
    counts = class_counts([1.0, 2.0])
    for jll in ([-math.inf, 0.0], [math.inf, 0.0], [math.nan, 0.0], [-math.inf, -math.inf]):
        assert module.posterior(jll, counts, 1) is None, jll
    assert module.posterior([0.0, 0.0], class_counts([0.0, 0.0]), 1) is None  # no class weight
    assert module.posterior([], counts, 1) is None
    assert module.posterior([0.0], class_counts([0.0, 1.0]), 1) is None  # log P(y) = -inf
    for step in (2, -1):
        with pytest.raises(IndexError):
            module.posterior([0.0, 0.0], counts, step)
