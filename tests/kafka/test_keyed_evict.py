"""A model per key evicting idle keys to the ``s3://`` and ``kafka:`` state stores
(``--model-key-resident``): no disk; each key learns its own events once, across a SIGKILL too."""

from __future__ import annotations

import json
import signal

import pytest
from kafkatest import cli, config, create, produce, read_topic, stop_process, wait_until
from test_model_key import EVICTING_KEYS, RESIDENT, events, features, own_learners

import streamnb
from streamnb import persistence
from streamnb.kafka import Service, ServiceConfig, open_store
from streamnb.kafka.keyed import Positions
from streamnb.perkey import PerKey, open_key_store


@pytest.fixture(params=["s3", "kafka"])
def state(request, names):
    """A state URL with no disk: ``s3://`` (moto on 127.0.0.1) or ``kafka:`` (the test broker)."""
    if request.param == "s3":
        return request.getfixturevalue("s3_url")
    return f"kafka:state-{names.group}"


def keys_of(bootstrap, url: str) -> str:
    """Where member ``main``'s evicted keys go with the state ``url``."""
    return ServiceConfig(bootstrap=bootstrap, input_topics=["in"], output_topic="out", model_key="user",
                         model_key_resident=1, state=url).keys_store()


def files_under(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.exists() else []


def test_evicted_keys_learn_their_own_events_and_predictions_are_the_blend(bootstrap, names, tmp_path, state):
    data = events(900, seed=11, keys=EVICTING_KEYS)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, data)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], model_key="user", state=state,
                 model_key_resident=RESIDENT, model_key_takeover=20.0, ignore_fields=["id"])
    keys = keys_of(bootstrap, state)
    summary = Service(cfg).run()
    assert summary.learned == len(data) and not summary.dead_letters

    reference = PerKey(streamnb.CategoricalNB(), by="user", takeover=20.0)
    expected = []
    for _, e in data:
        x = {"user": e["user"], **features(e)}
        expected.append(reference.predict_proba_one(x))
        reference.learn_one(x, e["y"])
    out = [json.loads(r.value) for r in read_topic(bootstrap, names.output, len(data))]
    assert [o["proba"] for o in out] == expected

    store = open_store(state, "reader", bootstrap)
    ck = store.newest("main")
    model = ck.model
    assert isinstance(model, PerKey) and model.store == keys
    assert ck.offsets == {f"{names.topic}:0": len(data)} and len(model.keys()) <= RESIDENT
    assert persistence.dumps(model.model) == persistence.dumps(reference.model)
    assert len(open_key_store(keys, read_only=True)) >= EVICTING_KEYS - RESIDENT
    for user, alone in own_learners(data).items():  # most of them read back from the store
        assert persistence.dumps(model.learner(user)) == persistence.dumps(alone), user
    model.close()
    store.release()
    assert files_under(tmp_path) == []  # nothing on disk


def run_args(bootstrap, names, url, *extra):
    return ["run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
            "--group-id", names.group, "--partitions", "0,1", "--state", url,
            "--model", "categorical", "--ignore", "id", "--model-key", "user",
            "--model-key-resident", str(RESIDENT // 2), "--checkpoint-every", "500",
            "--checkpoint-interval", "600", "--batch-size", "200",
            "--state-lease", "3", "--no-progress", *extra]


def test_a_restart_after_sigkill_continues_exactly_with_keys_evicted_ahead_of_the_checkpoint(
        bootstrap, names, tmp_path, state):
    """As the dir: test of test_model_key: a checkpoint after 500 to 700 of 800 events, keys
    evicted to the store after it, SIGKILL; the restart replays from the checkpoint and each
    key's learner skips what it already holds."""
    first = events(800, seed=12, keys=EVICTING_KEYS)
    second = events(600, seed=13, start=800, keys=EVICTING_KEYS)
    create(bootstrap, names.topic, 2)
    produce(bootstrap, names.topic, first)
    proc = cli(*run_args(bootstrap, names, state, "--exit-when-idle", "3600"))
    try:
        predicted = [0]

        def done() -> bool:
            predicted[0] = len(read_topic(bootstrap, names.output, 0, timeout=30))
            return predicted[0] >= len(first) or proc.poll() is not None

        wait_until(done, 120, "every event of the first part predicted", interval=0.5,
                   progress=lambda: predicted[0])
        assert proc.poll() is None, proc.communicate()[0]
    finally:
        stop_process(proc, signal.SIGKILL)
    reader = open_store(state, "reader", bootstrap)
    ck = reader.newest("main")
    assert 500 <= sum(ck.offsets.values()) < len(first)
    keys = open_key_store(keys_of(bootstrap, state), read_only=True)
    ahead = 0
    for user in {e["user"] for _, e in first}:
        saved = keys.load(user)
        if saved is not None:
            tp = f"{names.topic}:{Positions.source(saved[1])}"
            ahead += (saved[1] >> 24) >= ck.offsets.get(tp, 0)
    assert ahead > 0

    produce(bootstrap, names.topic, second)
    final = cli(*run_args(bootstrap, names, state, "--exit-when-idle", "2"))
    out, _ = final.communicate(timeout=300)
    assert final.returncode == 0, out

    ck = reader.newest("main")
    everything = first + second
    assert sum(ck.offsets.values()) == len(everything)
    model = ck.model
    assert model.n_seen == len(everything)
    for user, alone in own_learners(everything).items():
        assert persistence.dumps(model.learner(user)) == persistence.dumps(alone), user
    model.close()
    reader.release()
