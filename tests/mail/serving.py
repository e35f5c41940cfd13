"""What the tests of ``streamnb mail serve --milter`` behind a real MTA share: the daemon (one
per test module, on a milter port, rejecting above spamicity 0.99999) and the messages they
submit. A module imports the fixtures ``daemon`` and ``milter_port`` from here; the MTA
fixtures of ``tests/mail/conftest.py`` pass mail to that ``milter_port``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mailserve.daemon import Daemon, rejecting_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with rejecting_daemon(tmp_path_factory.mktemp("serve")) as d:
        yield d


@pytest.fixture(scope="module")
def milter_port(daemon: Daemon) -> int:
    return daemon.ports["milter"]


def text(subject: str, words: list[str], forged: str = "") -> str:
    """A message to alice@mail.test (``forged``: header lines a sender added)."""
    return (f"From: bob@example.org\r\nTo: alice@mail.test\r\nSubject: {subject}\r\n{forged}\r\n"
            f"{' '.join(words)}\r\n")  # fmt: skip
