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

ROOT = Path(__file__).resolve().parents[2]

def wait_until(cond, timeout: float, what: str, interval: float = 0.05):
    """Poll ``cond`` until true or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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


def read_topic(bootstrap: str, topic: str, n: int, timeout: float = 30.0) -> list:
    """The first ``n`` records of every partition of ``topic`` (fails if fewer arrive in time)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=50,
                             auto_offset_reset="earliest")
    try:
        parts = wait_until(lambda: consumer.partitions_for_topic(topic), 10, f"topic {topic}")
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: list = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            for recs in consumer.poll(200).values():
                out.extend(recs)
        assert len(out) >= n, f"only {len(out)} of {n} records arrived on {topic}"
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


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
