"""Fixtures of the mail tests: Postfix installed from Debian's packages (once per session), and a
private Postfix per test module passing mail to that module's milter (its ``milter_port``); the same
for Sendmail, whose packages are unpacked into a cache directory rather than installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apt import required
from tests.mail.exim import exim_version, install_exim
from tests.mail.postfix import PrivatePostfix, install_postfix, postfix_version, running_postfix
from tests.mail.sendmail import PrivateSendmail, install_sendmail, running_sendmail, sendmail_version


@pytest.fixture(scope="session")
def postfix_installed() -> str:
    """The installed Postfix's version, installing it first if needed (where impossible the
    tests skip, and fail in CI: :func:`tests.apt.required`)."""
    seconds = required("Postfix", install_postfix)
    version = postfix_version()
    if seconds:
        print(f"installed Postfix {version} in {seconds:.1f} s")
    return version


@pytest.fixture(scope="module")
def postfix(postfix_installed: str, milter_port: int) -> Iterator[PrivatePostfix]:
    """A private Postfix whose ``smtpd_milters`` is ``inet:127.0.0.1:<milter_port>`` (a fixture
    each module using this one defines), ``milter_default_action = tempfail``."""
    with running_postfix(milter_port) as instance:
        yield instance


@pytest.fixture(scope="session")
def sendmail_install() -> Path:
    """Debian's Sendmail packages unpacked into a cache directory (not installed: they conflict
    with Postfix), fetching them first if needed (where impossible the tests skip, and fail in
    CI: :func:`tests.apt.required`)."""
    root, seconds = required("Sendmail", install_sendmail)
    if seconds:
        print(f"Sendmail {sendmail_version(root)} ready in {seconds:.1f} s (fetched what was missing)")
    return root


@pytest.fixture(scope="module")
def sendmail(sendmail_install: Path, milter_port: int) -> Iterator[PrivateSendmail]:
    """A private Sendmail whose milter is ``inet:<milter_port>@127.0.0.1`` with ``F=T`` (mail
    waits while the filter is down), as docs/mail.md configures it."""
    with running_sendmail(sendmail_install, milter_port) as instance:
        yield instance


@pytest.fixture(scope="session")
def exim_install() -> Path:
    """Debian's exim4-daemon-heavy unpacked into a cache directory (not installed: it conflicts
    with Postfix), fetching it first if needed (where impossible the tests skip, and fail in CI:
    :func:`tests.apt.required`)."""
    root, seconds = required("Exim", install_exim)
    if seconds:
        print(f"Exim {exim_version(root)} ready in {seconds:.1f} s (fetched what was missing)")
    return root
