"""Seeded stream shapes: a list of operations drawn from ``random.Random(seed)``.

An operation is plain data, printed as it is by ``python -m tests.fuzz``:

- ``("learn", x, y)``, ``("predict", x)``: one event;
- ``("learn_many", rows, labels)``, ``("predict_many", rows)``: a batch (a DataFrame of ``rows``);
- ``("unlearn", x, y)``: learn ``x``, then unlearn it;
- ``("merge", events)``: a fresh learner fed ``events``, merged in;
- ``("save_load",)``: the model replaced by its saved and loaded copy;
- ``("bad_learn", x, y)``, ``("bad_predict", x)``, ``("bad_many", rows, labels)``: an invalid
  event (an unhashable value or label), which must be rejected and change nothing.

A stream's shape is drawn first: its label type and classes (some only late, one class alone
for a long time, one vanishing), its features (some late, some vanishing, constants that start
varying, magnitudes from 1e-300 to 1e300, ints, numpy scalars), and how often values are
missing (absent, None, NaN, ``pd.NA``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tests.fuzz.configs import Config

SCALES = [1e-300, 1e-150, 1e-5, 1.0, 1.0, 1e5, 1e90, 1e300]  # beyond 1e100 is rejected
ABSENT = object()  # the key left out
MISSING = [ABSENT, None, math.nan, pd.NA]


@dataclass
class Feature:
    name: str
    kind: str  # "cat", "num", "token"
    start: int  # first event that may carry it
    end: int  # events from here on do not carry it
    vocab: list = field(default_factory=list)  # cat: values; more of them from grow_at on
    grow_at: int = 0
    extra: list = field(default_factory=list)
    scale: float = 1.0
    const_until: int = 0
    as_type: str = "float"  # num: "float", "int", "float32", "float64"


@dataclass
class Shape:
    n: int
    classes: list
    early: int  # classes[:early] only, before t_classes
    t_classes: int
    vanish: Any  # a class no longer seen from t_vanish on (or None)
    t_vanish: int
    features: list
    p_missing: float
    keys: list


def _labels(rng: random.Random, config: Config) -> list:
    if config.labels is not None:
        return list(config.labels)
    kind = rng.choice(["str", "int", "bool", "str", "int"])
    if kind == "bool":
        return [True, False]
    n = rng.randint(2, 5)
    return [f"c{i}" for i in range(n)] if kind == "str" else [i + 1 for i in range(n)]


def _vocab(rng: random.Random, kind: str, size: int, base: int = 0) -> list:
    if kind == "str":
        return [f"v{base + i}" for i in range(size)]
    if kind == "int":
        return [base + i for i in range(size)]
    return [True, False, 1, 0, "1", 2.5][base:base + size] or [f"w{base}"]


def shape(rng: random.Random, config: Config, n: int) -> Shape:
    classes = _labels(rng, config)
    rng.shuffle(classes)
    early = rng.choice([1, 1, 2, len(classes), max(1, len(classes) - 2)])
    t_classes = rng.choice([0, n // 5, n // 3, n // 2, int(n * 0.7)])
    vanish = rng.choice([None, None, classes[0]]) if len(classes) > 2 else None
    t_vanish = rng.randint(t_classes, n) if vanish is not None else n

    def late() -> tuple[int, int]:
        start = rng.choice([0, 0, rng.randrange(n)])
        end = rng.choice([n, n, rng.randint(start, n)])
        return start, end

    features: list[Feature] = []
    kinds = {"cat": ["cat"] * 3 + ["cat"], "num": ["num"] * 4, "mixed": ["cat", "cat", "num", "num", "cat", "num"],
             "dag": []}.get(config.features)
    if config.features == "dag":
        for name in ("a", "b", "c"):
            features.append(Feature(name, "cat", 0, n, _vocab(rng, "str", rng.randint(2, 3)),
                                    rng.randrange(n), _vocab(rng, "str", 2, 5)))
    elif config.features == "tokens":
        for i in range(rng.randint(4, 12)):
            start, end = late()
            features.append(Feature(f"w{i}", "token", start, end, scale=rng.choice([1.0, 1.0, 0.5, 1e-300, 1e300, 3.0])))
    else:
        assert kinds is not None
        for i, kind in enumerate(kinds):
            start, end = late()
            if kind == "cat":
                vkind = "str" if config.features == "mixed" else rng.choice(["str", "int", "bool"])
                features.append(Feature(f"f{i}", "cat", start, end, _vocab(rng, vkind, rng.randint(1, 3)),
                                        rng.choice([0, rng.randrange(n)]), _vocab(rng, vkind, 2, 3)))
            else:
                features.append(Feature(f"f{i}", "num", start, end, scale=rng.choice(SCALES),
                                        const_until=rng.choice([0, 0, rng.randrange(n)]),
                                        as_type=rng.choice(["float", "float", "int", "float32", "float64"])))
    keys = ["u1", "u2", "u3", None, ABSENT] if config.key else []
    return Shape(n, classes, early, t_classes, vanish, t_vanish, features, rng.choice([0.0, 0.05, 0.2]), keys)


def _number(rng: random.Random, f: Feature, t: int, c: int) -> Any:
    if t < f.const_until:
        v = f.scale * 3.0
    else:
        v = f.scale * (c + 1 + rng.gauss(0.0, 1.0))
    if not math.isfinite(v):
        v = math.copysign(1e308, v)
    if f.as_type == "int" and abs(v) < 1e18:
        return int(round(v / f.scale)) if f.scale < 1 else int(round(v))
    if f.as_type == "float32" and abs(v) < 3e38:
        return np.float32(v)
    if f.as_type == "float64":
        return np.float64(v)
    return v


def event(rng: random.Random, s: Shape, config: Config, t: int) -> tuple[dict, Any]:
    pool = s.classes[:s.early] if t < s.t_classes else s.classes
    if t >= s.t_vanish and len(pool) > 1:
        pool = [c for c in pool if c is not s.vanish] or pool
    y = rng.choice(pool)
    c = s.classes.index(y)
    x: dict[Any, Any] = {}
    for f in s.features:
        if not f.start <= t < f.end:
            continue
        if f.kind == "token":
            if rng.random() < 0.35 + 0.3 * ((c + int(f.name[1:])) % 2):
                count = rng.choice([1, 1, 2, 3]) * f.scale
                x[f.name] = int(count) if count == int(count) and count < 1e18 else count
            continue
        if rng.random() < s.p_missing:
            missing = rng.choice(MISSING)
            if missing is not ABSENT:
                x[f.name] = missing
            continue
        if f.kind == "cat":
            vocab = f.vocab + (f.extra if t >= f.grow_at else [])
            x[f.name] = vocab[(c + rng.randrange(2)) % len(vocab)] if rng.random() < 0.8 else rng.choice(vocab)
        else:
            x[f.name] = _number(rng, f, t, c)
    if s.keys:
        key = rng.choice(s.keys)
        if key is not ABSENT:
            x[config.key] = key
    return x, y


def _bad(rng: random.Random, x: dict, y: Any, config: Config, label: bool = True) -> tuple[dict, Any]:
    bad = dict(x)
    if label and rng.random() < 0.3:
        return bad, [y]  # an unhashable label
    names = [k for k in bad if k != config.key] or ["f0"]
    bad[rng.choice(names)] = rng.choice([[1, 2], {"k": 1}, {3}])
    return bad, y


def generate(config: Config, seed: int, n: int) -> tuple[list[tuple], list[dict]]:
    """``n`` operations of one stream of ``config``'s kind, and the probe events its oracles
    compare predictions on."""
    rng = random.Random(seed)
    s = shape(rng, config, n)
    probes = [event(rng, s, config, rng.randrange(n))[0] for _ in range(3)] + [{}]
    ops: list[tuple] = []
    for t in range(n):
        r = rng.random()
        if r < 0.50:
            ops.append(("learn", *event(rng, s, config, t)))
        elif r < 0.66:
            ops.append(("predict", event(rng, s, config, t)[0]))
        elif r < 0.74:
            rows = [event(rng, s, config, t) for _ in range(rng.randint(1, 6))]
            ops.append(("learn_many", [x for x, _ in rows], [y for _, y in rows]))
        elif r < 0.78:
            ops.append(("predict_many", [event(rng, s, config, t)[0] for _ in range(rng.randint(1, 4))]))
        elif r < 0.83:
            ops.append(("unlearn", *event(rng, s, config, t)))
        elif r < 0.87:
            ops.append(("merge", [event(rng, s, config, t) for _ in range(rng.randint(1, 12))]))
        elif r < 0.90:
            ops.append(("save_load",))
        elif r < 0.95:
            ops.append(("bad_learn", *_bad(rng, *event(rng, s, config, t), config)))
        elif r < 0.97:
            ops.append(("bad_predict", _bad(rng, event(rng, s, config, t)[0], None, config, label=False)[0]))
        else:
            rows = [event(rng, s, config, t) for _ in range(rng.randint(1, 4))]
            bad = _bad(rng, *rows[-1], config)
            ops.append(("bad_many", [x for x, _ in rows[:-1]] + [bad[0]], [y for _, y in rows[:-1]] + [bad[1]]))
    return ops, probes
