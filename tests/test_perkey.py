"""PerKey: a learner per key over a shared one, blended exactly, bounded in memory, replayable."""

from __future__ import annotations

import random

import pytest
from river import checks

import streamnb
from streamnb import persistence
from streamnb.perkey import DirectoryStore, PerKey
from streamnb.spam import SpamFilter

WORDS = [f"w{i}" for i in range(40)]


def stream(n: int, users: int, seed: int = 0) -> list[tuple[dict, str]]:
    """Messages of a few users; words w0-w9 mean spam for everyone, w30-w39 spam for odd users only."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        user = f"u{rng.randrange(users)}"
        spam = rng.random() < 0.4
        pool = WORDS[:10] if spam else WORDS[10:30]
        if rng.random() < 0.3:
            pool = WORDS[30:]
            spam = int(user[1:]) % 2 == 1
        x = {w: 1 for w in rng.sample(pool, 4)}
        out.append(({"user": user, **x}, "spam" if spam else "ham"))
    return out


def features(x: dict) -> dict:
    return {k: v for k, v in x.items() if k != "user"}


def test_a_new_key_is_answered_by_the_shared_model_exactly():
    model = PerKey(SpamFilter(), by="user")
    for x, y in stream(200, 5):
        model.learn_one(x, y)
    x = {"user": "never-seen", "w1": 1, "w12": 1, "w33": 1}
    assert model.predict_proba_one(x) == model.model.predict_proba_one(features(x))
    assert model.learner("never-seen") is None  # asking created nothing


def test_each_key_learns_its_own_events_and_the_shared_model_all():
    data = stream(300, 4)
    model = PerKey(SpamFilter(), by="user")
    shared, own = SpamFilter(), {}
    for x, y in data:
        model.learn_one(x, y)
        shared.learn_one(features(x), y)
        own.setdefault(x["user"], SpamFilter()).learn_one(features(x), y)
    assert persistence.dumps(model.model) == persistence.dumps(shared)
    assert sorted(model.keys()) == sorted(own)
    for user, alone in own.items():
        assert persistence.dumps(model.learner(user)) == persistence.dumps(alone)


@pytest.mark.parametrize("takeover", [1.0, 7.0, 50.0])
def test_the_blend_equals_a_filter_that_learned_the_shared_events_and_the_keys_weighted(takeover):
    """Counts add: shared + weight x own is a filter fed the shared events once and the key's
    events with weight ``weight`` (Fisher's indicator compared; thresholds are the shared's)."""
    data = stream(250, 3, seed=1)
    model = PerKey(SpamFilter(), by="user", takeover=takeover)
    for x, y in data:
        model.learn_one(x, y)
    weight = model.weight("u1")
    assert weight == max(1.0, 250 / takeover)
    oracle = SpamFilter(max_ham_rate=None)
    for x, y in data:
        oracle.learn_one(features(x), y)
        if x["user"] == "u1":
            oracle.learn_one(features(x), y, w=weight)
    for x, _ in stream(40, 3, seed=2):
        got = model.predict_proba_one({**x, "user": "u1"})["spam"]
        assert got == pytest.approx(oracle.predict_proba_one(features(x))["spam"], rel=1e-12, abs=1e-15)


def test_a_key_with_its_own_mail_is_answered_by_it_more_as_it_accumulates():
    model = PerKey(SpamFilter(), by="user", takeover=10)
    newsletter = {"digest": 1, "weekly": 1, "unsubscribe": 1}
    for _ in range(200):  # everyone else calls the newsletter spam
        model.learn_one({"user": "crowd", **newsletter}, "spam")
        model.learn_one({"user": "crowd", "lunch": 1, "today": 1}, "ham")
    before = model.predict_proba_one({"user": "reader", **newsletter})["spam"]
    for _ in range(15):  # three times the takeover: the reader's own share is 3/4
        model.learn_one({"user": "reader", **newsletter}, "ham")
        model.learn_one({"user": "reader", "pills": 1, "cheap": 1}, "spam")
    after = model.predict_proba_one({"user": "reader", **newsletter})["spam"]
    assert before > 0.99 and after < 0.5
    assert model.predict_proba_one({"user": "crowd", **newsletter})["spam"] > 0.99


def test_evicted_keys_come_back_from_the_store_unchanged(tmp_path):
    data = stream(400, 9, seed=3)
    bounded = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path))
    free = PerKey(SpamFilter(), by="user")
    for x, y in data:
        bounded.learn_one(x, y)
        free.learn_one(x, y)
        assert len(bounded.keys()) <= 2
        assert bounded.predict_proba_one(x) == free.predict_proba_one(x)
    bounded.flush()
    assert len(DirectoryStore(tmp_path)) == 9
    for user in free.keys():
        assert persistence.dumps(bounded.learner(user)) == persistence.dumps(free.learner(user))


def test_a_key_without_a_learner_is_looked_up_in_the_store_once(tmp_path, monkeypatch):
    """``remember_absent``: asking about a key that never learned reads the store once; a learn
    (or :meth:`PerKey.forget_absent`, when another process may have written) makes it read again;
    the answers are those of a learner that reads the store each time."""
    data = stream(300, 6, seed=5)
    remembering = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path / "a"),
                         remember_absent=True)  # fmt: skip
    reading = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path / "b"))
    loads: list = []
    store = remembering._store
    load = store.load
    monkeypatch.setattr(store, "load", lambda key: loads.append(key) or load(key))
    for i, (x, y) in enumerate(data):
        asked = {**x, "user": f"new{i % 3}"}  # keys that never learn: read once each
        assert remembering.predict_proba_one(asked) == reading.predict_proba_one(asked)
        assert remembering.predict_proba_one(x) == reading.predict_proba_one(x)
        remembering.learn_one(x, y)
        reading.learn_one(x, y)
    assert loads.count("new0") == loads.count("new2") == 1
    remembering.forget_absent()
    assert remembering.learner("new1") is None and loads.count("new1") == 2
    remembering.learn_one({**data[0][0], "user": "new1"}, "spam")  # created: the store read, no longer absent
    assert remembering.learner("new1") is not None and loads.count("new1") == 3
    for _ in range(7):  # evicted (max_resident 2) and read back from the store, not taken as absent
        remembering.learner(f"u{_ % 6}")
    assert remembering.learner("new1") is not None
    assert remembering.learner("new0") is None and remembering.learner("new0") is None
    assert loads.count("new0") == 2  # once before forget_absent, once after


def test_positions_make_a_replay_learn_each_event_once(tmp_path):
    data = stream(120, 4, seed=4)
    model = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path))
    for i, (x, y) in enumerate(data[:80]):
        model.learn_one(x, y, position=i)
    model.flush()
    # a crash here: the shared model was last saved at event 39, the keys' learners at 79
    shared = PerKey(SpamFilter(), by="user")
    for i, (x, y) in enumerate(data[:40]):
        shared.learn_one(x, y, position=i)
    restarted = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path))
    restarted.model, restarted._positions[None] = shared.model, shared.position()
    for i, (x, y) in enumerate(data):  # the whole log replayed
        restarted.learn_one(x, y, position=i)
    clean = PerKey(SpamFilter(), by="user")
    for x, y in data:
        clean.learn_one(x, y)
    assert persistence.dumps(restarted.model) == persistence.dumps(clean.model)
    for user in clean.keys():
        assert persistence.dumps(restarted.learner(user)) == persistence.dumps(clean.learner(user))
        assert restarted.position(user) == max(i for i, (x, _) in enumerate(data) if x["user"] == user)


def test_unlearning_takes_back_from_the_key_and_the_shared_model():
    # no operating point: its record of verdicts keeps a trace of what was taken back
    model = PerKey(SpamFilter(max_ham_rate=None, max_spam_rate=None), by="user")
    model.learn_one({"user": "a", "x": 1}, "ham")
    before = persistence.dumps(model)
    model.learn_one({"user": "a", "free": 1, "cash": 1}, "spam")
    model.unlearn_one({"user": "a", "free": 1, "cash": 1}, "spam")
    assert persistence.dumps(model) == before
    with pytest.raises(streamnb.InvalidEventError):  # never learned by this key: nothing changes
        model.unlearn_one({"user": "b", "x": 1}, "ham")
    with pytest.raises(streamnb.InvalidEventError):
        model.unlearn_one({"user": "a", "free": 1}, "spam")
    assert persistence.dumps(model) == before


def test_bad_keys_and_events_are_refused_and_change_nothing():
    model = PerKey(SpamFilter(), by="user")
    model.learn_one({"user": "a", "x": 1}, "ham")
    before = persistence.dumps(model)
    with pytest.raises(streamnb.InvalidEventError, match="user"):
        model.learn_one({"user": object(), "x": 1}, "ham")
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_one({"user": "new", "x": 1}, "eggs")  # not a label of the filter
    assert persistence.dumps(model) == before and model.keys() == ["a"]


def test_a_rejected_event_of_a_known_key_keeps_the_recency_order(tmp_path):
    """A rejected event changes nothing, the keys' order of recent use included: the saved
    bytes are the same, and the next key read back evicts the same key as without it."""
    def two_keys(path):
        model = PerKey(SpamFilter(), by="user", max_resident=2, store=str(path))
        model.learn_one({"user": "a", "x": 1}, "ham")
        model.learn_one({"user": "b", "x": 1}, "spam")
        return model

    model, clean = two_keys(tmp_path / "m"), two_keys(tmp_path / "c")
    before = persistence.dumps(model)
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_one({"user": "a", "x": 1}, "eggs")  # "a" stays the least recent
    with pytest.raises(streamnb.InvalidEventError):
        model.learn_one({"user": "c", "x": 1}, "eggs")  # "c" is not made, evicting nobody
    with pytest.raises(streamnb.InvalidEventError):
        model.unlearn_one({"user": "a", "x": 1}, "spam")  # never learned by "a"
    assert persistence.dumps(model) == before and model.keys() == ["a", "b"]
    for m in (model, clean):
        m.learn_one({"user": "d", "x": 1}, "ham")  # evicts the least recent: "a"
    assert model.keys() == clean.keys() == ["b", "d"]
    for user in ("b", "d"):
        assert persistence.dumps(model.learner(user)) == persistence.dumps(clean.learner(user))
    assert persistence.dumps(model.model) == persistence.dumps(clean.model)


def test_a_refused_prediction_keeps_the_recency_order_and_reads_back_nothing(tmp_path):
    """A prediction of an event refused changes nothing either: a resident key stays where it
    was, and a key read back from the store for it is dropped again, evicting no one."""
    def keys(path):
        model = PerKey(streamnb.CategoricalNB(), by="user", max_resident=2, store=str(path))
        for user in ("a", "b", "c"):  # "a" evicted to the store
            model.learn_one({"user": user, "x": "1"}, "yes")
        return model

    model, clean = keys(tmp_path / "m"), keys(tmp_path / "c")
    assert model.keys() == ["b", "c"]
    before = persistence.dumps(model)
    for user in ("b", "a"):  # resident, then in the store
        with pytest.raises(streamnb.InvalidEventError):
            model.predict_proba_one({"user": user, "x": {3}})
    assert persistence.dumps(model) == before and model.keys() == ["b", "c"]
    for m in (model, clean):
        m.learn_one({"user": "d", "x": "1"}, "yes")  # evicts the least recent: "b"
    assert model.keys() == clean.keys() == ["c", "d"]


def test_a_learner_without_the_blend_capability_is_refused():
    with pytest.raises(TypeError, match="predict_proba_blend"):
        PerKey(streamnb.GaussianNB())


def test_saved_and_loaded_with_its_keys():
    model = PerKey(SpamFilter(), by="user", takeover=5)
    for x, y in stream(100, 3) + [({"user": ("t", 1), "w1": 1}, "spam")]:
        model.learn_one(x, y)
    again = persistence.loads(persistence.dumps(model))
    assert persistence.dumps(again) == persistence.dumps(model)
    for x, _ in stream(20, 3, seed=9):
        assert again.predict_proba_one(x) == model.predict_proba_one(x)


@pytest.mark.parametrize("params", list(PerKey._unit_test_params()))
def test_check_estimator_without_skips(params):
    model = PerKey(**params)
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)


def test_merging_two_members_equals_one_learner_of_both_streams():
    from streamnb import MultinomialNB

    data = [({"user": f"u{i % 7}", "a": i % 3, "b": (i * 5) % 4}, "xy"[i % 2]) for i in range(200)]
    left, right, both = (PerKey(MultinomialNB(), by="user") for _ in range(3))
    for i, (x, y) in enumerate(data):
        (left if int(x["user"][1:]) < 4 else right).learn_one(x, y)  # keys split between members
        both.learn_one(x, y)
    left.merge(right)
    assert sorted(left.keys()) == sorted(both.keys())
    for x, _ in data[:30]:
        assert left.predict_proba_one(x) == pytest.approx(both.predict_proba_one(x), rel=1e-12)
    with pytest.raises(TypeError, match="cannot be merged"):
        PerKey(SpamFilter(), by="user").merge(PerKey(SpamFilter(), by="user"))


def pending_files(path) -> list:
    return sorted(path.glob("*/*.pending"))


def test_staged_evictions_come_back_and_a_flush_makes_them_durable(tmp_path):
    data = stream(400, 9, seed=3)
    bounded = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path), sync_evictions=False)
    free = PerKey(SpamFilter(), by="user")
    for x, y in data:
        bounded.learn_one(x, y)
        free.learn_one(x, y)
        assert bounded.predict_proba_one(x) == free.predict_proba_one(x)
    assert len(pending_files(tmp_path)) == 9  # every key was evicted at least once: written, not synced
    assert list(tmp_path.glob("*/*.snb")) == []
    bounded.flush()
    assert pending_files(tmp_path) == []
    assert len(list(tmp_path.glob("*/*.snb"))) == 9
    for user in free.keys():
        assert persistence.dumps(bounded.learner(user)) == persistence.dumps(free.learner(user))


def test_a_staged_learner_torn_by_a_machine_crash_is_rebuilt_from_the_durable_one_and_the_log(tmp_path, caplog):
    data = stream(160, 6, seed=5)
    model = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path), sync_evictions=False)
    for i, (x, y) in enumerate(data[:100]):
        model.learn_one(x, y, position=i)
    model.flush()  # the owner's snapshot: the log before it may go
    shared = persistence.dumps(model.model)
    for i, (x, y) in enumerate(data[100:], start=100):
        model.learn_one(x, y, position=i)
    torn = pending_files(tmp_path)
    assert len(torn) == 6  # every key was evicted after the flush (the 2 resident ones were read back)
    for path in torn:  # what a machine crash can leave of a file written without fsync
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    restarted = PerKey(SpamFilter(), by="user", max_resident=2, store=str(tmp_path), sync_evictions=False)
    assert pending_files(tmp_path) == []
    assert caplog.text.count("dropping a torn staged learner") == 6
    restarted.model, restarted._positions[None] = persistence.loads(shared), 99
    for i, (x, y) in enumerate(data[100:], start=100):  # the log since the snapshot
        restarted.learn_one(x, y, position=i)
    clean = PerKey(SpamFilter(), by="user")
    for x, y in data:
        clean.learn_one(x, y)
    assert persistence.dumps(restarted.model) == persistence.dumps(clean.model)
    for user in clean.keys():
        assert persistence.dumps(restarted.learner(user)) == persistence.dumps(clean.learner(user))


def test_of_a_keys_two_files_the_later_position_is_read(tmp_path):
    store = DirectoryStore(tmp_path)
    older, newer = SpamFilter(), SpamFilter()
    newer.learn_one({"a": 1}, "spam")
    store.stage("ann", newer, 7)
    store.sync()
    store.stage("ann", older, 5)
    assert store.load("ann")[1] == 7
    store.save("ann", older, 9)  # a durable save supersedes the staged file
    assert pending_files(tmp_path) == [] and store.load("ann")[1] == 9


def test_a_keys_own_learner_weighs_in_after_its_minimum_learns_of_each_class():
    model = PerKey(SpamFilter(max_ham_rate=None), by="user", takeover=2, min_key_learns=3, learn_shared=False)
    for i in range(20):
        model.learn_one({"text": 1, f"s{i}": 1, "user": None}, "spam")
        model.learn_one({"lunch": 1, f"h{i}": 1, "user": None}, "ham")
    x = {"news": 1, "weekly": 1}
    shared = model.model.predict_proba_one(x)
    for i in range(5):  # ann: 5 newsletters reported as spam, no ham of her own yet
        model.learn_one({**x, f"n{i}": 1, "user": "ann"}, "spam")
    assert model.predict_proba_one({**x, "user": "ann"}) == shared and model.blend("ann")[1] == 0.0
    for i in range(4):  # 4 hams: past 3 of each, a third of the way to full weight
        model.learn_one({"lunch": 1, f"a{i}": 1, "user": "ann"}, "ham")
    assert model.blend("ann")[1] == pytest.approx(model.weight("ann") / 3)
    assert model.predict_proba_one({**x, "user": "ann"})["spam"] > shared["spam"]
    assert model.predict_proba_one({**x, "user": "bob"}) == model.model.predict_proba_one(x)
