"""Where streamnb spends its time per event: learn_one and predict_proba_one.

Not a benchmark (``run_all.py`` skips it): a tool for optimizing. For GaussianNB (10 features,
2 classes) and MultinomialNB (~20 tokens, 5,000-word vocabulary) it prints

* a cProfile of each operation: the functions with the most own time (file:line of the
  ``def``), with their share of the total;
* line-level timing (``sys.settrace`` on streamnb's files only): the time between two trace
  events is charged to the streamnb line running, so time spent inside numpy, pandas or
  builtins called from a line counts for that line; the tracer's own cost per line (calibrated
  on trivial lines) is subtracted. Figures are per event and as a share of streamnb's time.

Run: ``.venv/bin/python benchmarks/profile_naive_bayes.py [--events N] [--top K]``.
"""

from __future__ import annotations

import argparse
import cProfile
import collections
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import streamnb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_naive_bayes import (  # noqa: E402
    SEED,
    dict_rows,
    gaussian_data,
    sparse_dicts,
    streamnb_origin,
    token_data,
)

PKG = str(Path(streamnb.__file__).resolve().parent)
ROOT = str(Path(PKG).parent)
# The source as imported (files may be edited while this runs): lines are quoted from here.
SOURCES = {str(p): p.read_text().splitlines() for p in Path(PKG).rglob("*.py")}


def short(path: str) -> str:
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else path.split("site-packages/")[-1]


def cprofile(work: Callable[[], None], top: int) -> None:
    prof = cProfile.Profile()
    prof.enable()
    work()
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())  # own time of everything
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    print(f"    cProfile, own time (total {total * 1e3:.0f} ms under the profiler):")
    print(f"      {'share':>6} {'own ms':>8} {'cum ms':>8} {'calls':>8}  function")
    for (file, line, func), (cc, nc, tt, ct, _) in rows:
        where = f"{short(file)}:{line}" if line else file
        print(f"      {tt / total:6.1%} {tt * 1e3:8.1f} {ct * 1e3:8.1f} {nc:8d}  {func}  {where}")


_CALIBRATION = """
def g(a, b):
    return a + b

def f(n):
    d = {"x": 1, "y": 2}
    total = 0
    for i in range(n):
        total = g(total, i)
        s = tuple(len(k) for k in d)
        if all(v > 0 for v in d.values()):
            total += s[0]
        d["x"] = i
    return total
"""


def _calibrate() -> float:
    """Seconds the tracer adds to each charged interval (subtracted from every line's time),
    measured on code with calls, generator expressions and plain lines."""
    ns: dict = {}
    exec(compile(_CALIBRATION, os.path.join(PKG, "__calibrate__.py"), "exec"), ns)
    f, n = ns["f"], 3_000
    plain = min(_plain(lambda: f(n)) for _ in range(3))
    acc, counts = _trace(lambda: f(n))
    return max(0.0, (sum(acc.values()) - plain) / sum(counts.values()))


def _plain(work: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    work()
    return time.perf_counter() - t0


def _trace(work: Callable[[], None]) -> tuple[dict, collections.Counter]:
    """Deterministic line timing: the time between two trace events inside streamnb is charged
    to the streamnb line executing (calls into numpy, pandas or builtins included). Returns the
    time and the number of intervals charged per line."""
    clock = time.perf_counter
    acc: dict = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    cur: list = [None, 0.0]

    def local(frame, event, arg):  # noqa: ANN001
        now = clock()
        if cur[0] is not None:
            acc[cur[0]] += now - cur[1]
            counts[cur[0]] += 1
        code = frame.f_code
        if event == "line":
            cur[0] = (code.co_filename, frame.f_lineno, code.co_name)
        elif event == "return":
            back = frame.f_back
            cur[0] = (
                (back.f_code.co_filename, back.f_lineno, back.f_code.co_name)
                if back is not None and back.f_code.co_filename.startswith(PKG)
                else None
            )
        cur[1] = clock()
        return local

    def call(frame, event, arg):  # noqa: ANN001
        if frame.f_code.co_filename.startswith(PKG):
            return local(frame, event, arg)
        if cur[0] is not None:  # a Python-level call outside streamnb (numpy...) costs one event
            counts[cur[0]] += 1
        return None

    sys.settrace(call)
    try:
        work()
    finally:
        sys.settrace(None)
    return acc, counts


def line_times(work: Callable[[], None], events: int, top: int, overhead: float, plain: float) -> None:
    acc, counts = _trace(work)
    cost = {k: max(0.0, t - counts[k] * overhead) for k, t in acc.items()}
    total = sum(cost.values())
    print(
        f"    line timing (settrace; {overhead * 1e9:.0f} ns tracer cost per trace event subtracted; "
        f"{total / events * 1e6:.1f} us/event charged to streamnb lines vs {plain * 1e6:.1f} plain):"
    )
    print(f"      {'share':>6} {'us/event':>8}  line")
    for key in sorted(cost, key=cost.__getitem__, reverse=True)[:top]:
        file, line, func = key
        lines = SOURCES.get(file, [])
        code = lines[line - 1].strip() if line <= len(lines) else "?"
        print(f"      {cost[key] / total:6.1%} {cost[key] / events * 1e6:8.2f}  {short(file)}:{line} ({func})  {code[:90]}")


def timed(work: Callable[[], None], events: int) -> float:
    t = min(_plain(work) for _ in range(3)) / events
    print(f"    plain run: {t * 1e6:.1f} us/event (best of 3)")
    return t


def profile(
    title: str, make: Callable[[], object], rows: list[dict], labels: list, top: int, overhead: float
) -> None:
    half = len(rows) // 2
    print(f"\n{title}")
    # learn_one: a fresh model learns the first half (re-created for each pass)
    state: dict = {}

    def learn() -> None:
        m = make()
        for x, y in zip(rows[:half], labels[:half]):
            m.learn_one(x, y)
        state["model"] = m

    learn()  # warm-up
    print("  learn_one")
    plain = timed(learn, half)
    cprofile(learn, top)
    line_times(learn, half, top, overhead, plain)

    model = state["model"]
    test = rows[half:]

    def predict() -> None:
        for x in test:
            model.predict_proba_one(x)

    predict()
    print("  predict_proba_one (model trained on the first half)")
    plain = timed(predict, len(test))
    cprofile(predict, top)
    line_times(predict, len(test), top, overhead, plain)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=6_000)
    parser.add_argument("--top", type=int, default=14)
    args = parser.parse_args()
    print(f"streamnb {streamnb.__version__} from {streamnb_origin()}")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    rng = np.random.default_rng(SEED)
    overhead = min(_calibrate() for _ in range(3))
    X, y = gaussian_data(rng, args.events, 10, 2)
    profile(
        "GaussianNB, 10 features, 2 classes",
        streamnb.GaussianNB,
        dict_rows(X, [f"x{j}" for j in range(10)]),
        y.tolist(),
        args.top,
        overhead,
    )
    vocab = [f"w{i:04d}" for i in range(5_000)]
    Xt, yt = token_data(rng, args.events, 5_000)
    profile("MultinomialNB, ~20 tokens, 5,000 words, 2 classes", streamnb.MultinomialNB,
            sparse_dicts(Xt, vocab), yt.tolist(), args.top, overhead)


if __name__ == "__main__":
    main()
