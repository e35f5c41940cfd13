"""Reliability tests: hostile input, faults, safe state.

Tests marked ``slow`` (the 100,000-message fuzz, the 20-kill run) are skipped unless selected
with ``-m slow`` or ``STREAMNB_SLOW=1``, so ``make test`` stays fast. The Kafka fixtures are the
ones of ``tests/kafka`` (an embedded Tansu broker on 127.0.0.1, fresh names per test).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

KAFKA_TESTS = Path(__file__).resolve().parents[1] / "kafka"
sys.path.insert(0, str(KAFKA_TESTS))  # kafkatest, test_exactly_once helpers

from tests.kafka.conftest import memory_broker, names, s3_broker  # noqa: E402,F401


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long reliability run; only with -m slow or STREAMNB_SLOW=1")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("STREAMNB_SLOW") or "slow" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or STREAMNB_SLOW=1")
    here = Path(__file__).parent
    for item in items:
        if "slow" in item.keywords and here in Path(str(item.fspath)).parents:
            item.add_marker(skip)
