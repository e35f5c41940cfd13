"""A model per key in a consumer group: keyed state moves with its partition on a rebalance
(a member stopped with SIGTERM; a member SIGKILLed, its disk deleted and replaced), read from the
state store with no shared directory; each key's learner stays the learner of its events alone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafkatest import ROOT, config, create, produce, read_topic, start, stop_process, wait_until
from test_exactly_once import assert_same_model
from test_model_key import events, features, own_learners
from test_scaleout import split, wait_three_way

import streamnb
from streamnb import persistence
from streamnb.kafka import Service, merge_state, open_store
from streamnb.kafka.keyed import KeyMoves, Positions, merge_keyed
from streamnb.perkey import PerKey

PARTITIONS = 6


def member_args(bootstrap, names, url, name) -> list[str]:
    return [sys.executable, "-m", "streamnb.cli", "run", "--bootstrap", bootstrap, "--input", names.topic,
            "--output", names.output, "--group-id", names.group, "--member", name, "--state", url,
            "--state-lease", "4", "--checkpoint-every", "400", "--checkpoint-interval", "0.3",
            "--batch-size", "200", "--model", "categorical", "--ignore", "id", "--model-key", "user",
            "--log-level", "warning"]


def run_member(bootstrap, names, url, name, disk: Path) -> subprocess.Popen:
    """A member in a child process whose working directory, HOME and TMPDIR are ``disk``."""
    disk.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), "HOME": str(disk), "TMPDIR": str(disk)}
    return subprocess.Popen(member_args(bootstrap, names, url, name), cwd=disk, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def member(bootstrap, names, disk: Path, name, url, **kw) -> Service:
    cfg = {"member": name, "state": url, "model": "categorical", "model_key": "user", "ignore_fields": ["id"],
           "checkpoint_every": 400, "checkpoint_interval": 0.3, "exit_when_idle": None, "batch_size": 200,
           "checkpoint_dir": str(disk / "ckpt"), "state_lease": 4.0}
    cfg.update(kw)
    return Service(config(bootstrap, names, disk, **cfg))


def checkpointed(reader) -> dict[str, int]:
    """The highest checkpointed next offset of every partition, over every member."""
    out: dict[str, int] = {}
    for m in reader.members():
        for tp, off in (reader.newest_offsets(m) or {}).items():
            out[tp] = max(out.get(tp, 0), off)
    return out


def produce_in(bootstrap, topic, evs, chunk=250):
    for i in range(0, len(evs), chunk):
        produce(bootstrap, topic, evs[i:i + chunk])


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.exists() else []


def check_keys(bootstrap, names, reader, everything, moved_from: str, before: int):
    """Every event learned once by the shared learners; each key's learner in the checkpoints of
    its partition's newest owner, and in the merge, byte for byte the learner of its events alone;
    keys of the partitions ``moved_from`` owned, with events before and after the move, prove it."""
    n = len(everything)
    records = read_topic(bootstrap, names.topic, n)
    partition_of_user: dict[str, str] = {}
    for rec in records:
        user = rec.key.decode()
        assert partition_of_user.setdefault(user, f"{names.topic}:{rec.partition}") == f"{names.topic}:{rec.partition}"
    alone = own_learners(everything)
    shared = streamnb.CategoricalNB()
    for _, e in everything:
        shared.learn_one(features(e), e["y"])

    cks = {m: reader.newest(m) for m in reader.members()}
    assert sum(ck.model.n_seen for ck in cks.values()) == n, {m: ck.model.n_seen for m, ck in cks.items()}
    positions = Positions([names.topic])
    ends = {f"{names.topic}:{p}": sum(1 for r in records if r.partition == p) for p in range(PARTITIONS)}
    checked = 0
    for tp, end in ends.items():
        best = max(ck.offsets.get(tp, -1) for ck in cks.values())
        assert best == end, (tp, best, end)  # every event of the partition learned, none beyond
        users = {u for u, p in partition_of_user.items() if p == tp}
        for m, ck in cks.items():
            if ck.offsets.get(tp, -1) != best:
                continue  # an older owner: its copies (if any) are older versions
            keys = {k: (learner, pos) for k, learner, pos in ck.model.resident() if positions.partition_of(pos) == tp}
            assert set(keys) == users, (m, tp)
            for user, (learner, _pos) in keys.items():
                assert persistence.dumps(learner) == persistence.dumps(alone[user]), (m, user)
                checked += 1
    assert checked >= len(alone)

    merged, offsets = merge_state(reader)
    assert isinstance(merged, PerKey) and offsets == ends
    assert_same_model(merged.model, shared)
    assert sorted(merged.keys()) == sorted(alone)
    for user, learner in alone.items():
        assert persistence.dumps(merged.learner(user)) == persistence.dumps(learner), user

    # the move: keys of the stopped member's partitions learned events on both sides of it
    gone = {tp for tp in cks[moved_from].offsets}
    spanning = {e["user"] for _, e in everything[:before]} & {e["user"] for _, e in everything[before:]}
    moved = [u for u in spanning if partition_of_user[u] in gone]
    assert len(moved) > 50, len(moved)


@pytest.mark.parametrize("kind", ["kafka", "dir"])
def test_keys_move_with_their_partitions_when_a_member_stops(bootstrap, names, tmp_path, kind):
    """3 members (b in a child process), 6 partitions, a model per key; b is stopped with SIGTERM
    while events keep coming; a and c take over b's partitions with their keys from the store."""
    url = f"kafka:state-{names.group}" if kind == "kafka" else f"dir:{tmp_path / 'shared'}"
    data = events(4000, seed=61)
    first, rest = data[:2000], data[2000:]
    create(bootstrap, names.topic, PARTITIONS)
    disks = {m: tmp_path / f"disk-{m}" for m in "abc"}
    a, c = member(bootstrap, names, disks["a"], "a", url), member(bootstrap, names, disks["c"], "c", url)
    services, runs = [a, c], [start(a), start(c)]
    b = run_member(bootstrap, names, url, "b", disks["b"])
    reader = open_store(url, "reader", bootstrap)
    try:
        wait_three_way(services, PARTITIONS, b)
        produce_in(bootstrap, names.topic, first)
        wait_until(lambda: sum(checkpointed(reader).values()) == len(first) or b.poll() is not None, 60,
                   "every event of the first part checkpointed")
        assert b.poll() is None, b.communicate()[0]
        assert reader.newest_offsets("b")  # b owned partitions and checkpointed them
        produce(bootstrap, names.topic, rest[:250])
        stop_process(b, signal.SIGTERM)  # finishes its batch, checkpoints, leaves the group
        assert b.returncode == 0, b.communicate()[0]
        produce_in(bootstrap, names.topic, rest[250:])
        wait_until(lambda: (split(services, PARTITIONS) and sum(checkpointed(reader).values()) == len(data))
                   or any(not r.thread.is_alive() for r in runs), 90, "a and c own and checkpoint everything")
    finally:
        stop_process(b, signal.SIGKILL)
        for s in services:
            s.stop()
        for r in runs:
            r.join(60)
    try:
        check_keys(bootstrap, names, reader, data, "b", 2000)
        assert sum(s.keys.taken for s in services) > 0
    finally:
        reader.release()
    if kind == "kafka":
        for disk in disks.values():
            assert files_under(disk) == []  # no member kept state on its disk


def test_keys_of_a_killed_member_move_and_come_back_to_its_replacement(bootstrap, names, tmp_path):
    """3 members, 6 partitions, the kafka: store: b is SIGKILLed while events keep coming and its
    disk deleted; a and c take its partitions with its checkpointed keys and replay from its
    checkpoint; a replacement b on an empty disk takes partitions back, keys and all."""
    url = f"kafka:state-{names.group}"
    data = events(4000, seed=62)
    first, second, third = data[:1500], data[1500:2750], data[2750:]
    create(bootstrap, names.topic, PARTITIONS)
    disks = {m: tmp_path / f"disk-{m}" for m in "abc"}
    a, c = member(bootstrap, names, disks["a"], "a", url), member(bootstrap, names, disks["c"], "c", url)
    services, runs = [a, c], [start(a), start(c)]
    b = run_member(bootstrap, names, url, "b", disks["b"])
    reader = open_store(url, "reader", bootstrap)
    try:
        wait_three_way(services, PARTITIONS, b)
        produce_in(bootstrap, names.topic, first)
        wait_until(lambda: sum(checkpointed(reader).values()) == len(first) or b.poll() is not None, 60,
                   "every event of the first part checkpointed")
        assert b.poll() is None, b.communicate()[0]
        b_before = reader.newest_offsets("b")
        assert b_before
        produce(bootstrap, names.topic, second[:250])
        stop_process(b, signal.SIGKILL)
        shutil.rmtree(disks["b"])
        produce_in(bootstrap, names.topic, second[250:])
        wait_until(lambda: (split(services, PARTITIONS) and sum(checkpointed(reader).values()) == 2750)
                   or any(not r.thread.is_alive() for r in runs), 90, "a and c own and checkpoint everything")
        taken = sum(s.keys.taken for s in services)
        disks["b"].mkdir()
        b2 = member(bootstrap, names, disks["b"], "b", url)
        services.append(b2)
        runs.append(start(b2))
        wait_until(lambda: split(services, PARTITIONS) or any(not r.thread.is_alive() for r in runs), 60,
                   "the partitions split between a, c and the replacement b")
        produce_in(bootstrap, names.topic, third)
        wait_until(lambda: sum(checkpointed(reader).values()) == len(data)
                   or any(not r.thread.is_alive() for r in runs), 90, "every event checkpointed")
    finally:
        stop_process(b, signal.SIGKILL)
        for s in services:
            s.stop()
        for r in runs:
            r.join(60)
    try:
        check_keys(bootstrap, names, reader, data, "b", 1500)
        assert taken > 0  # a and c took the killed b's keys
        assert b2.keys.taken > 0  # the replacement took keys back from a and c
        assert b2.summary.learned > 0
    finally:
        reader.release()
    for disk in disks.values():
        assert files_under(disk) == []


# -- the hand-over rules, on a directory store (no broker) -------------------------------------------
def keyed(*keys, resident=None, store=None) -> PerKey:
    """A keyed CategoricalNB whose keys ``(key, partition, offset, sky)`` each learned one event."""
    model = PerKey(streamnb.CategoricalNB(), by="user", max_resident=resident, store=store,
                   shared_positions=False)
    for key, partition, offset, sky in keys:
        model.learn_one({"user": key, "sky": sky}, "yes", position=Positions(["t"]).of("t", partition, offset))
    return model


def test_a_partition_is_taken_from_the_member_furthest_in_it_and_dropped_once_another_is_further(tmp_path):
    from streamnb.kafka import Checkpointer

    Checkpointer(tmp_path, "a").save(keyed(("ann", 0, 9, "sun"), ("bob", 1, 6, "rain")), {"t:0": 10, "t:1": 7})
    c = keyed(("bob", 1, 11, "fog"), ("cid", 1, 8, "sun"))
    Checkpointer(tmp_path, "c").save(c, {"t:1": 12})
    b = keyed(("bob", 1, 2, "sun"), ("dan", 2, 4, "sun"))
    moves = KeyMoves(["t"], Checkpointer(tmp_path, "b"))
    moves.on_assigned(b, {"t:0", "t:1", "t:2"}, {"t:1": 3, "t:2": 5})
    assert moves.failure is None and moves.taken == 3
    held = {k: (u.n_seen, pos) for k, u, pos in b.resident()}
    p = Positions(["t"]).of
    # t:0 from a (only holder); t:1 from c (12 > a's 7), b's own older bob dropped; t:2 b's own
    assert held == {"dan": (1.0, p("t", 2, 4)), "ann": (1.0, p("t", 0, 9)), "bob": (1.0, p("t", 1, 11)),
                    "cid": (1.0, p("t", 1, 8))}
    assert persistence.dumps(b.learner("bob")) == persistence.dumps(c.learner("bob"))  # c's copy, not b's

    # member a, given t:0 only: t:1 is dropped (c is strictly further), a tie would be kept
    a = Checkpointer(tmp_path, "a").load().model
    KeyMoves(["t"], Checkpointer(tmp_path, "a")).on_assigned(a, {"t:0"}, {"t:0": 10, "t:1": 7})
    assert a.keys() == ["ann"]
    a = Checkpointer(tmp_path, "a").load().model
    KeyMoves(["t"], Checkpointer(tmp_path, "a")).on_assigned(a, {"t:0"}, {"t:0": 10, "t:1": 12})
    assert sorted(a.keys()) == ["ann", "bob"]


def test_keys_evicted_to_a_members_directory_cannot_move(tmp_path):
    from streamnb.exceptions import StateError
    from streamnb.kafka import Checkpointer

    Checkpointer(tmp_path, "a").save(keyed(("ann", 0, 9, "sun")), {"t:0": 10})
    b = keyed(resident=5, store=str(tmp_path / "keys-b"))
    moves = KeyMoves(["t"], Checkpointer(tmp_path, "b"))
    moves.on_assigned(b, {"t:0"}, {})
    assert isinstance(moves.failure, StateError) and "--model-key-resident" in str(moves.failure)
    with pytest.raises(StateError, match="could not be taken over"):
        moves.learn(b, None, {"user": "ann", "sky": "sun"}, "yes")
    assert b.keys() == []


def test_merge_keeps_each_keys_newest_copy_and_adds_copies_of_two_partitions():
    old = keyed(("ann", 0, 3, "sun"), ("bob", 1, 4, "sun"))
    new = keyed(("ann", 0, 3, "sun"), ("ann", 0, 7, "rain"), ("bob", 2, 5, "fog"))
    # new's ann learned 2 events (the newest copy, position 7); bob: one event in each of 2 partitions
    merged = merge_keyed([old, new])
    assert merged.n_seen == 5.0
    assert merged.key_n_seen("ann") == 2.0 and merged.key_n_seen("bob") == 2.0
    assert merged.position("ann") == Positions(["t"]).of("t", 0, 7)
