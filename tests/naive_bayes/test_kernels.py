"""The compiled per-event path (``streamnb/stats/cells.py``, ``pair_cells.py`` and
``moment_cells.py`` compiled) equals the Python path.

The same stream is run twice, predict then learn per event, once compiled and once with every
part on the plain-Python sources (:func:`python_path`): the probabilities must agree (bit for
bit where the Python path sums in the same order, to 1e-12 where it uses numpy), the same events
must be rejected with the same error, and the learned states must be the same bytes.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamnb
from streamnb import kernels, persistence
from streamnb.stats import cells, moment_cells, pair_cells

from tests.conftest import needs_native

pytestmark = needs_native  # every test here compares the compiled path with the Python one


def test_the_per_event_modules_are_built():
    for source in (cells, pair_cells, moment_cells):
        assert kernels.compiled(source) is not source, f"{source.__name__} was not compiled (pip install -e .)"


@contextmanager
def python_path():
    """Every streamnb module's choice of a compiled module (``kernels.compiled``) swapped for
    its plain-Python source, for the time of the block."""
    swapped = []
    for name, module in list(sys.modules.items()):
        if name.startswith("streamnb.") and not name.endswith("_compiled"):
            for attr, value in vars(module).items():
                if isinstance(value, ModuleType) and value.__name__.endswith("_compiled"):
                    swapped.append((module, attr, value))
    assert swapped, "no compiled module in use"
    for module, attr, value in swapped:
        setattr(module, attr, sys.modules[value.__name__.removesuffix("_compiled")])
    try:
        yield
    finally:
        for module, attr, value in swapped:
            setattr(module, attr, value)


def run(make, stream: list) -> tuple[list, bytes]:
    model = make()
    out = []
    for x, y in stream:
        try:
            out.append(("p", model.predict_proba_one(x)))
        except streamnb.StreamnbError as exc:
            out.append(("error", type(exc).__name__))
        try:
            model.learn_one(x, y)
        except streamnb.StreamnbError as exc:
            out.append(("error", type(exc).__name__))
    return out, persistence.dumps(model)


def assert_same(make, stream: list, rel: float = 0.0) -> None:
    fast, fast_state = run(make, stream)
    with python_path():
        slow, slow_state = run(make, stream)
    assert fast_state == slow_state
    assert len(fast) == len(slow)
    for (kind_a, a), (kind_b, b) in zip(fast, slow):
        assert kind_a == kind_b, (a, b)
        if kind_a == "error" or rel == 0.0:
            assert a == b
        else:
            assert a.keys() == b.keys()
            for c in a:
                assert math.isclose(a[c], b[c], rel_tol=rel, abs_tol=1e-300), (a, b)


NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
LABELS = st.sampled_from(["spam", "ham", 0, 1, True])
NUMBER = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False), st.integers(-5, 5),
    st.sampled_from([None, float("nan"), float("inf"), 1e200, 0.0, True, "x", 10**400, np.float64(2.5)]),
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(st.tuples(st.dictionaries(NAMES, NUMBER, max_size=5), LABELS), max_size=40))
def test_gaussian(stream):
    assert_same(streamnb.GaussianNB, stream)
    assert_same(lambda: streamnb.GaussianNB(var_smoothing=0.0, ddof=1), stream)


COUNT = st.one_of(st.integers(0, 4), st.floats(0, 10), st.sampled_from([-1, None, float("nan"), 0, 0.0, "x"]))


@SETTINGS
@given(st.lists(st.tuples(st.dictionaries(NAMES, COUNT, max_size=5), LABELS), max_size=40))
def test_multinomial_and_complement(stream):
    assert_same(streamnb.MultinomialNB, stream)
    assert_same(lambda: streamnb.MultinomialNB(max_features=3), stream)
    assert_same(lambda: streamnb.MultinomialNB(alpha=0.0, unseen="smooth"), stream)
    assert_same(streamnb.ComplementNB, stream)


CATEGORY = st.one_of(st.sampled_from(["x", "y", "z", 1, 2, True, False, None, 1.5, float("nan"), b"x", ("t",)]))


@SETTINGS
@given(st.lists(st.tuples(st.dictionaries(NAMES, CATEGORY, max_size=5), LABELS), max_size=40))
def test_categorical(stream):
    assert_same(streamnb.CategoricalNB, stream)
    assert_same(lambda: streamnb.CategoricalNB(alpha=0.5, unseen="smooth"), stream)
    assert_same(lambda: streamnb.CategoricalNB(alpha=0.0, epsilon=1e-3), stream)


def test_wide_dense_gaussian_events_agree():
    rng = np.random.default_rng(0)
    stream = [({f"f{j}": float(v) for j, v in enumerate(rng.normal(size=40))}, int(rng.integers(3)))
              for _ in range(300)]
    assert_same(streamnb.GaussianNB, stream)


def test_events_wider_than_the_stack_buffers():
    stream = [({f"t{j}": (i + j) % 3 for j in range(200)}, i % 2) for i in range(50)]
    assert_same(streamnb.MultinomialNB, stream)
    assert_same(streamnb.GaussianNB, stream)
    stream = [({f"f{j}": str((i * j) % 4) for j in range(150)}, i % 2) for i in range(50)]
    assert_same(streamnb.CategoricalNB, stream)


@pytest.mark.parametrize("make, value", [
    (streamnb.GaussianNB, lambda i, j: float((i * j) % 5)),
    (streamnb.MultinomialNB, lambda i, j: (i + j) % 3),
    (streamnb.CategoricalNB, lambda i, j: "abc"[(i * j) % 3]),
])  # fmt: skip
def test_features_named_by_ints_take_the_python_path_with_the_same_results(make, value):
    """Names that are not strings: the compiled path leaves them to the Python path, which
    scores them with the same loops; the probabilities are those of the same stream named
    by strings."""
    stream = [({j: value(i, j) for j in range(4)}, i % 2) for i in range(40)]
    named = [({f"f{j}": v for j, v in x.items()}, y) for x, y in stream]
    assert_same(make, stream)
    assert run(make, stream)[0] == run(make, named)[0]


def test_the_numeric_tree_cells_refuse_changing_nothing():
    """MomentCells.learn_moments (Welford and co-moments in one call) refuses what GaussianPart's
    event path refuses, before touching either statistic, and an event with a feature newer than
    its scales (the log slots, streamnb.bn.scales); a cell outside the co-moments raises, also
    untouched (tests/stats/test_moment_cells.py has the rest)."""
    model = streamnb.TANClassifier(relearn_every=0)
    model.learn_one({"a": 1.0, "b": 2.0}, "y")
    model.learn_one({"a": 2.0, "b": 1.0}, "y")
    before = persistence.dumps(model)
    part = model._parts["gaussian"]
    tree = part._event_cells()
    assert type(tree).__module__ == "streamnb.stats.moment_cells_compiled"
    ids = part.features._ids
    scales = part._scales()
    assert list(scales) == [1, 0, 1, 0]  # a, its log slot, b, its log slot

    def learn(x, w=1.0, limit=4, modes=scales, cells=tree):
        return cells.learn_moments(x, ids, 0, w, part._spreads(), part._top, part._top_id, None, True, limit, modes)

    for bad in ({"a": 1.0, "new": 2.0}, {"a": 1.0, "b": None}, {"a": "x"}, {"a": float("inf")}, {1: 2.0}, {}):
        assert learn(bad) is None
    assert learn({"a": 1.0}, w=0.0) is None
    assert learn({"a": 1.0, "b": 2.0}, modes=bytearray([1, 0])) is None  # b newer than the scales
    assert persistence.dumps(model) == before
    views, (CN, *_), *co = part._scalar(), *part._co_tables()
    N, M, S, (n0, n1), PN, PM, PS, (_, p1) = views[:8]
    small = moment_cells_compiled_like(tree, N, M, S, n0, n1, PN, PM, PS, p1, CN, co)
    with pytest.raises(IndexError):
        learn({"a": 1.0, "b": 2.0}, limit=10**6, cells=small)
    with pytest.raises(TypeError, match="scales"):
        learn({"a": 1.0, "b": 2.0}, modes=[1, 0, 1, 0])
    assert persistence.dumps(model) == before


def moment_cells_compiled_like(tree, N, M, S, n0, n1, PN, PM, PS, p1, CN, co):
    """Cells of the same class as ``tree`` whose co-moment strides put every pair past the end."""
    big = 10**6
    return type(tree)(N, M, S, n0, n1, PN, PM, PS, p1, CN, co[0][0], co[1][0], co[2][0], big, big, big)


def test_posterior_equals_the_python_normalization():
    model = streamnb.MultinomialNB()
    for x, y in [({"win": 3}, "spam"), ({"lunch": 1, "win": 1}, "ham"), ({"cash": 2}, "spam")]:
        model.learn_one(x, y)
    x = {"win": 1, "cash": 1, "lunch": 2}
    fast = model.predict_proba_one(x)
    with python_path():
        assert model.predict_proba_one(x) == fast
    assert math.fsum(fast.values()) == pytest.approx(1.0, abs=1e-15)


# -- tree learners: the pair table, its normalizers and the kept entropy sums --------------------
def mixed_stream(n: int, seed: int) -> list:
    """Categories (pairs of dependent features), some missing, unseen values, a number at times."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = str(rng.integers(0, 3))
        a = int(rng.integers(0, 4))
        x = {"a": str(a), "b": str((a + int(y)) % 4), "c": str(rng.integers(0, 3)), "d": str((a * 2) % 5)}
        if rng.random() < 0.1:
            del x["c"]
        if rng.random() < 0.05:
            x["b"] = f"new{i}"  # a value never seen
        if i > n // 2 and rng.random() < 0.1:
            x["t"] = float(rng.normal())  # a numeric feature, late
        out.append((x, y))
    return out


TREES = {
    "TANClassifier": lambda: streamnb.TANClassifier(relearn_every=50),
    "ChowLiuClassifier": lambda: streamnb.ChowLiuClassifier(relearn_every=50),
    "AODE": streamnb.AODE,
    "MixedNB": streamnb.MixedNB,
}


def states(make, stream: list) -> tuple[list, dict]:
    model = make()
    out, _ = run(lambda: model, stream)
    return out, model.to_state()


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_learners_agree_with_the_python_path(name):
    stream = mixed_stream(1500, seed=3)
    fast, a = states(TREES[name], stream)
    with python_path():
        slow, b = states(TREES[name], stream)
    # counts and the entropy sums the structures are chosen from are the same bits: both paths
    # keep the sums one event at a time through the same cells (streamnb/stats/pair_cells.py)
    for name_, stat in a["stats"].items():
        for f, arr in stat["arrays"].items():
            np.testing.assert_array_equal(arr, b["stats"][name_]["arrays"][f])
    if "structure" in a:
        sa, sb = a["structure"], b["structure"]
        assert sa["history"] == sb["history"]
        for (ka, x), (kb, z) in zip(sa["structures"], sb["structures"]):
            assert ka == kb and x["parents"] == z["parents"]
            for (p, c, wa), (q, d, wb) in zip(x["weights"], z["weights"]):
                assert (p, c, wa) == (q, d, wb)
    for (kind_a, a), (kind_b, b) in zip(fast, slow):
        assert kind_a == kind_b
        if kind_a == "p":
            for c in a:
                assert math.isclose(a[c], b[c], rel_tol=1e-9, abs_tol=1e-15)


def test_the_sums_kept_by_the_compiled_path_equal_the_table():
    from streamnb.structure.chow_liu import counted
    from streamnb.structure.information import conditional_mutual_information

    model = streamnb.TANClassifier(relearn_every=97)
    for x, y in mixed_stream(2000, seed=4):
        x = {f: v for f, v in x.items() if f != "t"}
        model.learn_one(x, y)
    pairs = model._part.pairs
    n, cf, names = counted(pairs)
    fresh = np.zeros((len(pairs.features), len(pairs.features)))
    ids = pairs.features.lookup(names)
    fresh[np.ix_(ids, ids)] = conditional_mutual_information(n, cf)
    kept, _ = model._part.sums.weights()
    np.testing.assert_allclose(kept, fresh, rtol=1e-10, atol=1e-13)


def test_a_numeric_feature_or_an_unseen_value_takes_the_python_path():
    model = streamnb.TANClassifier(relearn_every=0)
    model.learn_one({"a": "x", "b": "y"}, "p")
    part = model._part
    m = part.margins.current()
    args = (part.pairs.cells.ids, m.cf, part.fast_exclude.features.ids, True, 0, 1.0)
    before = persistence.dumps(model)
    for x in ({"a": "x", "b": "unseen"}, {"a": "x", "n": 1}, {"a": "x", "b": None}, {"a": 1}):
        assert not part._pair_cells(m).learn(x, *args, None)
        assert not part.learn_fast(x, 0, 1.0)
    assert before == persistence.dumps(model)
    model.learn_one({"t": 1.5}, "p")  # t is numeric now: an event naming it goes the Python path
    assert not part.learn_fast({"a": "x", "t": "1.5"}, 0, 1.0)
    assert before != persistence.dumps(model)


def numeric_stream(n: int, seed: int) -> list:
    """A chain of linear Gaussians, some values missing, a categorical mode at times."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(0, 2))
        x = {"t0": float(rng.normal(y, 1.0))}
        for j in range(1, 6):
            x[f"t{j}"] = 0.7 * x[f"t{j - 1}"] + float(rng.normal(0.3 * y, 0.5))
        if rng.random() < 0.2:
            x["mode"] = "eco" if x["t0"] > 0 else "boost"
        if rng.random() < 0.1:
            del x[f"t{int(rng.integers(0, 6))}"]
        out.append((x, y))
    return out


@pytest.mark.parametrize("make", [lambda: streamnb.TANClassifier(relearn_every=60),
                                  lambda: streamnb.TANClassifier(relearn_every=60, max_numeric=3),
                                  streamnb.MixedNB, lambda: streamnb.ChowLiuClassifier(relearn_every=60)])
def test_numeric_events_in_the_tree_learners_agree_with_the_python_path(make):
    stream = numeric_stream(1200, seed=5)
    fast, a = states(make, stream)
    with python_path():
        slow, b = states(make, stream)
    for name_, stat in a["stats"].items():
        for f, arr in stat["arrays"].items():
            np.testing.assert_array_equal(arr, b["stats"][name_]["arrays"][f], err_msg=f"{name_}.{f}")
    if "structure" in a:
        assert a["structure"]["history"] == b["structure"]["history"]
    for (kind_a, p), (kind_b, q) in zip(fast, slow):
        assert kind_a == kind_b
        if kind_a == "p":
            for c in p:
                assert math.isclose(p[c], q[c], rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize("make, stream", [
    (streamnb.GaussianNB, [({"a": float(i % 7), "b": float(i % 3)}, i % 2) for i in range(300)]),
    (streamnb.MultinomialNB, [({f"t{i % 9}": 1 + i % 3, f"t{i % 4}": 1}, i % 2) for i in range(300)]),
    (streamnb.CategoricalNB, [({"a": str(i % 5), "b": str(i % 3)}, i % 2) for i in range(300)]),
    (lambda: streamnb.TANClassifier(relearn_every=50), [({"a": str(i % 5), "b": str(i % 3)}, i % 2) for i in range(300)]),
    (lambda: streamnb.TANClassifier(relearn_every=50), numeric_stream(300, seed=8)),
])
def test_weighted_events_agree_with_the_python_path(make, stream):
    def weighted(model):
        out = []
        for i, (x, y) in enumerate(stream):
            out.append(model.predict_proba_one(x))
            model.learn_one(x, y, w=0.25 + (i % 4) * 0.5)
        return out, model

    fast, a = weighted(make())
    with python_path():
        slow, b = weighted(make())
    for name, stat in a.to_state()["stats"].items():
        for f, arr in stat["arrays"].items():
            np.testing.assert_array_equal(arr, b.to_state()["stats"][name]["arrays"][f], err_msg=f"{name}.{f}")
    for p, q in zip(fast, slow):
        assert p.keys() == q.keys() and all(math.isclose(p[c], q[c], rel_tol=1e-9, abs_tol=1e-15) for c in p)


def test_forgetful_tan_takes_the_compiled_path_and_agrees():
    stream = mixed_stream(800, seed=9)
    make = lambda: streamnb.Forgetful(streamnb.TANClassifier(relearn_every=50), half_life=200)  # noqa: E731
    fast = [p for kind, p in run(make, stream)[0] if kind == "p"]
    with python_path():
        slow = [p for kind, p in run(make, stream)[0] if kind == "p"]
    for p, q in zip(fast, slow):
        assert all(math.isclose(p[c], q[c], rel_tol=1e-9, abs_tol=1e-15) for c in p)


def prequential(make, stream: list, fused: bool) -> tuple[list, bytes]:
    """Predict then learn each event: with ``predict_learn_one`` (``fused``), or with the two
    calls, learning nothing when the prediction is refused. ``("p", proba)`` when both
    succeeded, else the error."""
    model = make()
    out: list = []
    for x, y in stream:
        try:
            if fused:
                proba = model.predict_learn_one(x, y)
            else:
                proba = model.predict_proba_one(x)
                model.learn_one(x, y)
            out.append(("p", proba))
        except streamnb.StreamnbError as exc:
            out.append(("error", type(exc).__name__))
    return out, persistence.dumps(model)


PREQUENTIAL = [
    (streamnb.CategoricalNB, CATEGORY), (lambda: streamnb.CategoricalNB(alpha=0.5, unseen="smooth"), CATEGORY),
    (lambda: streamnb.CategoricalNB(alpha=0.0, epsilon=1e-3), CATEGORY),
    (streamnb.MultinomialNB, COUNT), (lambda: streamnb.MultinomialNB(max_features=3), COUNT),
    (lambda: streamnb.MultinomialNB(alpha=0.0, unseen="smooth"), COUNT), (streamnb.ComplementNB, COUNT),
    (streamnb.GaussianNB, NUMBER), (streamnb.MixedNB, st.one_of(CATEGORY, NUMBER)),
    (lambda: streamnb.TANClassifier(relearn_every=7), st.one_of(CATEGORY, NUMBER)),
]


@pytest.mark.parametrize("make, values", PREQUENTIAL)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_predict_learn_one_is_predict_then_learn(make, values, data):
    """``predict_learn_one`` (one read of the event by the compiled kernels) gives the same
    probabilities, errors and saved state, bit for bit, as ``predict_proba_one`` then
    ``learn_one``, on the compiled and on the Python path."""
    stream = data.draw(st.lists(st.tuples(st.dictionaries(NAMES, values, max_size=5), LABELS), max_size=40))
    want = prequential(make, stream, fused=False)
    assert prequential(make, stream, fused=True) == want
    with python_path():
        assert prequential(make, stream, fused=True) == want


@pytest.mark.parametrize("make", [streamnb.CategoricalNB, streamnb.MultinomialNB, streamnb.MixedNB])
def test_predict_learn_one_follows_batches_merges_decay_and_loads(make):
    """The compiled step remembers its arguments between events: a batch with new keys, a
    merge, a decay and a load in the middle of the stream give the same probabilities and
    state, bit for bit, as the two calls."""
    rng = np.random.default_rng(7)
    counts = make is streamnb.MultinomialNB

    def event(i: int) -> tuple[dict, str]:
        if counts:
            return {f"w{rng.integers(0, 6 + i // 10)}": int(rng.integers(1, 4)) for _ in range(3)}, str(i % 3)
        return {f"f{j}": f"v{rng.integers(0, 3 + i // 10)}" for j in range(3)}, str(i % 3)

    stream = [event(i) for i in range(80)]
    batch = [event(100 + i) for i in range(6)]
    other = make()
    for x, y in [event(200 + i) for i in range(10)]:
        other.learn_one(x, y)

    def run(fused: bool) -> tuple[list, bytes]:
        model, out = make(), []
        for i, (x, y) in enumerate(stream):
            if i == 20:
                model.learn_many(pd.DataFrame([b for b, _ in batch]).fillna(0 if counts else "v0"),
                                 pd.Series([c for _, c in batch]))
            elif i == 35:
                model.merge(other)
            elif i == 50:
                model.decay(0.5)
            elif i == 65:
                model = persistence.loads(persistence.dumps(model))
            if fused:
                out.append(model.predict_learn_one(x, y))
            else:
                out.append(model.predict_proba_one(x))
                model.learn_one(x, y)
        return out, persistence.dumps(model)

    assert run(fused=True) == run(fused=False)


# -- MixedNB: an event of numbers and strings, each part's kernel on its share ------------------
KINDS = {"z": "categorical", "n0": "gaussian", "s0": "categorical"}


def numbers_and_strings(n: int, seed: int, declared: bool = False, plain: bool = False) -> list:
    """10 numbers and 10 strings per event; unless ``plain``, now and then: a new category, a
    late numeric or string feature, a missing value, a string for a number (an error), an int
    for a category, an int for a number, a bool, a new class. ``declared``: ``z``, an int
    category (declared in :data:`KINDS`), sometimes a float, once a string for ``n0``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(0, 3))
        x: dict = {f"n{j}": float(rng.normal(y * (j % 3), 1.0)) for j in range(10)}
        x.update({f"s{j}": f"v{int(rng.integers(0, 3)) + y}" for j in range(10)})
        if declared:
            x["z"] = int(rng.integers(0, 3)) + y
        r = rng.random()
        if plain:
            pass
        elif r < 0.04:
            x["s3"] = f"new{i}"  # a new category: the categorical part's Python path registers it
        elif r < 0.06 and i > n // 2:
            x[f"late{i % 3}"] = float(rng.normal())  # a new numeric feature, late
        elif r < 0.08 and i > n // 2:
            x[f"tag{i % 2}"] = "on"  # a new string feature, late
        elif r < 0.10:
            x["n2"] = None
        elif r < 0.12:
            x["n1"] = "warm"  # a string for a number: rejected, nothing learned
            x["s5"] = f"new{i}"
        elif r < 0.14:
            x["s1"] = 3  # an int for a category (the categorical part takes it)
        elif r < 0.16:
            x["n4"] = int(rng.integers(-3, 3))
        elif r < 0.18:
            x["flag"] = bool(rng.integers(0, 2))
        elif r < 0.19:
            y = 3  # a new class
        elif declared and r < 0.21:
            x["z"] = 2.5  # a declared category that is a float: the Python path
        elif declared and r < 0.22:
            x["n0"] = "cold"  # a string for a declared number: rejected
        out.append((x, y))
    return out


MIXED = [
    (streamnb.MixedNB, False),
    (lambda: streamnb.MixedNB(alpha=0.5, unseen="smooth", ddof=1), False),
    (lambda: streamnb.MixedNB(kinds=KINDS), True),
]


@pytest.mark.parametrize("make, declared", MIXED)
def test_mixed_events_agree_with_the_python_path(make, declared):
    """Events of numbers and strings, each part's kernel on its share (and every special case
    of :func:`numbers_and_strings` on the way): the same probabilities, errors and state, bit
    for bit, as the Python path, with the two calls and with ``predict_learn_one``."""
    stream = numbers_and_strings(600, seed=11, declared=declared)
    assert_same(make, stream)
    want = prequential(make, stream, fused=False)
    assert prequential(make, stream, fused=True) == want
    with python_path():
        assert prequential(make, stream, fused=True) == want

    def learn_weighted(model):
        out = []
        for i, (x, y) in enumerate(stream):
            try:
                out.append(model.predict_learn_one(x, y, w=0.25 + (i % 4) * 0.5))
            except streamnb.StreamnbError as exc:
                out.append(type(exc).__name__)
        return out, persistence.dumps(model)

    fast = learn_weighted(make())
    with python_path():
        assert learn_weighted(make()) == fast


@pytest.mark.parametrize("make, declared", MIXED)
def test_mixed_events_take_the_compiled_path(make, declared, monkeypatch):
    """Once their features and categories are known, events of numbers and strings (or of one
    kind only, ``kinds=`` included) never reach the Python path (``_split``)."""
    stream = numbers_and_strings(300, seed=12, declared=declared, plain=True)
    model = make()
    for x, y in stream[:200]:
        model.learn_one(x, y)

    def python_path_taken(x):
        raise AssertionError(f"the Python path took {x}")

    monkeypatch.setattr(model, "_split", python_path_taken)
    events = stream[200:]
    events += [({f: v for f, v in x.items() if type(v) is str}, y) for x, y in stream[200:210]]
    events += [({f: v for f, v in x.items() if type(v) is not str}, y) for x, y in stream[200:210]]
    for x, y in events:
        model.predict_proba_one(x)
        model.learn_one(x, y)
        model.predict_learn_one(x, y)
    with pytest.raises(AssertionError, match="the Python path"):  # the check above can fail
        model.learn_one({"n1": "warm", "s1": "v1"}, 0)


def test_a_mixed_event_rejected_by_one_part_changes_neither():
    """A string for a numeric feature next to a new category, or a new numeric feature next
    to a bad value: rejected, and neither part learned anything."""
    model = streamnb.MixedNB(kinds={"z": "categorical"})
    model.learn_one({"t": 1.0, "u": 2.0, "s": "a", "z": 1}, "p")
    model.learn_one({"t": 2.0, "u": 1.0, "s": "b", "z": 2}, "q")
    before = persistence.dumps(model)
    for bad in ({"t": 1.5, "u": "x", "s": "new"}, {"t": "1.5", "s": "new", "z": 3},
                {"new": 1.0, "t": float("inf"), "s": "a"}, {"t": 1.5, "s": "new", "z": [1]},
                {"t": 1.5, "z": 1, "s": "a", "w": ["a"]}):
        for call in (model.learn_one, model.predict_learn_one):
            with pytest.raises(streamnb.StreamnbError):
                call(bad, "p")
            assert persistence.dumps(model) == before, bad
