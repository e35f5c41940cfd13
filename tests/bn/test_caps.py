"""The pair-table cap (``max_cells``) of TAN, per-class Chow-Liu and AODE, through merges.

A merge keeps the cap and equals one learner on this stream then the other's, cells and
counts, whenever the other never had to refuse a value (``n_discarded == 0``); it never
exceeds the cap (issue #11 item 2).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from streamnb import persistence
from streamnb.bn import AODE, ChowLiuClassifier, TANClassifier
from streamnb.drift import Windowed

LEARNERS = [TANClassifier, ChowLiuClassifier, AODE]


def make(cls, **params):
    if cls is AODE:
        return AODE(**params)
    return cls(relearn_every=0, **params)


def learned(model, rows):
    for x, y in rows:
        model.learn_one(x, y)
    return model


def id_stream(start: int, n: int, seed: int) -> list:
    """An id-like feature (every value new) next to an informative one."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(start, start + n):
        y = "a" if rng.random() < 0.5 else "b"
        sky = ("sun" if y == "a" else "rain") if rng.random() < 0.8 else "fog"
        rows.append(({"id": f"user-{i}", "sky": sky}, y))
    return rows


def assert_same_model(a, b, queries) -> None:
    pa, pb = a._part, b._part
    assert pa.cells.keys == pb.cells.keys
    assert a.classes == b.classes
    assert np.array_equal(pa.pairs.n, pb.pairs.n)
    assert np.array_equal(a._class_counts.n, b._class_counts.n)
    assert a.n_discarded == b.n_discarded and a.n_learned == b.n_learned
    for q in queries:
        assert a.predict_proba_one(q) == pytest.approx(b.predict_proba_one(q), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("cls", LEARNERS)
def test_two_id_like_streams_merge_to_one_learner(cls):
    """600 + 600 ids: the merge keeps 1,024 cells, those one learner on both streams keeps,
    with the same counts and posteriors (before: 1,202 cells and other posteriors)."""
    first, second = id_stream(0, 600, 1), id_stream(600, 600, 2)
    a, b = learned(make(cls), first), learned(make(cls), second)
    one = learned(make(cls), first + second)
    a.merge(b)
    assert len(a._part.cells) == len(one._part.cells) == 1024
    if cls is not AODE:
        a.relearn()
        one.relearn()
    queries = [{"id": "user-5", "sky": "sun"}, {"id": "user-1100", "sky": "fog"},
               {"id": "user-700", "sky": "rain"}, {"id": "nobody", "sky": "sun"}]
    for q in queries:
        assert a.predict_proba_one(q) == pytest.approx(one.predict_proba_one(q), rel=1e-12)
    assert b.n_discarded == 0
    assert a.n_discarded == one.n_discarded == 2 * 600 + 3 - 1024  # 179 ids of the second stream
    assert_same_model(a, one, queries)


@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("seed", range(6))
def test_merge_equals_one_learner_whenever_the_other_did_not_discard(cls, seed):
    """Random categorical streams against a small cap: whenever ``other`` never refused a
    value, merge == one learner on both streams, bit for bit; the cell keys always are."""
    rng = np.random.default_rng(seed)
    cap = int(rng.integers(8, 20))

    def stream(n):
        return [({f: (None if rng.random() < 0.1 else str(rng.integers(0, card)))
                  for f, card in (("u", 3), ("v", 6), ("w", 12))}, str(rng.integers(0, 2)))
                for _ in range(n)]

    exact = 0
    for _ in range(8):
        s1, s2 = stream(int(rng.integers(1, 40))), stream(int(rng.integers(1, 40)))
        a, b = learned(make(cls, max_cells=cap), s1), learned(make(cls, max_cells=cap), s2)
        one = learned(make(cls, max_cells=cap), s1 + s2)
        other_discarded = b.n_discarded
        a.merge(b)
        assert len(a._part.cells) <= cap
        assert a._part.cells.keys == one._part.cells.keys  # the cells kept are always exact
        if other_discarded == 0:
            exact += 1
            assert_same_model(a, one, [x for x, _ in s2[:5]])
        else:  # refused values are lost, never invented
            assert (a._part.pairs.n <= one._part.pairs.n).all()
    assert exact  # the exact case was exercised


def test_cap_holds_after_merging_four_capped_members():
    """Four members, each past the cap on an id-like feature: the merge holds 1,024 cells
    and its table 1,024 x 1,024 per class slot (before: 4,087 cells)."""
    members = [learned(TANClassifier(relearn_every=0), id_stream(2000 * m, 1500, m)) for m in range(4)]
    merged = TANClassifier(relearn_every=0)
    for m in members:
        merged.merge(m)
    part = merged._part
    assert len(part.cells) == 1024
    arr = part.pairs.raw("n")
    assert arr.shape[1:] == (1024, 1024)
    # the cells kept are those of member 0 (it filled the table first)
    assert part.cells.keys == members[0]._part.cells.keys
    assert merged.n_discarded == sum(m.n_discarded for m in members) + 3 * (1024 - 3)  # ids left out
    back = persistence.loads(persistence.dumps(merged))
    assert back.n_discarded == merged.n_discarded and len(back._part.cells) == 1024


def test_capacity_never_exceeds_the_cap_after_a_load():
    """A loaded table has an exact-size capacity; growing it again stops at the cap."""
    model = learned(TANClassifier(max_cells=48), id_stream(0, 30, 0))
    back = persistence.loads(persistence.dumps(model))
    assert back._part.pairs.raw("n").shape[1] < 48
    learned(back, id_stream(30, 100, 1))
    assert len(back._part.cells) == 48 and back._part.pairs.raw("n").shape[1:] == (48, 48)


def test_windowed_tan_on_an_id_like_feature_stays_capped():
    model = Windowed(TANClassifier(relearn_every=50, max_cells=64), window=400, blocks=4)
    for x, y in id_stream(0, 1000, 3):
        model.learn_one(x, y)
    reader = model._reader()
    assert len(reader._part.cells) <= 64
    assert all(len(b._part.cells) <= 64 for b in model._blocks)
    assert abs(sum(model.predict_proba_one({"id": "user-999", "sky": "sun"}).values()) - 1) < 1e-12


@pytest.mark.parametrize("cls", LEARNERS)
def test_max_cells_is_a_parameter(cls):
    model = cls(max_cells=10)
    assert model._get_params()["max_cells"] == 10 and model.clone().max_cells == 10
    with pytest.raises(TypeError):  # merging learners of different caps
        model.merge(cls(max_cells=11))
    for bad in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError):
            cls(max_cells=bad)


@pytest.mark.parametrize("cls", LEARNERS)
def test_batches_equal_one_by_one_past_the_cap(cls):
    rows = id_stream(0, 90, 4)
    one = learned(make(cls, max_cells=40), rows)
    many = make(cls, max_cells=40)
    for i in range(0, 90, 25):
        chunk = rows[i : i + 25]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    assert one.n_discarded == many.n_discarded > 0
    assert_same_model(one, many, [{"id": "user-3", "sky": "sun"}])
