"""Group splitting and merging; the broker going down and coming back."""

from __future__ import annotations

import errno
import threading

import pytest
from kafkatest import config, create, has_keys, has_values, produce, read_topic, start, wait_until
from test_exactly_once import assert_same_model, clean_pass, weather

import streamnb
from streamnb.kafka import Checkpointer, Service, merge_checkpoints


def test_two_consumers_split_partitions_and_merged_model_loses_nothing(bootstrap, names, tmp_path):
    """A second member joins while the first is consuming (rebalance); merged checkpoints = one clean pass."""
    events = weather(6000, seed=11)
    create(bootstrap, names.topic, 4)
    half = len(events) // 2
    stop = threading.Event()

    def feed(part) -> None:  # keys spread the events over the 4 partitions
        for i in range(0, len(part), 250):
            produce(bootstrap, names.topic, part[i:i + 250])
            if stop.wait(0.05):
                return

    feeder = threading.Thread(target=feed, args=(events[:half],))
    feeder.start()
    a = Service(config(bootstrap, names, tmp_path, member="a", exit_when_idle=2.0))
    run_a = start(a)
    try:
        wait_until(lambda: a.summary.events > 0, 30, "member a consuming")
        b = Service(config(bootstrap, names, tmp_path, member="b", exit_when_idle=2.0))
        run_b = start(b)
        # once both own partitions, send the second half: both must learn some of it
        wait_until(lambda: b.source is not None and b.source.owned and a.source.owned
                   and not (a.source.owned & b.source.owned), 40, "the rebalance")
        feeder.join()
        feed(events[half:])
        sa, sb = run_a.join(90), run_b.join(90)
    finally:
        stop.set()
        feeder.join()
    assert sa.learned > 0 and sb.learned > 0
    ckdir = tmp_path / "ckpt"
    merged, offsets = merge_checkpoints(ckdir)
    assert sum(offsets.values()) == len(events) == merged.n_seen
    assert_same_model(merged, clean_pass(events, "categorical"))
    # each member's checkpoint holds only what it learned
    na = Checkpointer(ckdir, "a").load().model.n_seen
    nb = Checkpointer(ckdir, "b").load().model.n_seen
    assert na + nb == len(events)


@pytest.mark.parametrize("backend", ["confluent", "kafka-python"])
def test_broker_down_and_back(s3_broker, names, tmp_path, backend):
    """The service keeps running while the broker is away, then carries on exactly (producer and
    consumer of one client library)."""
    bs = s3_broker.bootstrap
    events = weather(400, seed=13)
    create(bs, names.topic, 1)
    produce(bs, names.topic, events[:200])
    service = Service(config(bs, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=None,
                             checkpoint_every=10_000, checkpoint_interval=0.5, flush_timeout=1.0,
                             producer=backend, consumer=backend))
    run = start(service)
    try:
        wait_until(lambda: service.summary.events >= 200, 30, "first events")
        s3_broker.kill()
        # while it is down: outputs cannot be acknowledged, so checkpoints are postponed, not faked
        failures = service.metrics.checkpoint_failures
        before = failures._value.get()
        # (or nothing left to checkpoint: under load the first checkpoint may land before the kill)
        wait_until(lambda: failures._value.get() > before or not service.dirty
                   or not run.thread.is_alive(), 30, "a postponed checkpoint")
        assert run.thread.is_alive(), run.error
        s3_broker.start()  # same port, data kept
        produce(bs, names.topic, events[200:])
        wait_until(lambda: service.summary.events >= 400, 60, "events after the restart")
        wait_until(lambda: service.summary.checkpoints > 0 and not service.dirty, 30, "checkpoint after restart")
    finally:
        service.stop()
        summary = run.join(60)
    assert summary.events == 400
    ck = Checkpointer(tmp_path / "ckpt").load()
    assert ck.offsets == {f"{names.topic}:0": 400}
    assert_same_model(ck.model, clean_pass(events, "categorical"))
    # outputs are at-least-once across the broker crash: every event's prediction is there,
    # those published just before the kill included (read until they all are, or fail)
    read_topic(bs, names.output, until=has_keys(k for k, _ in events))


@pytest.mark.parametrize("backend", ["kafka-python", "confluent"])
@pytest.mark.parametrize("idempotent", [False, True])
def test_outputs_are_acknowledged_by_every_in_sync_replica(backend, idempotent):
    """acks=all whatever the idempotence setting: with acks=1 a leader that dies right after
    acknowledging loses the output while the checkpoint moves past its event."""
    from streamnb.kafka import Publisher

    pub = Publisher("127.0.0.1:1", idempotent=idempotent, backend=backend)
    try:
        assert pub.config["acks"] == "all"
    finally:
        pub.close(timeout=0)


@pytest.mark.parametrize("backend", ["kafka-python", "confluent"])
def test_idempotent_producer_is_recreated_after_a_broker_restart(memory_broker, names, backend):
    """An idempotent producer does not recover from a broker that lost its state (kafka-python
    never does, librdkafka raises a fatal error or times out): the outbox recreates it and sends
    again, so nothing is lost."""
    from streamnb.kafka import Publisher

    bs = memory_broker.bootstrap
    create(bs, names.output, 1)
    recreated = []
    pub = Publisher(bs, idempotent=True, on_recreate=lambda: recreated.append(1), backend=backend,
                    stall_timeout=2.0)
    try:
        pub.send(names.output, b"before")
        assert pub.flush(10)
        memory_broker.kill()
        memory_broker.start()  # same port; memory storage: the topic is gone
        create(bs, names.output, 1)
        for i in range(5):
            pub.send(names.output, f"after-{i}".encode())
        assert wait_until(lambda: pub.flush(2.0), 40, "messages acknowledged after the restart")
        assert pub.pending == 0
    finally:
        pub.close()
    read_topic(bs, names.output, until=has_values(f"after-{i}".encode() for i in range(5)))
    assert recreated, "the producer should have been recreated"


def test_rollback_before_the_first_checkpoint_returns_to_the_given_model(bootstrap, names, tmp_path):
    """``Service(config, model=m)``: a revocation whose checkpoint fails (disk full) before the
    first checkpoint rolls back to ``m`` as it was given, not to the object that has learned
    since, so the events read again from the start are learned once."""
    events = weather(600, seed=17)
    create(bootstrap, names.topic, 2)
    produce(bootstrap, names.topic, events)  # the keys spread them over both partitions
    given = streamnb.CategoricalNB()
    a = Service(config(bootstrap, names, tmp_path, member="a", exit_when_idle=None, checkpoint_every=10**6,
                       checkpoint_interval=3600), model=given)
    disk_full = threading.Event()
    disk_full.set()
    save = a.checkpointer.save

    def save_unless_full(*args, **kw):  # ENOSPC as a full disk raises it (tested for real in tests/reliability)
        if disk_full.is_set():
            raise OSError(errno.ENOSPC, "No space left on device")
        return save(*args, **kw)

    a.checkpointer.save = save_unless_full
    b = Service(config(bootstrap, names, tmp_path, member="b", exit_when_idle=None))
    runs = [start(a)]
    try:
        wait_until(lambda: a.summary.learned == len(events) or not runs[0].thread.is_alive(), 30,
                   "member a learning every event")
        assert a.model is given  # the first start uses the object given
        runs.append(start(b))  # a rebalance: a's partitions are revoked, its checkpoint fails
        wait_until(lambda: all(s.source is not None and s.source.owned for s in (a, b))
                   and not (a.source.owned & b.source.owned), 40, "the partitions split between a and b")
        disk_full.clear()
        # a reads its partition again from the start, b reads the other one: 600 more events
        wait_until(lambda: a.summary.events + b.summary.events >= 2 * len(events)
                   or not all(r.thread.is_alive() for r in runs), 40, "every partition read again")
    finally:
        a.stop()
        b.stop()
        summaries = [r.join(60) for r in runs]
    assert summaries[0].events + summaries[1].events == 2 * len(events)
    assert a.metrics.checkpoint_failures._value.get() >= 1
    merged, offsets = merge_checkpoints(tmp_path / "ckpt")
    assert merged.n_seen == len(events)  # not 600 + a's partition again
    assert_same_model(merged, clean_pass(events, "categorical"))


def test_confluent_source_starts_at_looked_up_offsets(bootstrap, names):
    """A start the broker must resolve (committed offset, log beginning) is looked up before
    the assignment (librdkafka would only after a retry timer): the committed offset, else
    the auto.offset.reset end; a concrete start is kept; a failed lookup leaves it logical."""
    ck = pytest.importorskip("confluent_kafka")
    from kafka import TopicPartition

    from streamnb.kafka.broker import free_port
    from streamnb.kafka.source_confluent import ConfluentSource

    create(bootstrap, names.topic)
    produce(bootstrap, names.topic, [(f"k{i}", {"i": i}) for i in range(5)])
    tp = TopicPartition(names.topic, 0)
    source = ConfluentSource(bootstrap, [names.topic], names.group, partitions=[0])
    source.connect(threading.Event(), timeout=30)
    try:
        assert source._offsets({tp: ck.OFFSET_BEGINNING}) == {tp: 0}
        assert source._offsets({tp: ck.OFFSET_STORED}) == {tp: 0}  # nothing committed: earliest
        assert source._offsets({tp: 3}) == {tp: 3}
        assert source.commit({tp: 4})
        assert source._offsets({tp: ck.OFFSET_STORED}) == {tp: 4}
        source.config["auto.offset.reset"] = "latest"  # read by the lookup only
        assert source._offsets({tp: ck.OFFSET_STORED}) == {tp: 4}  # committed: not the reset
    finally:
        source.close()
    private = ConfluentSource(bootstrap, [names.topic], None, partitions=[0], config={"auto.offset.reset": "latest"})
    private.connect(threading.Event(), timeout=30)
    try:
        # a private group has committed nothing: the reset, the end as the broker says it (the
        # log end on Kafka; on Tansu the base offset of the last batch + 1, see KAFKA_NOTES)
        end = private.consumer.get_watermark_offsets(ck.TopicPartition(names.topic, 0), timeout=10)[1]
        assert private._offsets({tp: ck.OFFSET_STORED}) == {tp: end}
    finally:
        private.close()
    dead = ConfluentSource(f"127.0.0.1:{free_port()}", [names.topic], names.group, partitions=[0])
    dead.consumer, dead.LOOKUP_TIMEOUT = ck.Consumer(dead.config), 0.3
    try:
        starts = {tp: ck.OFFSET_STORED, TopicPartition(names.topic, 1): ck.OFFSET_BEGINNING}
        assert dead._offsets(starts) == starts
    finally:
        dead.consumer.close()
