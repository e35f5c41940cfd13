"""State stores chosen by URL (dir:, kafka:, s3://): the same checkpoints in each; members that
share no directory recover a lost member, disk and all, from the store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafkatest import ROOT, config, create, produce, start, stop_process, wait_until
from test_exactly_once import assert_same_model, clean_pass, weather
from test_scaleout import converge_and_stop, member, split, wait_three_way

import streamnb
from streamnb.exceptions import StateError
from streamnb.kafka import ServiceConfig, merge_state, open_store
from streamnb import persistence
from streamnb.stores.checkpoints import FORMAT, VERSION, KafkaStore, StateStore, encode
from streamnb.stores.url import parse_url

@pytest.fixture(params=["dir", "kafka", "s3"])
def state_url(request, tmp_path, bootstrap):
    if request.param == "dir":
        return f"dir:{tmp_path / 'state'}"
    if request.param == "kafka":
        return f"kafka:state-{uuid.uuid4().hex[:10]}"
    return request.getfixturevalue("s3_url")


def trained(n: int, seed: int = 0):
    model = streamnb.CategoricalNB()
    for _, e in weather(n, seed):
        model.learn_one({k: v for k, v in e.items() if k != "y"}, e["y"])
    return model


# -- URLs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["", "dir:", "kafka:", "kafka:a b", "s3://", "s3://A_B/x", "file:/tmp/x",
                                 "/tmp/x", "kafka:" + "t" * 250])
def test_bad_state_urls_are_refused(url):
    with pytest.raises(ValueError, match="state URL"):
        parse_url(url, what="state")


def test_state_urls_pick_their_store(tmp_path, bootstrap):
    assert type(open_store(f"dir:{tmp_path}", "a")).__name__ == "Checkpointer"
    assert isinstance(open_store("kafka:state", "a", bootstrap), KafkaStore)
    assert open_store(f"kafka://{bootstrap}/state", "a").blobs.bootstrap == bootstrap  # kafka:TOPIC's long form
    with pytest.raises(ValueError, match="whole topic"):
        open_store(f"kafka://{bootstrap}/state/prefix", "a")
    with pytest.raises(ValueError, match="bootstrap"):
        open_store("kafka:state", "a")
    with pytest.raises(ValueError, match="member name"):
        open_store("kafka:state", "a/b", bootstrap)
    cfg = ServiceConfig("127.0.0.1:1", ["in"], "out", checkpoint_dir=str(tmp_path / "c"))
    assert cfg.state_url() == f"dir:{tmp_path / 'c'}"  # --checkpoint-dir keeps working as dir:
    with pytest.raises(ValueError, match="state topic"):
        ServiceConfig("127.0.0.1:1", ["in"], "out", state="kafka:in")


def test_cli_refuses_state_and_checkpoint_dir_together(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "streamnb.cli", "run", "--bootstrap", "127.0.0.1:1", "--input",
                           "in", "--output", "out", "--state", "kafka:s", "--checkpoint-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not both" in proc.stderr


# -- every store: the same behaviour --------------------------------------------------------------
def test_store_saves_restores_claims_prunes_and_merges(state_url, bootstrap):
    a = open_store(state_url, "a", bootstrap)
    b = open_store(state_url, "b", bootstrap)
    try:
        assert a.load() is None and a.claims() == {}
        m1, m2, m3 = trained(50, 1), trained(80, 2), trained(120, 3)
        assert a.save(m1, {"in:0": 50}) == 1
        assert a.save(m2, {"in:0": 80, "in:1": 3}, extra={"pending": {}}) == 2
        assert b.save(trained(7, 4), {"in:2": 7}) == 1
        assert a.save(m3, {"in:0": 120, "in:1": 3}) == 3
        assert b.claims() == {"in:0": 120, "in:1": 3} and a.claims() == {"in:2": 7}
    finally:
        a.release()
        b.release()
    fresh = open_store(state_url, "a", bootstrap)  # a replacement: nothing but the URL
    try:
        got = fresh.load()
        assert got is not None and (got.id, got.offsets, got.member) == (3, {"in:0": 120, "in:1": 3}, "a")
        assert_same_model(got.model, m3)
        assert [i for m, i in fresh._list("a")] == [3, 2]  # the older ones pruned (keep=2)
        assert fresh.members() == ["a", "b"]
        assert fresh.save(m3, {"in:0": 120, "in:1": 3}) == 4  # ids go on after the restored one
        merged, offsets = merge_state(fresh)
        assert offsets == {"in:0": 120, "in:1": 3, "in:2": 7} and merged.n_seen == 127
        assert_same_model(merged, trained(120, 3).merge(trained(7, 4)))
    finally:
        fresh.release()


def test_merge_command_reads_any_store(state_url, bootstrap, tmp_path):
    store = open_store(state_url, "a", bootstrap)
    try:
        store.save(trained(30, 5), {"in:0": 30})
    finally:
        store.release()
    other = open_store(state_url, "b", bootstrap)
    try:
        other.save(trained(12, 6), {"in:1": 12})
    finally:
        other.release()
    out = tmp_path / "merged.snb"
    proc = subprocess.run([sys.executable, "-m", "streamnb.cli", "merge", "--state", state_url, "--bootstrap",
                           bootstrap, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    assert "42 events" in proc.stdout
    assert_same_model(streamnb.persistence.load(out), trained(30, 5).merge(trained(12, 6)))


# -- the Kafka store: chunks, manifests, torn writes ------------------------------------------------
def send(bootstrap, topic, items) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)
    try:
        for key, value in items:
            producer.send(topic, key=key.encode(), value=value, partition=0).get(timeout=10)
    finally:
        producer.close()


def test_kafka_store_torn_and_damaged_writes_are_never_read(bootstrap, caplog):
    topic = f"state-{uuid.uuid4().hex[:10]}"
    store = KafkaStore(bootstrap, topic, "a", chunk_bytes=300)
    model = trained(200, 7)
    try:
        store.save(trained(100, 8), {"in:0": 100})
        store.save(model, {"in:0": 200})
        blob = store._get("a", 2)
    finally:
        store.release()
    n = -(-len(blob) // 300)
    assert n >= 5  # a model of several records
    chunk = [blob[i * 300:(i + 1) * 300] for i in range(n)]

    def manifest(ck_id, data, chunks):
        import hashlib
        return (f"manifest/a/{ck_id:012d}",
                json.dumps({"format": "streamnb-state-manifest", "version": 1, "member": "a", "id": ck_id,
                            "chunks": chunks, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}).encode())

    def newest():
        s, other = KafkaStore(bootstrap, topic, "a"), KafkaStore(bootstrap, topic, "b")
        try:
            ck = s.load()
            return ck.id, ck.offsets, s.claims(), other.claims()
        finally:
            s.release()
            other.release()

    # a write torn before its manifest: chunks of checkpoint 3 only
    send(bootstrap, topic, [(f"chunk/a/{3:012d}/{i:06d}", chunk[i]) for i in range(n - 1)])
    assert newest()[:2] == (2, {"in:0": 200})
    # a manifest whose last chunk never arrived
    send(bootstrap, topic, [manifest(3, blob, n)])
    with caplog.at_level("WARNING"):
        got = newest()
    assert got[0] == 2 and got[3] == {"in:0": 200}  # the other members' claims fall back too
    assert "chunks missing" in caplog.text
    # a chunk that differs from what the manifest hashed
    send(bootstrap, topic, [(f"chunk/a/{4:012d}/{i:06d}", chunk[i] if i else b"X" + chunk[0][1:])
                            for i in range(n)] + [manifest(4, blob, n)])
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert newest()[0] == 2
    assert "do not match the manifest" in caplog.text
    # garbage keys and an unreadable manifest are ignored
    send(bootstrap, topic, [("nonsense", b"x"), (f"manifest/a/{5:012d}", b"{not json"), ("chunk/a/5", b"x")])
    assert newest()[0] == 2
    # a complete checkpoint 6 written record by record the same way: now it is the newest
    header = {"format": FORMAT, "version": VERSION, "id": 6, "member": "a", "created": 0.0,
              "offsets": {"in:0": 300}, "n_seen": 200.0}
    blob6 = encode(header, persistence.dumps(model, extra={"offsets": {"in:0": 300}, "service": {}}))
    parts = [blob6[i:i + 300] for i in range(0, len(blob6), 300)]
    send(bootstrap, topic, [(f"chunk/a/{6:012d}/{i:06d}", p) for i, p in enumerate(parts)]
         + [manifest(6, blob6, len(parts))])
    assert newest() == (6, {"in:0": 300}, {}, {"in:0": 300})


def test_kafka_store_memory_is_bounded_by_keep(bootstrap):
    topic = f"state-{uuid.uuid4().hex[:10]}"
    writer = KafkaStore(bootstrap, topic, "a", chunk_bytes=200)
    try:
        for i in range(12):
            writer.save(trained(20 + i, i), {"in:0": 20 + i})
    finally:
        writer.release()
    reader = KafkaStore(bootstrap, topic, "r", chunk_bytes=200)
    try:
        assert reader.claims() == {"in:0": 31}
        assert reader.blobs.records_read > 12 * 5
        kept = [f"a/{i:012d}" for i in (11, 12)]  # the rest were pruned (tombstones)
        assert reader.blobs.list() == kept
        assert set(reader.blobs._chunks) <= set(kept)  # the index holds offsets of live blobs only
    finally:
        reader.release()


def test_s3_store_two_instances_of_one_member_cannot_overwrite(s3_url):
    first, second = open_store(s3_url, "a"), open_store(s3_url, "a")
    assert first.save(trained(10, 1), {"in:0": 10}) == 1
    second.last_id = 0
    second._list = lambda member=None: []  # type: ignore[method-assign]  # blind to the first's write
    with pytest.raises(StateError, match="write failed"):
        second.save(trained(5, 2), {"in:0": 5})
    assert first.load().offsets == {"in:0": 10}


# -- members with no shared directory ---------------------------------------------------------------
def run_member_c(bootstrap, names, url, disk: Path) -> subprocess.Popen:
    """Member c in a child process whose working directory, HOME and TMPDIR are ``disk``."""
    disk.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), "HOME": str(disk), "TMPDIR": str(disk)}
    return subprocess.Popen(
        [sys.executable, "-m", "streamnb.cli", "run", "--bootstrap", bootstrap, "--input", names.topic,
         "--output", names.output, "--group-id", names.group, "--member", "c", "--state", url, "--state-lease", "4",
         "--checkpoint-every", "400", "--checkpoint-interval", "0.3", "--batch-size", "200",
         "--model", "categorical", "--model-topic", f"models-{names.group}", "--model-interval", "0.2",
         "--log-level", "warning"],
        cwd=disk, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.exists() else []


@pytest.mark.parametrize("kind", ["kafka", "s3"])
def test_lost_member_and_its_disk_replaced_from_the_store(bootstrap, names, tmp_path, kind, request):
    """3 members, 6 partitions, no shared directory: SIGKILL member c, delete its disk, start a
    replacement on an empty disk, keep producing; every merged model = one clean pass, and the
    owners' checkpoints hold every event once."""
    url = f"kafka:state-{names.group}" if kind == "kafka" else request.getfixturevalue("s3_url")
    events = weather(4000, seed=51)
    n_partitions = 6
    create(bootstrap, names.topic, n_partitions)
    disks = {m: tmp_path / f"disk-{m}" for m in "abc"}
    a = member(bootstrap, names, disks["a"], "a", state=url)
    b = member(bootstrap, names, disks["b"], "b", state=url, consumer="kafka-python")
    services, runs = [a, b], [start(a), start(b)]
    proc = run_member_c(bootstrap, names, url, disks["c"])
    reader: StateStore = open_store(url, "reader", bootstrap)

    def c_learned():
        ck = reader.newest("c")
        return ck is not None and ck.model.n_seen > 0

    try:
        wait_three_way([a, b], n_partitions, proc)  # a and b each own some partitions, c the rest
        half = len(events) // 2
        for i in range(0, half, 250):
            produce(bootstrap, names.topic, events[i:i + 250])
        wait_until(lambda: c_learned() or proc.poll() is not None, 30, "a checkpoint of member c in the store")
        assert proc.poll() is None, proc.communicate()[0]
        stop_process(proc)  # SIGKILL
        assert files_under(disks["c"]) == []  # nothing of c's state was ever on its disk
        shutil.rmtree(disks["c"])  # ... and whatever was there is gone
        three_q = 3 * len(events) // 4
        for i in range(half, three_q, 250):
            produce(bootstrap, names.topic, events[i:i + 250])
        disks["c"].mkdir()
        # the replacement, on an empty disk: takes c's name once the killed c's lease (4 s) expires
        c = member(bootstrap, names, disks["c"], "c", state=url, state_lease=4.0)
        services.append(c)
        runs.append(start(c))
        wait_until(lambda: split(services, n_partitions) or any(not r.thread.is_alive() for r in runs),
                   60, "the partitions split between a, b and the replacement c")
        for i in range(three_q, len(events), 250):
            produce(bootstrap, names.topic, events[i:i + 250])
    finally:
        stop_process(proc)
        summaries = converge_and_stop(services, runs, events, timeout=60)
    expected = clean_pass(events, "categorical")
    for s in services:
        assert s.view.n_seen == len(events), s.config.member
        assert_same_model(s.view, expected)  # every member's merged model: one clean pass
        assert_same_model(s.merged_model(), expected)
    try:
        own = {m: reader.newest(m).model.n_seen for m in "abc"}
        assert sum(own.values()) == len(events), own  # no event learned twice or lost
        assert own["c"] > 0
        merged, offsets = merge_state(reader)
        assert sum(offsets.values()) == len(events)
        assert_same_model(merged, expected)
    finally:
        reader.release()
    for disk in disks.values():
        assert files_under(disk) == []  # no member kept state on its disk
    assert all(s.snapshots_ignored == 0 for s in summaries)
    assert summaries[2].learned > 0  # the replacement went on learning


def test_member_config_without_state_uses_its_checkpoint_dir(tmp_path):
    cfg = config("127.0.0.1:1", type("N", (), {"topic": "in", "output": "out", "group": "g"}), tmp_path)
    assert cfg.state is None and cfg.state_url() == f"dir:{tmp_path / 'ckpt'}"


def test_checkpoint_a_dead_member_never_published_reaches_every_merge(bootstrap, names, tmp_path):
    """Member c checkpointed the first 300 events of partition 0 to the store and died before its
    snapshot reached the model topic (and never comes back): the members that take over its
    partition republish that checkpoint from the store, so every merged model has every event."""
    url = f"kafka:state-{names.group}"
    create(bootstrap, names.topic, 2)
    p0, p1 = weather(800, seed=61), weather(700, seed=62)
    produce(bootstrap, names.topic, p0, partition=0)
    produce(bootstrap, names.topic, p1, partition=1)
    dead = open_store(url, "c", bootstrap)
    try:
        dead.save(clean_pass(p0[:300], "categorical"), {f"{names.topic}:0": 300})
    finally:
        dead.release()
    a, b = member(bootstrap, names, tmp_path / "a", "a", state=url), member(bootstrap, names, tmp_path / "b", "b",
                                                                          state=url)
    services = [a, b]
    runs = [start(a), start(b)]
    summaries = converge_and_stop(services, runs, p0 + p1, timeout=60)
    expected = clean_pass(p0 + p1, "categorical")
    for s in services:
        assert_same_model(s.view, expected)
    store = open_store(url, "reader", bootstrap)
    try:
        own = {m: store.newest(m).model.n_seen for m in store.members()}
    finally:
        store.release()
    assert own["c"] == 300 and sum(own.values()) == 1500  # a and b started partition 0 at c's offset
    assert sum(s.learned for s in summaries) == 1200
