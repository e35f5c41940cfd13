"""A model per key with a model topic (``--model-key`` with ``--model-topic``): the members publish
their shared learners (not the keys) and each predicts with the merge of every member's shared
learner blended with the key's own learner, ``merged + max(1, N / takeover) x own``."""

from __future__ import annotations

import copy
import json

import pytest
from kafkatest import create, read_topic, start, wait_until
from test_exactly_once import assert_same_model
from test_keyed_moves import PARTITIONS, checkpointed, member, produce_in
from test_model_key import events, features, own_learners
from test_scaleout import owned, split

import streamnb
from streamnb import persistence
from streamnb.kafka import ServiceConfig, open_store
from streamnb.kafka.keyed import KeyedView
from streamnb.perkey import PerKey

TAKEOVER = 20.0


def queries(data, seed: int) -> list[tuple[str | None, dict]]:
    """Unlabelled events (predicted, never learned): a few hundred known users, users never seen
    and events of no user."""
    users = sorted({e["user"] for _, e in data})[::3]
    out: list[tuple[str | None, dict]] = []
    skies, winds = ["sunny", "rainy", "fog"], ["calm", "gale"]
    for i, user in enumerate(users + [f"new{j}" for j in range(5)]):
        out.append((user, {"user": user, "sky": skies[(i + seed) % 3], "wind": winds[i % 2], "id": 10**6 + i}))
    for j in range(4):
        out.append((f"nouser{j}", {"sky": skies[j % 3], "wind": winds[j % 2], "id": 2 * 10**6 + j}))
    return out


@pytest.mark.parametrize("n_members", [2, 3])
def test_keyed_members_predict_with_every_members_shared_learner_and_the_keys_own(
        bootstrap, names, tmp_path, n_members):
    """2 or 3 members, 6 partitions, 1,000 keys, the kafka: store. Once every member's view holds
    every event, its merged shared learner equals one clean pass (tables compared exactly), and
    each prediction of an unlabelled event is, exactly, the merged shared learner blended with the
    key's own learner (the learner of that key's events alone) with weight max(1, N / takeover)."""
    url = f"kafka:state-{names.group}"
    model_topic = f"models-{names.group}"
    data = events(3000, seed=80 + n_members)
    asked = queries(data, seed=n_members)
    create(bootstrap, names.topic, PARTITIONS)
    services = [member(bootstrap, names, tmp_path / f"disk-{m}", m, url, model_topic=model_topic,
                       model_interval=0.2, model_key_takeover=TAKEOVER) for m in "abc"[:n_members]]
    runs = [start(s) for s in services]
    reader = open_store(url, "reader", bootstrap)
    try:
        wait_until(lambda: split(services, PARTITIONS) or any(not r.thread.is_alive() for r in runs), 60,
                   "the partitions split between the members")
        produce_in(bootstrap, names.topic, data)
        wait_until(lambda: all(isinstance(s.view, KeyedView) and s.view.n_seen == len(data) for s in services)
                   or any(not r.thread.is_alive() for r in runs), 90, "every member's view to hold every event")
        assert sum(checkpointed(reader).values()) == len(data)
        owners = {tp.partition: s for s in services for tp in s.source.owned}
        before = owned(services)
        produce_in(bootstrap, names.topic, asked)
        outputs = read_topic(bootstrap, names.output, len(data) + len(asked))
        assert owned(services) == before  # no rebalance: each partition's answers came from its owner
    finally:
        for s in services:
            s.stop()
        summaries = [r.join(60) for r in runs]
        reader.release()

    # the merged shared learner of every member: one clean pass over all events
    shared = streamnb.CategoricalNB()
    for _, e in data:
        shared.learn_one(features(e), e["y"])
    for s in services:
        assert s.view.n_seen == len(data)
        assert_same_model(s.view.shared, shared)
        assert_same_model(s.merged_model().shared, shared)
        assert s.model.n_seen < len(data)  # each member's own shared learner learned its partitions only

    # each prediction of an unlabelled event: the documented combination, exactly
    inputs = {(r.partition, r.offset): json.loads(r.value) for r in read_topic(bootstrap, names.topic,
                                                                              len(data) + len(asked))}
    alone = own_learners(data)
    answers = [json.loads(r.value) for r in outputs]
    answers = [o for o in answers if "label" not in o]
    assert len({(o["source"]["partition"], o["source"]["offset"]) for o in answers}) == len(asked)
    blended = 0
    for o in answers:
        event = inputs[(o["source"]["partition"], o["source"]["offset"])]
        owner = owners[o["source"]["partition"]]
        merged, user, x = owner.view.shared, event.get("user"), features(event)
        assert o["n_seen"] == len(data)
        if user in alone:
            assert persistence.dumps(owner.model.learner(user)) == persistence.dumps(alone[user]), user
            expected = merged.predict_proba_blend(x, alone[user], max(1.0, len(data) / TAKEOVER))
            blended += 1
        else:
            assert user is None or owner.model.learner(user) is None
            expected = merged.predict_proba_one(x)
        assert o["proba"] == expected, (user, o["proba"], expected)
        if user in alone:
            assert o["proba"] != merged.predict_proba_one(x) or alone[user].n_seen == 0
    assert blended == len(sorted({e["user"] for _, e in data})[::3])

    # the model topic carries the members' shared learners, never their keys
    snapshots = read_topic(bootstrap, model_topic, n_members)
    assert {r.key.decode() for r in snapshots} == {s.config.member for s in services}
    for r in snapshots:
        assert type(persistence.loads(r.value)) is streamnb.CategoricalNB
    for summary in summaries:
        assert summary.snapshots_published > 0 and summary.snapshots_received > 0
        assert summary.snapshots_ignored == 0 and not summary.dead_letters


def test_a_keyed_view_is_the_merged_shared_learner_plus_weight_times_the_keys_own():
    """No broker: two owners' keyed models of disjoint events; the view of the first over the merge
    of both shared learners answers a key as one learner that learned every event once and the
    key's own events ``weight`` more times (to rounding), a key it holds no learner of, and an
    event of no key, as the merge alone (exactly)."""
    skies, winds = ["sunny", "rainy", "fog"], ["calm", "gale"]
    a = PerKey(streamnb.CategoricalNB(), by="user", takeover=10.0, shared_positions=False)
    b = PerKey(streamnb.CategoricalNB(), by="user", takeover=10.0, shared_positions=False)
    everything = []
    for i in range(40):
        user = ["ann", "bob", "cid", "dan"][i % 4]
        x = {"sky": skies[i % 3], "wind": winds[(i // 3) % 2]}
        y = "yes" if user == "ann" or (i * 7) % 5 < 2 else "no"  # ann's differ from everyone's
        (a if user in ("ann", "cid") else b).learn_one({"user": user, **x}, y)
        everything.append((user, x, y))
    merged = copy.deepcopy(a.model)
    merged.merge(b.model)
    view = KeyedView(a, merged)
    assert view.n_seen == 40.0
    weight = 40 / 10.0  # N / takeover, > 1
    reference = streamnb.CategoricalNB()
    for user, x, y in everything:
        reference.learn_one(x, y, w=1.0 + (weight if user == "ann" else 0.0))
    q = {"sky": "fog", "wind": "gale"}
    got = view.predict_proba_one({"user": "ann", **q})
    assert got == pytest.approx(reference.predict_proba_one(q), rel=1e-12)
    assert got != merged.predict_proba_one(q)
    assert got == merged.predict_proba_blend(q, a.learner("ann"), weight)
    # bob learned at b: no learner of his at a; a new key; no key
    for x in ({"user": "bob", **q}, {"user": "eve", **q}, q):
        assert view.predict_proba_one(x) == merged.predict_proba_one(q)
    # over its own shared learner, the view is PerKey's own prediction
    assert KeyedView(a, a.model).predict_proba_one({"user": "ann", **q}) == a.predict_proba_one({"user": "ann", **q})


def test_model_key_with_a_model_topic_is_accepted():
    cfg = ServiceConfig(bootstrap="127.0.0.1:9", input_topics=["in"], output_topic="out", model="categorical",
                        model_key="user", model_topic="models")
    assert cfg.model_topic == "models" and cfg.model_key == "user"
