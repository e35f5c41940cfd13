"""Profiles, streams and their one-line reproductions, and the table of a run.

``STREAMNB_FUZZ=long`` selects the long profile (``make fuzz``); the short one runs in the suite.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tests.fuzz.configs import CONFIGS
from tests.fuzz.harness import Broken, Outcome, run_ops
from tests.fuzz.streams import generate


@dataclass(frozen=True)
class Profile:
    name: str
    streams: int  # per configuration, seeds 0 .. streams - 1
    events: int  # operations per stream


PROFILES = {"short": Profile("short", 3, 120), "long": Profile("long", 50, 300)}


def profile() -> Profile:
    name = os.environ.get("STREAMNB_FUZZ", "short")
    if name not in PROFILES:
        raise SystemExit(f"STREAMNB_FUZZ must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name]


def run_stream(name: str, seed: int, events: int) -> Outcome:
    config = CONFIGS[name]
    ops, probes = generate(config, seed, events)
    return run_ops(config, ops, probes)


def python_outcome(name: str, seed: int, events: int, compiled: Outcome) -> Outcome:
    """The same stream on the pure-Python path; a ``compiled-vs-python`` failure at the first
    operation whose record differs from the compiled run's."""
    from tests.naive_bayes.test_kernels import python_path

    with python_path():
        pure = run_stream(name, seed, events)
    for a, b in zip(compiled.transcript, pure.transcript):
        if a != b:
            pure.failure, pure.at = Broken("compiled-vs-python", f"compiled {a!r}, python {b!r}"), a[0]
            return pure
    if len(compiled.transcript) != len(pure.transcript) or repr(compiled.failure) != repr(pure.failure):
        pure.failure = Broken("compiled-vs-python", f"compiled {compiled.failure!r}, python {pure.failure!r}")
        pure.at = min(compiled.at or events, pure.at or events)
    return pure


def repro(name: str, seed: int, events: int, outcome: Outcome, python: bool = False) -> str:
    """The failure in one line, with the command that replays it."""
    assert outcome.failure is not None
    flag = " --compare-python" if python else ""
    env = "STREAMNB_PURE_PYTHON=1 " if os.environ.get("STREAMNB_PURE_PYTHON") else ""
    return (f"[{name} seed={seed} op={outcome.at}] {outcome.failure.oracle}: {outcome.failure.detail[:300]}\n"
            f"    replay: {env}.venv/bin/python -m tests.fuzz --config {name} --seed {seed} --events {events}{flag}")


#: configuration -> [streams, events, operations, failures], filled as the tests run
TABLE: dict[str, list[int]] = {}


def tally(name: str, outcomes: list[Outcome]) -> None:
    row = TABLE.setdefault(name, [0, 0, 0, 0])
    for out in outcomes:
        row[0] += 1
        row[1] += out.events
        row[2] += out.operations
        row[3] += out.failure is not None


def table() -> str:
    lines = [f"{'configuration':32} {'streams':>8} {'events':>9} {'operations':>11} {'failures':>9}"]
    total = [0, 0, 0, 0]
    for name, row in sorted(TABLE.items()):
        lines.append(f"{name:32} {row[0]:>8} {row[1]:>9} {row[2]:>11} {row[3]:>9}")
        total = [a + b for a, b in zip(total, row)]
    lines.append(f"{'total':32} {total[0]:>8} {total[1]:>9} {total[2]:>11} {total[3]:>9}")
    return "\n".join(lines)
