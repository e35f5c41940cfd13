"""One live instance per member name in the kafka: and s3:// stores (a lease, streamnb.stores.lease):
a second live instance is refused at start, a crashed holder's name is taken after its lease,
a replaced holder writes no more checkpoints, and of two racing takers the first wins."""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest
from kafkatest import cli, create, produce, stop_process, wait_until
from test_exactly_once import weather
from test_state_stores import trained

from streamnb.kafka import open_store
from streamnb.stores.checkpoints import KafkaStore
from streamnb.stores.lease import Lease, MemberInUseError


@pytest.fixture(params=["kafka", "s3"])
def url(request, bootstrap):
    if request.param == "kafka":
        return f"kafka:lease-{uuid.uuid4().hex[:10]}"
    return request.getfixturevalue("s3_url")


def acquire_while_holder_renews(second, holder, timeout: float = 30.0) -> list[BaseException]:
    """``second.acquire()`` in a thread while ``holder`` renews as the service loop does; the
    errors it raised."""
    errors: list[BaseException] = []

    def take() -> None:
        try:
            second.acquire()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=take)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        holder.keep_alive()
        thread.join(0.05)
    assert not thread.is_alive(), "acquire did not return"
    return errors


def test_a_second_live_instance_is_refused_and_a_released_name_is_free(url, bootstrap):
    first = open_store(url, "m", bootstrap, lease=3.0)
    second = open_store(url, "m", bootstrap, lease=3.0)
    third = open_store(url, "m", bootstrap, lease=3.0)
    try:
        first.acquire()
        assert first.save(trained(10), {"in:0": 10}) == 1
        errors = acquire_while_holder_renews(second, first)
        assert len(errors) == 1 and isinstance(errors[0], MemberInUseError), errors
        message = str(errors[0])
        assert f"member name 'm' in {first.url} is held by another instance ({first.lease.instance}" in message
        assert "give each its own" in message
        assert second.lease is not None and not second.lease.held
        assert first.lease.renewals >= 1  # the renewal is what refused the second
        assert first.save(trained(20), {"in:0": 20}) == 2  # the holder goes on
        first.release()
        third.acquire()  # a released name is free at once
        got = third.lease_of("m")
        assert got is not None and (got.instance, got.prev, got.released) == (third.lease.instance,
                                                                                first.lease.instance, False)
        ck = third.load()
        assert ck is not None and (ck.id, ck.offsets) == (2, {"in:0": 20})
        assert third.save(trained(30), {"in:0": 30}) == 3
    finally:
        for s in (first, second, third):
            s.release()


def test_a_stalled_holder_is_replaced_after_its_lease_and_writes_no_more(url, bootstrap):
    old = open_store(url, "m", bootstrap, lease=1.0)
    new = open_store(url, "m", bootstrap, lease=1.0)
    reader = open_store(url, "reader", bootstrap)
    try:
        old.acquire()
        old.save(trained(10), {"in:0": 10})
        new.acquire()  # old renews nothing (stalled or killed): new waits at most 1 s, then takes the name
        got = new.lease_of("m")
        assert got is not None and (got.instance, got.prev) == (new.lease.instance, old.lease.instance)
        assert new.load().offsets == {"in:0": 10}
        new.save(trained(20), {"in:0": 20})
        with pytest.raises(MemberInUseError, match="was taken over by another instance"):
            old.save(trained(30), {"in:0": 30})  # the old holder wakes up: its checkpoint is refused
        with pytest.raises(MemberInUseError, match="was taken over"):
            old.keep_alive()  # ... and the service loop stops
        ck = reader.newest("m")
        assert ck is not None and (ck.id, ck.offsets) == (2, {"in:0": 20})
    finally:
        for s in (old, new, reader):
            s.release()
    assert reader.lease_of("m").released  # type: ignore[attr-defined]


def test_kafka_readers_ignore_a_replaced_holders_late_checkpoint(bootstrap):
    """The fencing token: the records of an instance that no longer holds the member's lease (its
    check passed just before the takeover) are never read, though they reuse its successor's
    checkpoint id and so its keys."""
    topic = f"lease-{uuid.uuid4().hex[:10]}"
    old, new = KafkaStore(bootstrap, topic, "m", lease=1.0), KafkaStore(bootstrap, topic, "m", lease=1.0)
    try:
        old.acquire()
        old.save(trained(10), {"in:0": 10})
        new.acquire()
        new.save(trained(20), {"in:0": 20})
        old.lease.held = True  # as if its last check had passed before the takeover
        old.lease.renew = lambda: None  # type: ignore[method-assign]
        assert old.save(trained(30), {"in:0": 30}) == 2  # new's id: the same chunk and manifest keys
        reader = KafkaStore(bootstrap, topic, "reader")
        try:
            ck = reader.newest("m")
            assert ck is not None and (ck.id, ck.offsets) == (2, {"in:0": 20})
            assert reader.claims() == {"in:0": 20}
        finally:
            reader.release()
    finally:
        old.release()
        new.release()


def test_kafka_of_two_takers_of_an_expired_lease_the_first_in_the_log_wins(bootstrap):
    topic = f"lease-{uuid.uuid4().hex[:10]}"
    stores = [KafkaStore(bootstrap, topic, "m", lease=5.0) for _ in range(3)]
    a, b, c = stores
    try:
        a_lease = Lease("a", time.time() - 60, 5.0)  # expired a minute ago
        assert a._swap_lease(a_lease, None)
        assert b.lease_of("m") == c.lease_of("m") == a_lease  # both read the expired lease ...
        b_lease, c_lease = Lease("b", time.time(), 5.0, prev="a"), Lease("c", time.time(), 5.0, prev="a")
        assert b._swap_lease(b_lease, a_lease)  # ... b's takeover is first in the log
        assert not c._swap_lease(c_lease, a_lease)  # c's names a holder that no longer is one
        fresh = KafkaStore(bootstrap, topic, "reader")
        try:
            assert fresh.lease_of("m") == c.lease_of("m") == a.lease_of("m") == b_lease
        finally:
            fresh.release()
    finally:
        for s in stores:
            s.release()


def test_two_service_processes_with_one_member(bootstrap, names):
    """The second `streamnb run` of a member is refused (exit 3, a clear message) while the first
    runs on and learns; after the first stops, a new one starts at once."""
    create(bootstrap, names.topic)
    url = f"kafka:state-{names.group}"
    args = ["run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
            "--group-id", names.group, "--member", "m", "--state", url, "--state-lease", "4",
            "--model", "categorical", "--checkpoint-interval", "0.3", "--log-level", "warning"]
    reader = KafkaStore(bootstrap, url[6:], "reader")
    first = cli(*args)
    procs = [first]
    try:
        wait_until(lambda: reader.lease_of("m") is not None or first.poll() is not None, 60, "the first's lease")
        assert first.poll() is None, first.communicate()[0]
        held = reader.lease_of("m")
        second = cli(*args)
        procs.append(second)
        out = second.communicate(timeout=60)[0]
        assert second.returncode == 3, out
        assert f"member name 'm' in {url} is held by another instance ({held.instance}" in out
        assert first.poll() is None  # the holder runs on ...
        events = weather(60, seed=3)
        produce(bootstrap, names.topic, events)

        def learned():
            ck = reader.newest("m")
            return ck is not None and ck.model.n_seen == len(events)
        wait_until(lambda: learned() or first.poll() is not None, 60, "the first to learn every event")  # ... and learns
        stop_process(first, signal.SIGTERM)
        assert first.returncode == 0, first.communicate()[0]
        assert reader.lease_of("m").released
        third = cli(*args)
        procs.append(third)
        wait_until(lambda: third.poll() is not None or not reader.lease_of("m").released, 60, "the third's lease")
        assert third.poll() is None, third.communicate()[0]
        assert reader.lease_of("m").prev == held.instance
    finally:
        for p in procs:
            stop_process(p)
        reader.release()


@pytest.mark.parametrize("value", [b"", b"{", b"[]", b'{"format": "streamnb-state-lease", "version": 2}',
                                   b'{"format": "streamnb-state-lease", "version": 1, "instance": "a", "time": 1,'
                                   b' "ttl": 0, "prev": null, "released": false}',
                                   b'{"format": "streamnb-state-lease", "version": 1, "instance": "a", "time": NaN,'
                                   b' "ttl": 5, "prev": null, "released": false}',
                                   b'{"format": "streamnb-state-lease", "version": 1, "instance": "", "time": 1,'
                                   b' "ttl": 5, "prev": null, "released": false}',
                                   b" " * 5000])
def test_a_malformed_lease_record_is_not_a_lease(value):
    assert Lease.from_bytes(value) is None
    good = Lease("a", 1.5, 5.0, "z")
    assert Lease.from_bytes(good.to_bytes("m")) == good


@pytest.mark.parametrize("lease", [0.0, -1.0, float("inf"), float("nan")])
def test_a_lease_must_be_a_positive_number_of_seconds(bootstrap, lease):
    from streamnb.kafka import ServiceConfig

    with pytest.raises(ValueError, match="state_lease must be > 0"):
        ServiceConfig(bootstrap, ["in"], "out", state="kafka:st", state_lease=lease)
    with pytest.raises(ValueError, match="lease must be > 0"):
        open_store("kafka:st", "m", bootstrap, lease=lease).acquire()
