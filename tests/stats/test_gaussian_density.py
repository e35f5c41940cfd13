"""The normal log-density (streamnb/stats/gaussian_density.py), run as plain Python and compiled:
the same bits, and its three forms (one term, an event's sum, arrays) the same operations."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from streamnb import kernels
from streamnb.stats import gaussian_density as source

from tests.conftest import needs_native

BUILT = kernels.compiled(source)
MODULES = [pytest.param(source, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip


def cases(n: int = 500) -> list[tuple[float, float]]:
    """``(d, var)`` over many magnitudes, with exact zeros."""
    rng = random.Random(7)
    out = [(0.0, 1.0), (0.0, 1e-300), (1e100, 1e-300), (-3.0, 4.0)]
    for _ in range(n):
        d = rng.choice([0.0, rng.gauss(0.0, 1.0) * 10.0 ** rng.randint(-100, 100)])
        out.append((d, abs(rng.gauss(0.0, 1.0)) * 10.0 ** rng.randint(-300, 300) or 1.0))
    return out


def test_log_2pi():
    assert source.LOG_2PI == math.log(2 * math.pi)


def test_the_normal_log_density():
    assert source.log_density(0.0, 1.0) == -0.5 * math.log(2 * math.pi)
    assert source.log_density(3.0, 4.0) == pytest.approx(math.log(math.exp(-9.0 / 8.0) / math.sqrt(8.0 * math.pi)),
                                                         rel=1e-15)


@pytest.mark.parametrize("module", MODULES)
def test_one_term_and_the_sum_and_the_arrays_are_the_same_operations(module):
    got = cases()
    with np.errstate(over="ignore"):  # d * d / var beyond the largest float: -inf, as in plain floats
        for d, var in got:
            one = module.log_density(d, var)
            assert module.log_density_sum(1, math.log(var), d * d / var) == one
            assert float(source.log_densities(np.array([d]), var, math.log(var))[0]) == one
        d, var = np.array([c[0] for c in got]), np.array([c[1] for c in got])
        assert source.log_densities(d, var, np.array([math.log(v) for v in var.tolist()])).tolist() == [
            module.log_density(a, b) for a, b in got]


@needs_native
def test_compiled_and_plain_give_the_same_bits():
    for d, var in cases():
        assert BUILT.log_density(d, var) == source.log_density(d, var)
        assert BUILT.log_density_sum(3, math.log(var), d * d / var) == source.log_density_sum(3, math.log(var),
                                                                                              d * d / var)
