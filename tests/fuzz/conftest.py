"""The fuzzer's table (configuration, streams, events, operations, failures) after a run."""

from __future__ import annotations

import pytest

from tests.fuzz.runner import TABLE, profile, table


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TABLE:
        terminalreporter.section(f"stream fuzzer, {profile().name} profile")
        terminalreporter.write_line(table())
