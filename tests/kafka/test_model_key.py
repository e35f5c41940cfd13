"""A model per key in the service (``--model-key``): each key's own learner, the blend, eviction,
exactly-once keyed state across a SIGKILL."""

from __future__ import annotations

import json
import random
import signal

import pytest
from kafkatest import cli, config, create, produce, read_topic, stop_process, wait_until

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service, ServiceConfig
from streamnb.kafka.keyed import Positions
from streamnb.perkey import DirectoryStore, PerKey

KEYS = 1000
#: The eviction tests' users, and keys held in memory: a stream of 300 users with 30 resident
#: evicts and reads back keys as often, per event, as one of 1,000 with 100, on a third of the
#: events (every eviction and read back is a store round trip: a file, an S3 request, a record).
EVICTING_KEYS, RESIDENT = 300, 30


def events(n: int, seed: int, start: int = 0, keys: int = KEYS) -> list[tuple[str, dict]]:
    """Events of ``keys`` users (each of them among the first ``keys``): sky and wind; odd users
    play in the rain, even ones in the sun."""
    rng = random.Random(seed)
    first = rng.sample(range(keys), keys)
    out = []
    for i in range(start, start + n):
        user = f"u{first[i - start] if i - start < keys else rng.randrange(keys)}"
        sky, wind = rng.choice(["sunny", "rainy", "fog"]), rng.choice(["calm", "gale"])
        good = sky == ("rainy" if int(user[1:]) % 2 else "sunny")
        y = "yes" if good and (wind == "calm" or rng.random() < 0.3) else "no"
        out.append((user, {"user": user, "sky": sky, "wind": wind, "y": y, "id": i}))
    return out


def features(e: dict) -> dict:
    return {"sky": e["sky"], "wind": e["wind"]}


def own_learners(evs) -> dict:
    """Each key's learner fed that key's events alone."""
    own: dict = {}
    for _, e in evs:
        own.setdefault(e["user"], streamnb.CategoricalNB()).learn_one(features(e), e["y"])
    return own


def test_each_key_learns_its_own_events_and_predictions_are_the_blend(bootstrap, names, tmp_path):
    data = events(900, seed=1, keys=EVICTING_KEYS)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, data)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], model_key="user",
                 model_key_resident=RESIDENT, model_key_takeover=20.0, ignore_fields=["id"])
    summary = Service(cfg).run()
    assert summary.learned == len(data) and not summary.dead_letters

    # the predictions: PerKey fed the same stream in Python, predict then learn (no eviction)
    reference = PerKey(streamnb.CategoricalNB(), by="user", takeover=20.0)
    expected = []
    for _, e in data:
        x = {"user": e["user"], **features(e)}
        expected.append(reference.predict_proba_one(x))
        reference.learn_one(x, e["y"])
    out = [json.loads(r.value) for r in read_topic(bootstrap, names.output, len(data))]
    assert [o["source"]["offset"] for o in out] == list(range(len(data)))
    assert [o["proba"] for o in out] == expected
    assert len({e["user"] for _, e in data}) == EVICTING_KEYS

    # the state: the shared learner learned every event; each key's learner its events alone
    ck = Checkpointer(tmp_path / "ckpt").load()
    model = ck.model
    assert isinstance(model, PerKey) and ck.offsets == {f"{names.topic}:0": len(data)}
    assert len(model.keys()) <= RESIDENT
    assert persistence.dumps(model.model) == persistence.dumps(reference.model)
    for user, alone in own_learners(data).items():
        assert persistence.dumps(model.learner(user)) == persistence.dumps(alone), user
    assert len(DirectoryStore(tmp_path / "ckpt" / "keys" / "main")) >= EVICTING_KEYS - RESIDENT


def run_args(bootstrap, names, ckdir, *extra):
    return ["run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
            "--group-id", names.group, "--partitions", "0,1", "--checkpoint-dir", str(ckdir),
            "--model", "categorical", "--ignore", "id", "--model-key", "user",
            "--model-key-resident", str(RESIDENT // 2), "--checkpoint-every", "500",
            "--checkpoint-interval", "600", "--batch-size", "200",
            "--no-progress", *extra]


def test_a_restart_after_sigkill_continues_exactly_with_evicted_keys_ahead_of_the_checkpoint(
        bootstrap, names, tmp_path):
    """Two partitions (a key in one: the message key is the user). The first run learns 800
    events and checkpoints once (after 500 to 700: polls of at most 200), evicting keys that
    learned events after it; SIGKILL; the restart replays from the checkpoint and each key's
    learner skips what it already holds: every event is learned once."""
    first = events(800, seed=2, keys=EVICTING_KEYS)
    second = events(600, seed=3, start=800, keys=EVICTING_KEYS)
    create(bootstrap, names.topic, 2)
    produce(bootstrap, names.topic, first)
    ckdir = tmp_path / "ckpt"
    proc = cli(*run_args(bootstrap, names, ckdir, "--exit-when-idle", "3600"))
    try:
        wait_until(lambda: len(read_topic(bootstrap, names.output, 0, timeout=30)) >= len(first)
                   or proc.poll() is not None, 120, "every event of the first part predicted", interval=0.5)
        assert proc.poll() is None, proc.communicate()[0]
    finally:
        stop_process(proc, signal.SIGKILL)
    ck = Checkpointer(ckdir).load()
    assert 500 <= sum(ck.offsets.values()) < len(first)
    # keys evicted after the checkpoint hold events past it: the case positions are for
    store = DirectoryStore(ckdir / "keys" / "main")
    ahead = 0
    for user in {e["user"] for _, e in first}:
        saved = store.load(user)
        if saved is not None:
            position = saved[1]
            tp = f"{names.topic}:{Positions.source(position)}"
            ahead += (position >> 24) >= ck.offsets.get(tp, 0)
    assert ahead > 0

    produce(bootstrap, names.topic, second)
    final = cli(*run_args(bootstrap, names, ckdir, "--exit-when-idle", "2"))
    out, _ = final.communicate(timeout=300)
    assert final.returncode == 0, out

    ck = Checkpointer(ckdir).load()
    assert sum(ck.offsets.values()) == len(first) + len(second)
    model = ck.model
    everything = first + second
    assert model.n_seen == len(everything)
    shared = streamnb.CategoricalNB()
    for _, e in everything:
        shared.learn_one(features(e), e["y"])
    for name, table in shared.tables().items():  # partitions interleave: compare tables, sorted
        got = model.model.tables()[name]
        assert got.sort_index().sort_index(axis=1).equals(table.sort_index().sort_index(axis=1)), name
    # a key's events are in one partition, in order: its learner is byte for byte the lone one
    for user, alone in own_learners(everything).items():
        assert persistence.dumps(model.learner(user)) == persistence.dumps(alone), user


def test_a_key_moving_to_another_partition_is_a_dead_letter(bootstrap, names, tmp_path):
    """Whichever partition is read first keeps the key; the other's event is refused."""
    create(bootstrap, names.topic, 2)
    produce(bootstrap, names.topic, [("a", {"user": "ann", "sky": "sunny", "y": "yes"})], partition=0)
    produce(bootstrap, names.topic, [("a", {"user": "ann", "sky": "fog", "y": "no"})], partition=1)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0, 1], model_key="user",
                 dead_letter_topic=names.dlq)
    summary = Service(cfg).run()
    assert summary.learned == 1 and summary.dead_letters == {"invalid_event": 1}
    dead = read_topic(bootstrap, names.dlq, 1)
    assert any(b"another partition" in value for _, value in dead[0].headers)
    assert Checkpointer(tmp_path / "ckpt").load().model.key_n_seen("ann") == 1.0


@pytest.mark.parametrize(("kw", "message"), [
    ({"model": "gaussian"}, "blended"),
    ({"ignore_fields": ["user"]}, "must not be"),
    ({"batch_learning": "always"}, "event by event"),
    ({"on_checkpoint_ahead": "reset"}, "reset"),
    ({"model_key_resident": 0}, ">= 1"),
])
def test_combinations_that_cannot_work_are_refused(kw, message):
    base = dict(bootstrap="127.0.0.1:9", input_topics=["in"], output_topic="out", model="categorical",
                model_key="user")
    with pytest.raises(ValueError, match=message):
        ServiceConfig(**{**base, **kw})
    with pytest.raises(ValueError, match="needs --model-key"):
        ServiceConfig(bootstrap="127.0.0.1:9", input_topics=["in"], output_topic="out", model_key_resident=5)
    # without eviction, every store holds keyed state (in the checkpoint); s3:// and dir: evicted keys too
    ServiceConfig(**{**base, "state": "kafka:state-x"})
    assert ServiceConfig(**{**base, "state": "s3://bucket-x/p", "model_key_resident": 10,
                            "member": "m1"}).keys_store() == "s3://bucket-x/p/keys/m1"
    assert ServiceConfig(**{**base, "state": "s3://bucket-x", "model_key_resident": 10}).keys_store() == \
        "s3://bucket-x/keys/main"
    assert ServiceConfig(**{**base, "state": "kafka:state-x", "model_key_resident": 10}).keys_store() == \
        "kafka://127.0.0.1:9/state-x-keys/main"
