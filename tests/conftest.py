"""Shared test helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"


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


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)
