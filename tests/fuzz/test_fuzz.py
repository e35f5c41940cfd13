"""The stream fuzzer in the suite (see :mod:`tests.fuzz`): every configuration, the profile's
streams (``STREAMNB_FUZZ=long`` for the long one), every oracle; warnings are errors.

A failure prints one line per failing stream: configuration, seed, operation, oracle, and the
command that replays it. A stream stops at its first failure, so a known failure (``KNOWN``)
hides what the rest of that stream would have found.
"""

from __future__ import annotations

import functools

import pytest
from river import base as river_base

import streamnb

from tests.conftest import needs_native
from tests.fuzz.configs import CONFIGS
from tests.fuzz.harness import Outcome
from tests.fuzz.runner import profile, python_outcome, repro, run_stream, tally

PROFILE = profile()

#: (configuration, oracle) pairs the profile fails today, each naming the open bug behind it:
#: strict xfail, so that an entry turns red when its fix lands, and is then removed. None now
#: (issue 38's bugs, which the fuzzer found on the code before their fixes, are fixed).
KNOWN: dict[tuple[str, str], str] = {}


@functools.cache
def outcomes(name: str) -> list[tuple[int, Outcome]]:
    return [(seed, run_stream(name, seed, PROFILE.events)) for seed in range(PROFILE.streams)]


def per_config(names: list[str]) -> list:
    """Each configuration's tests in one group: ``pytest -n N --dist loadgroup`` (the Makefile's
    tiers) runs them in one process, where the configuration's streams (``outcomes``) run once."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"fuzz-{name}")) for name in names]


def failures(name: str, oracle: str | None = None) -> list[str]:
    return [repro(name, seed, PROFILE.events, out) for seed, out in outcomes(name)
            if out.failure is not None and (out.failure.oracle == oracle if oracle
                                            else (name, out.failure.oracle) not in KNOWN)]


def test_every_public_learner_is_fuzzed():
    """Every River classifier streamnb exports is in some configuration (alone or wrapped)."""
    exported = {n for n in streamnb.__all__ if isinstance(getattr(streamnb, n), type)
                and issubclass(getattr(streamnb, n), river_base.Classifier)}
    fuzzed = set()
    for config in CONFIGS.values():
        model = config.make()
        while model is not None:
            fuzzed.add(type(model).__name__)
            model = getattr(model, "model", None)
    assert exported <= fuzzed, exported - fuzzed


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", per_config(sorted(CONFIGS)))
def test_streams_keep_every_promise(name: str) -> None:
    tally(name, [out for _, out in outcomes(name)])
    found = failures(name)
    assert not found, "\n" + "\n".join(found)


#: Streams of the long profile that once failed (configuration, seed; 300 events), replayed in
#: every run on both paths: each names the fix it guards.
REGRESSIONS = {
    ("tan-categorical", 41): "a batch whose new feature changes kind is refused before any row",
    ("windowed-tan", 19): "a read does not decide when a window's structure is relearned",
    ("forgetful-tan-relearn1", 7): "a reloaded tree learner keeps its running sums' bits",
    ("forgetful-tan-relearn1", 14): "a copy (a refused event's undo) keeps the running sums' bits",
    ("aode", 49): "saving the running sums does not depend on a refused event having read them",
}


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name, seed", sorted(REGRESSIONS))
def test_streams_that_once_failed(name: str, seed: int) -> None:
    out = run_stream(name, seed, 300)
    assert out.failure is None, repro(name, seed, 300, out)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name, oracle", [pytest.param(name, oracle, marks=[pytest.mark.xfail(strict=True, reason=why),
                                                                          pytest.mark.xdist_group(f"fuzz-{name}")])
                                          for (name, oracle), why in sorted(KNOWN.items())])
def test_known_failures(name: str, oracle: str) -> None:
    found = failures(name, oracle)
    assert not found, "\n" + "\n".join(found)


@needs_native
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", per_config(sorted(CONFIGS)))
def test_compiled_equals_python(name: str) -> None:
    """The same streams on the pure-Python path: the same bits, errors and saved bytes."""
    found = []
    for seed, compiled in outcomes(name):
        pure = python_outcome(name, seed, PROFILE.events, compiled)
        if pure.failure is not None and pure.failure.oracle == "compiled-vs-python":
            found.append(repro(name, seed, PROFILE.events, pure, python=True))
    assert not found, "\n" + "\n".join(found)
