"""Helpers for the Kafka integration tests (imported by the tests as ``kafkatest``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamnb.kafka import Service, ServiceConfig, ensure_topics
from tests.waiting import patience, until

ROOT = Path(__file__).resolve().parents[2]

def wait_until(cond, timeout: float, what: str, interval: float = 0.05, progress=None):
    """:func:`tests.waiting.until` with the Kafka tests' argument order."""
    return until(cond, what, timeout, interval, progress)


def create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    ensure_topics(bootstrap, {topic: partitions})


def produce(bootstrap: str, topic: str, messages, partition: int | None = None) -> None:
    """Send ``(key, value)`` pairs (values: dict -> JSON, bytes as is) and wait for acks."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, enable_idempotence=False, acks=1)
    try:
        futures = []
        for key, value in messages:
            if isinstance(value, dict):
                value = json.dumps(value).encode()
            k = key.encode() if isinstance(key, str) else key
            futures.append(producer.send(topic, key=k, value=value, partition=partition))
        producer.flush()
        for f in futures:
            f.get(timeout=10)
    finally:
        producer.close()


def read_topic(bootstrap: str, topic: str, n: int = 0, timeout: float = 30.0, until=None) -> list:
    """Every record of every partition of ``topic``, read up to the log end, once at least ``n``
    records have arrived and ``until(records)`` (if given) holds; fails if that takes longer than
    ``timeout`` seconds (and waiting as long for the topic to exist). Records are sorted by
    (partition, offset).

    Reading to the end (the highwater mark of the last fetch) rather than stopping after ``n``
    records makes the result independent of how the polls happen to split the log: duplicates
    (outputs are at-least-once) are all there, and a condition on the content is checked on all
    of it.
    """
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=50,
                             auto_offset_reset="earliest")
    try:
        # the topic may be the output of a service still starting (slowly, on a busy machine)
        parts = wait_until(lambda: consumer.partitions_for_topic(topic), timeout, f"topic {topic}")
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: list = []

        def at_end() -> bool:
            for tp in tps:
                hw = consumer.highwater(tp)
                if hw is None or consumer.position(tp) < hw:
                    return False
            return True

        def done() -> bool:
            return len(out) >= n and (until is None or until(out)) and at_end()

        start = time.monotonic()
        while not done():
            if time.monotonic() - start > timeout * patience():
                got = "" if until is None else f"; condition {getattr(until, '__doc__', None) or until} not met"
                raise AssertionError(f"{len(out)} records on {topic} after {timeout} s (wanted >= {n}){got}")
            for recs in consumer.poll(200).values():
                out.extend(recs)
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def has_keys(keys):
    """A ``read_topic(until=...)`` condition: every key of ``keys`` (str or bytes) is there."""
    want = {k.encode() if isinstance(k, str) else k for k in keys}

    def check(records) -> bool:
        return want <= {r.key for r in records}

    check.__doc__ = f"all of {len(want)} keys present"
    return check


def has_values(values):
    """A ``read_topic(until=...)`` condition: every value of ``values`` (bytes) is there."""
    want = set(values)

    def check(records) -> bool:
        return want <= {r.value for r in records}

    check.__doc__ = f"all of {len(want)} values present"
    return check


def config(bootstrap: str, names, tmp_path, **kw) -> ServiceConfig:
    base = dict(bootstrap=bootstrap, input_topics=[names.topic], output_topic=names.output, group_id=names.group,
                checkpoint_dir=str(tmp_path / "ckpt"), exit_when_idle=1.5, progress=False)
    base.update(kw)
    return ServiceConfig(**base)


class Running:
    """A service running in a thread of this process."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.error: BaseException | None = None
        self.summary = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.summary = self.service.run()
        except BaseException as exc:  # noqa: BLE001
            self.error = exc

    def join(self, timeout: float = 60.0):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "service did not stop in time"
        if self.error is not None:
            raise self.error
        return self.summary


def start(service: Service) -> Running:
    return Running(service)


def cli(*args: str, **kw) -> subprocess.Popen:
    """Start ``streamnb ARGS`` in a child process (own session, so signals reach only it)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "streamnb.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def stop_process(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    proc.wait(timeout=30)
