"""Scale-out: N members of one group share their checkpointed statistics through a model topic;
every member's merged model converges to the model of all events."""

from __future__ import annotations

import pytest
from kafkatest import cli, config, create, produce, start, stop_process, wait_until
from test_exactly_once import assert_same_model, clean_pass, weather

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service, merge_checkpoints
from streamnb.kafka.modelsync import ModelSync, snapshot


def member(bootstrap, names, tmp_path, name, **kw):
    cfg = {"member": name, "model": "categorical", "model_topic": f"models-{names.group}", "model_interval": 0.2,
           "checkpoint_every": 400, "checkpoint_interval": 0.3, "exit_when_idle": None, "batch_size": 200}
    cfg.update(kw)
    return Service(config(bootstrap, names, tmp_path, **cfg))


def owned(services):
    return [s.source.owned if s.source is not None else set() for s in services]


def split(services, n_partitions):
    """Every partition owned by exactly one member, every member owning some."""
    sets = owned(services)
    return all(sets) and sum(len(o) for o in sets) == n_partitions == len(set().union(*sets))


def wait_three_way(services, n_partitions, other) -> None:
    """Wait until ``services`` each own some partitions and ``other`` (a member in a child
    process) the rest, or ``other`` exited (the caller checks it did not): a bound of 120 s, as
    a busy machine's group rebalance may take a while."""
    def three_way():
        sets = owned(services)
        return all(sets) and sum(map(len, sets)) == len(set().union(*sets)) < n_partitions

    wait_until(lambda: three_way() or other.poll() is not None, 120, "a three-way split")


def converge_and_stop(services, runs, events, timeout=40.0):
    """Wait until each member's merged model has every event, stop them all; return summaries."""
    n = len(events)
    try:
        wait_until(lambda: all(s.view is not None and s.view.n_seen == n for s in services)
                   or any(not r.thread.is_alive() for r in runs), timeout, "every merged model to converge",
                   progress=lambda: [s.view.n_seen if s.view is not None else -1 for s in services])
    finally:
        for s in services:
            s.stop()
        summaries = [r.join(60) for r in runs]
    return summaries


def check(services, summaries, events, tmp_path, all_learn=True):
    expected = clean_pass(events, "categorical")
    for s in services:
        assert s.view.n_seen == len(events), s.config.member
        assert_same_model(s.view, expected)  # counts exactly equal to one clean pass
        assert_same_model(s.merged_model(), expected)
    ckdir = tmp_path / "ckpt"
    own = [Checkpointer(ckdir, s.config.member).load().model.n_seen for s in services]
    assert sum(own) == len(events)  # checkpoints stay per member: each holds only what it learned
    merged, offsets = merge_checkpoints(ckdir)
    assert sum(offsets.values()) == len(events)
    assert_same_model(merged, expected)
    for s, summary in zip(services, summaries):
        assert summary.snapshots_published > 0 and summary.snapshots_ignored == 0
        if len(services) > 1:
            assert summary.snapshots_received > 0
            assert summary.learned > 0 or not all_learn


@pytest.mark.parametrize("n_members", [1, 2, 3])
def test_members_converge_to_the_model_of_all_events(bootstrap, names, tmp_path, n_members):
    events = weather(3000, seed=21 + n_members)
    n_partitions = 6
    create(bootstrap, names.topic, n_partitions)
    services = [member(bootstrap, names, tmp_path, f"m{i}") for i in range(n_members)]
    runs = [start(s) for s in services]
    try:
        wait_until(lambda: split(services, n_partitions) or any(not r.thread.is_alive() for r in runs),
                   40, "the partitions split between the members")
        for i in range(0, len(events), 500):
            produce(bootstrap, names.topic, events[i:i + 500])
    finally:
        summaries = converge_and_stop(services, runs, events)
    check(services, summaries, events, tmp_path)


def test_member_joining_mid_stream(bootstrap, names, tmp_path):
    """A rebalance: the second member takes over partitions at the first member's checkpoint."""
    events = weather(4000, seed=31)
    n_partitions = 4
    create(bootstrap, names.topic, n_partitions)
    a = member(bootstrap, names, tmp_path, "a")
    runs = [start(a)]
    services = [a]
    try:
        half = len(events) // 2
        for i in range(0, half, 250):
            produce(bootstrap, names.topic, events[i:i + 250])
        wait_until(lambda: a.summary.events > 0, 30, "member a consuming")
        b = member(bootstrap, names, tmp_path, "b")
        services.append(b)
        runs.append(start(b))
        wait_until(lambda: split(services, n_partitions) or any(not r.thread.is_alive() for r in runs),
                   40, "the rebalance")
        for i in range(half, len(events), 250):
            produce(bootstrap, names.topic, events[i:i + 250])
    finally:
        summaries = converge_and_stop(services, runs, events)
    check(services, summaries, events, tmp_path)


def test_killed_member_partitions_move_and_members_converge(bootstrap, names, tmp_path):
    """SIGKILL a member: its partitions move to the others from its checkpoint; when it comes
    back it republishes its checkpoint, and every merged model is again the model of all events.
    Member b consumes with kafka-python, the others with confluent-kafka: one group of both."""
    events = weather(4000, seed=41)
    n_partitions = 6
    create(bootstrap, names.topic, n_partitions)
    ckdir = tmp_path / "ckpt"
    a, b = member(bootstrap, names, tmp_path, "a"), member(bootstrap, names, tmp_path, "b", consumer="kafka-python")
    services, runs = [a, b], [start(a), start(b)]
    proc = cli("run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
               "--group-id", names.group, "--member", "c", "--checkpoint-dir", str(ckdir),
               "--checkpoint-every", "400", "--checkpoint-interval", "0.3", "--batch-size", "200",
               "--model", "categorical", "--model-topic", f"models-{names.group}", "--model-interval", "0.2",
               "--log-level", "warning")

    def c_learned():
        ck = Checkpointer(ckdir, "c").load()
        return ck is not None and ck.model.n_seen > 0

    try:
        wait_three_way([a, b], n_partitions, proc)  # a and b each own some partitions, c the rest
        half = len(events) // 2
        for i in range(0, half, 250):
            produce(bootstrap, names.topic, events[i:i + 250])
        wait_until(lambda: c_learned() or proc.poll() is not None, 30, "a checkpoint of member c")
        assert proc.poll() is None, proc.communicate()[0]
        stop_process(proc)  # SIGKILL
        for i in range(half, len(events), 250):
            produce(bootstrap, names.topic, events[i:i + 250])
        wait_until(lambda: split([a, b], n_partitions), 40, "c's partitions moving to a and b")
        c = member(bootstrap, names, tmp_path, "c")  # back: republishes its checkpoint
        services.append(c)
        runs.append(start(c))
    finally:
        stop_process(proc)
        summaries = converge_and_stop(services, runs, events)
    check(services, summaries, events, tmp_path, all_learn=False)


def test_snapshots_of_another_learner_are_ignored(bootstrap, names, tmp_path):
    """A snapshot whose learner type or parameters differ is logged, counted and left out."""
    topic = f"models-{names.group}"
    create(bootstrap, topic, 1)
    own = streamnb.CategoricalNB()
    own.learn_one({"sky": "sunny"}, "yes")
    same = streamnb.CategoricalNB()
    same.learn_one({"sky": "rainy"}, "no")
    other = streamnb.MultinomialNB(alpha=0.1)
    other.learn_one({"w": 1}, "spam")
    other_params = streamnb.CategoricalNB(alpha=0.5)
    other_params.learn_one({"sky": "fog"}, "no")
    produce(bootstrap, topic, [("x", snapshot(other, "x", 1, {})), ("y", snapshot(same, "y", 1, {})),
                               ("z", snapshot(other_params, "z", 1, {})), ("me", snapshot(same, "me", 1, {})),
                               ("w", b"not a model")])
    sync = ModelSync(bootstrap, topic, "me")
    try:
        wait_until(lambda: sync.poll(own, 200) is not None and sync.received + sync.ignored >= 4, 20,
                   "the snapshots")
    finally:
        sync.close()
    assert sorted(sync.models) == ["y"] and sync.ignored == 3
    merged = sync.merged(own)
    assert merged.n_seen == 2 and own.n_seen == 1  # own model untouched
    expected = persistence.loads(persistence.dumps(own)).merge(same)
    assert_same_model(merged, expected)
