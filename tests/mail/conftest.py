"""Fixtures of the mail tests: Postfix installed from Debian's packages (once per session), and a
private Postfix per test module passing mail to that module's milter (its ``milter_port``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.mail.postfix import (PostfixUnavailable, PrivatePostfix, install_postfix, postfix_version,
                                running_postfix)


@pytest.fixture(scope="session")
def postfix_installed() -> str:
    """The installed Postfix's version, installing it first if needed.

    Where it cannot be installed (not root, no apt-get) the tests skip, except in CI
    (``CI=true``), where they fail: CI must run them.
    """
    try:
        seconds = install_postfix()
    except PostfixUnavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Postfix tests: {err}")
        pytest.skip(str(err))
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
