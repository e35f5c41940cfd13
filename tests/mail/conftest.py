"""Fixtures of the mail tests: Postfix installed from Debian's packages (once per session)."""

from __future__ import annotations

import os

import pytest

from tests.mail.postfix import PostfixUnavailable, install_postfix, postfix_version


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
