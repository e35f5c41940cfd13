"""Naive Bayes side by side: streamnb vs River vs scikit-learn, same data, one run.

What is timed (every library on the same seeded synthetic data):

* ``GaussianNB`` with 10 / 50 numeric features and 2 / 5 classes, and ``MultinomialNB`` on
  ~20-token messages drawn (Zipf-like) from a 5,000-word vocabulary, 2 classes;
* ``learn_one`` and ``predict_proba_one`` per event on dicts (microseconds per event):
  River vs streamnb; scikit-learn has no per-event API, its ``partial_fit`` / ``predict_proba``
  on 1-row inputs is shown for information only (marked ``*``);
* ``learn_many`` and ``predict_proba_many`` on 1,000-row batches (rows per second): streamnb and
  River take pandas DataFrames, scikit-learn ``partial_fit`` / ``predict_proba`` the numpy array
  (Gaussian) or a scipy.sparse CSR matrix (multinomial).

Ratios are speed-ups of streamnb: ``> 1`` means streamnb is faster. Each figure is the best of
``--repeats`` timed runs after a warm-up (``time.perf_counter``, garbage collector paused while
timing). The end of the output checks the targets of the performance issue and prints PASS or
MISS with the measured ratio: speed is measured and reported, never asserted.

Run: ``make bench`` (all benchmarks) or ``.venv/bin/python benchmarks/bench_naive_bayes.py``
(``--quick`` for a smoke run with small sizes).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import river
import scipy
import scipy.sparse as sp
import sklearn
from river import naive_bayes as river_nb
from sklearn import naive_bayes as sk_nb

import streamnb

# River's multinomial predict_proba_many inserts columns one by one: pandas complains.
warnings.simplefilter("ignore", category=pd.errors.PerformanceWarning)

SEED = 20240601
BATCH = 1_000


# -- timing -----------------------------------------------------------------------------------
def best_time(setup: Callable[[], Any], work: Callable[[Any], Any], repeats: int) -> float:
    """Best wall time (seconds) of ``work(setup())`` over ``repeats`` runs plus one warm-up."""
    times = []
    for i in range(repeats + 1):
        state = setup()
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            work(state)
            t = time.perf_counter() - t0
        finally:
            gc.enable()
        if i:  # the first run is the warm-up
            times.append(t)
    return min(times)


@dataclass
class Row:
    """One operation of one configuration: seconds per unit for each library."""

    model: str
    config: str
    op: str
    per_event: bool  # True: microseconds per event; False: rows per second
    snb: float
    river: float | None
    sk: float | None
    sk_info: bool = False  # scikit-learn figure shown for information only

    def shown(self, sec_per_unit: float | None) -> str:
        if sec_per_unit is None:
            return "-"
        if self.per_event:
            return f"{sec_per_unit * 1e6:,.1f}"
        return f"{1.0 / sec_per_unit:,.0f}"

    def ratio(self, other: float | None) -> float | None:
        return None if other is None else other / self.snb


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        r, s = row.ratio(row.river), row.ratio(row.sk)
        print(
            f"  {row.op:<20} streamnb {row.shown(row.snb):>11}  River {row.shown(row.river):>11}"
            f"  sklearn {row.shown(row.sk):>11}{'*' if row.sk_info else ' '}"
            f"  x{_fmt_ratio(r)} vs River  x{_fmt_ratio(s)} vs sklearn",
            flush=True,
        )


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}" if r < 100 else f"{r:.0f}"


# -- data -------------------------------------------------------------------------------------
def gaussian_data(rng: np.random.Generator, n: int, d: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of ``d`` features, ``c`` overlapping Gaussian classes (unequal priors)."""
    means = rng.normal(0.0, 0.4, size=(c, d))
    scales = rng.uniform(0.5, 2.0, size=(c, d))
    prior = rng.dirichlet(np.full(c, 5.0))
    y = rng.choice(c, size=n, p=prior)
    X = means[y] + scales[y] * rng.normal(size=(n, d))
    return X, y


def token_data(
    rng: np.random.Generator, n: int, vocab_size: int, n_classes: int = 2, length: int = 20
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``n`` messages of about ``length`` tokens, Zipf-like per class, as a CSR count matrix."""
    ranks = np.arange(1, vocab_size + 1)
    base = 1.0 / (ranks + 2.7) ** 1.1  # Zipf-Mandelbrot
    base /= base.sum()
    orders = [np.arange(vocab_size)]
    for _ in range(1, n_classes):  # each class reshuffles 30% of the ranks
        order = np.arange(vocab_size)
        moved = rng.choice(vocab_size, size=int(0.3 * vocab_size), replace=False)
        order[moved] = rng.permutation(moved)
        orders.append(order)
    y = rng.choice(n_classes, size=n, p=[0.6] + [0.4 / (n_classes - 1)] * (n_classes - 1))
    lengths = 1 + rng.poisson(length - 1, size=n)
    draws = rng.choice(vocab_size, size=int(lengths.sum()), p=base)
    cls = np.repeat(y, lengths)
    tokens = np.stack(orders)[cls, draws]
    rows = np.repeat(np.arange(n), lengths)
    X = sp.csr_matrix((np.ones(len(tokens)), (rows, tokens)), shape=(n, vocab_size))
    X.sum_duplicates()
    return X, y


def dict_rows(X: np.ndarray, names: list[str]) -> list[dict]:
    return [dict(zip(names, r)) for r in X.tolist()]


def sparse_dicts(X: sp.csr_matrix, names: list[str]) -> list[dict]:
    out = []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        out.append({names[j]: int(v) for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())})
    return out


# -- agreement --------------------------------------------------------------------------------
def proba_one_matrix(model: Any, rows: list[dict], classes: list) -> np.ndarray:
    return np.array([[model.predict_proba_one(x).get(k, np.nan) for k in classes] for x in rows])


def agreement(label: str, snb: np.ndarray, others: dict[str, np.ndarray]) -> str:
    parts = [f"|streamnb - {name}| max {np.nanmax(np.abs(snb - p)):.1e}" for name, p in others.items()]
    return f"{label}: " + ", ".join(parts)


# -- benchmarks -------------------------------------------------------------------------------
@dataclass
class Sizes:
    learn_one: int = 4_000  # events timed per learn_one run
    predict_one: int = 2_000  # events timed per predict_proba_one run
    sk_one: int = 200  # 1-row scikit-learn calls (information only)
    train: int = 10_000  # events of the trained models used for prediction
    learn_batches: int = 10  # 1,000-row batches per learn_many run
    predict_batches: int = 5  # 1,000-row batches per predict_proba_many run
    mn_learn_batches: int = 4  # multinomial: 1,000 x 5,000 batches are heavier
    mn_predict_batches: int = 3
    repeats: int = 5


def bench_gaussian(res: Results, rng: np.random.Generator, d: int, c: int, z: Sizes) -> None:
    name, config = "GaussianNB", f"{d}f/{c}c"
    print(f"\nGaussianNB, {d} features, {c} classes", flush=True)
    names = [f"x{j}" for j in range(d)]
    classes = list(range(c))
    n_batch_rows = BATCH * max(z.learn_batches, z.predict_batches)
    X, y = gaussian_data(rng, z.train + z.predict_one + n_batch_rows, d, c)
    X_train, y_train = X[: z.train], y[: z.train]
    X_test = X[z.train : z.train + z.predict_one]
    X_bat, y_bat = X[z.train + z.predict_one :], y[z.train + z.predict_one :]
    train_rows, test_rows = dict_rows(X_train, names), dict_rows(X_test, names)
    y_list = y_train.tolist()
    learn_rows, learn_y = train_rows[: z.learn_one], y_list[: z.learn_one]

    # learn_one
    def learn_one(model: Any) -> None:
        for x, label in zip(learn_rows, learn_y):
            model.learn_one(x, label)

    t_snb = best_time(streamnb.GaussianNB, learn_one, z.repeats) / z.learn_one
    t_riv = best_time(river_nb.GaussianNB, learn_one, z.repeats) / z.learn_one

    def sk_setup() -> sk_nb.GaussianNB:
        m = sk_nb.GaussianNB()
        m.partial_fit(X_train[:1], y_train[:1], classes=classes)
        return m

    def sk_learn_one(m: sk_nb.GaussianNB) -> None:
        for i in range(1, z.sk_one + 1):
            m.partial_fit(X_train[i : i + 1], y_train[i : i + 1])

    t_sk = best_time(sk_setup, sk_learn_one, z.repeats) / z.sk_one
    res.add(Row(name, config, "learn_one", True, t_snb, t_riv, t_sk, sk_info=True))

    # trained models (untimed): the same stream for every library
    snb, riv = streamnb.GaussianNB(), river_nb.GaussianNB()
    for x, label in zip(train_rows, y_list):
        snb.learn_one(x, label)
        riv.learn_one(x, label)
    sk = sk_nb.GaussianNB().fit(X_train, y_train)  # streamnb equals `fit` (see GaussianNB docs)

    # predict_proba_one
    def predict_one(model: Any) -> None:
        for x in test_rows:
            model.predict_proba_one(x)

    t_snb = best_time(lambda: snb, predict_one, z.repeats) / z.predict_one
    t_riv = best_time(lambda: riv, predict_one, z.repeats) / z.predict_one

    def sk_predict_one(m: sk_nb.GaussianNB) -> None:
        for i in range(z.sk_one):
            m.predict_proba(X_test[i : i + 1])

    t_sk = best_time(lambda: sk, sk_predict_one, z.repeats) / z.sk_one
    res.add(Row(name, config, "predict_proba_one", True, t_snb, t_riv, t_sk, sk_info=True))

    # learn_many on 1,000-row batches
    frames = [
        pd.DataFrame(X_bat[i * BATCH : (i + 1) * BATCH], columns=names) for i in range(z.learn_batches)
    ]
    labels = [pd.Series(y_bat[i * BATCH : (i + 1) * BATCH]) for i in range(z.learn_batches)]
    arrays = [X_bat[i * BATCH : (i + 1) * BATCH] for i in range(z.learn_batches)]
    arr_y = [y_bat[i * BATCH : (i + 1) * BATCH] for i in range(z.learn_batches)]
    n_rows = BATCH * z.learn_batches

    def learn_many(model: Any) -> None:
        for Xb, yb in zip(frames, labels):
            model.learn_many(Xb, yb)

    def sk_learn_many(m: sk_nb.GaussianNB) -> None:
        for i, (Xb, yb) in enumerate(zip(arrays, arr_y)):
            if i == 0:
                m.partial_fit(Xb, yb, classes=classes)
            else:
                m.partial_fit(Xb, yb)

    t_snb = best_time(streamnb.GaussianNB, learn_many, z.repeats) / n_rows
    t_riv = best_time(river_nb.GaussianNB, learn_many, z.repeats) / n_rows
    t_sk = best_time(sk_nb.GaussianNB, sk_learn_many, z.repeats) / n_rows
    res.add(Row(name, config, "learn_many", False, t_snb, t_riv, t_sk))

    # predict_proba_many on 1,000-row batches, trained models
    p_frames = [
        pd.DataFrame(X_bat[i * BATCH : (i + 1) * BATCH], columns=names) for i in range(z.predict_batches)
    ]
    p_arrays = [X_bat[i * BATCH : (i + 1) * BATCH] for i in range(z.predict_batches)]
    n_rows = BATCH * z.predict_batches

    def predict_many(model: Any) -> None:
        for Xb in p_frames:
            model.predict_proba_many(Xb)

    def sk_predict_many(m: sk_nb.GaussianNB) -> None:
        for Xb in p_arrays:
            m.predict_proba(Xb)

    t_snb = best_time(lambda: snb, predict_many, z.repeats) / n_rows
    t_riv = best_time(lambda: riv, predict_many, z.repeats) / n_rows
    t_sk = best_time(lambda: sk, sk_predict_many, z.repeats) / n_rows
    res.add(Row(name, config, "predict_proba_many", False, t_snb, t_riv, t_sk))

    # agreement on a few rows (same training stream; sklearn `fit`)
    few = test_rows[:5]
    p_snb = proba_one_matrix(snb, few, classes)
    one = agreement(
        "one  ", p_snb, {"River": proba_one_matrix(riv, few, classes), "sklearn": sk.predict_proba(X_test[:5])}
    )
    few_df = p_frames[0].iloc[:5]
    many = agreement(
        "many ",
        snb.predict_proba_many(few_df)[classes].to_numpy(),
        {
            "River": riv.predict_proba_many(few_df)[classes].to_numpy(),
            "sklearn": sk.predict_proba(p_arrays[0][:5]),
        },
    )
    print(f"  agreement on 5 rows, models learned on the same {z.train:,} events "
          "(River adds 1e-9 to each density; sklearn `fit`, not partial_fit):")
    print(f"    {one}\n    {many}")
    res.checks.append(f"{name} {config}: {one.strip()}; {many.strip()}")


def bench_multinomial(res: Results, rng: np.random.Generator, z: Sizes, vocab_size: int = 5_000) -> None:
    name, config = "MultinomialNB", f"{vocab_size // 1000}k vocab/2c"
    print(f"\nMultinomialNB, ~20 tokens per message, {vocab_size:,}-word vocabulary, 2 classes", flush=True)
    vocab = [f"w{i:04d}" for i in range(vocab_size)]
    classes = [0, 1]
    n_batches = max(z.mn_learn_batches, z.mn_predict_batches)
    X, y = token_data(rng, z.train + z.predict_one + BATCH * n_batches, vocab_size)
    X_train, y_train = X[: z.train], y[: z.train]
    X_test = X[z.train : z.train + z.predict_one]
    X_bat, y_bat = X[z.train + z.predict_one :], y[z.train + z.predict_one :]
    train_rows, test_rows = sparse_dicts(X_train, vocab), sparse_dicts(X_test, vocab)
    y_list = y_train.tolist()
    learn_rows, learn_y = train_rows[: z.learn_one], y_list[: z.learn_one]
    print(
        f"  data: {np.mean([sum(r.values()) for r in train_rows]):.1f} tokens per message, "
        f"{np.mean([len(r) for r in train_rows]):.1f} distinct; "
        f"{int((X_train.sum(axis=0) > 0).sum()):,} of {vocab_size:,} words seen in training"
    )

    def learn_one(model: Any) -> None:
        for x, label in zip(learn_rows, learn_y):
            model.learn_one(x, label)

    t_snb = best_time(streamnb.MultinomialNB, learn_one, z.repeats) / z.learn_one
    t_riv = best_time(river_nb.MultinomialNB, learn_one, z.repeats) / z.learn_one

    def sk_setup() -> sk_nb.MultinomialNB:
        m = sk_nb.MultinomialNB()
        m.partial_fit(X_train[:1], y_train[:1], classes=classes)
        return m

    def sk_learn_one(m: sk_nb.MultinomialNB) -> None:
        for i in range(1, z.sk_one + 1):
            m.partial_fit(X_train[i : i + 1], y_train[i : i + 1])

    t_sk = best_time(sk_setup, sk_learn_one, z.repeats) / z.sk_one
    res.add(Row(name, config, "learn_one", True, t_snb, t_riv, t_sk, sk_info=True))

    snb, riv = streamnb.MultinomialNB(), river_nb.MultinomialNB()
    for x, label in zip(train_rows, y_list):
        snb.learn_one(x, label)
        riv.learn_one(x, label)
    sk = sk_nb.MultinomialNB().fit(X_train, y_train)

    def predict_one(model: Any) -> None:
        for x in test_rows:
            model.predict_proba_one(x)

    t_snb = best_time(lambda: snb, predict_one, z.repeats) / z.predict_one
    t_riv = best_time(lambda: riv, predict_one, z.repeats) / z.predict_one

    def sk_predict_one(m: sk_nb.MultinomialNB) -> None:
        for i in range(z.sk_one):
            m.predict_proba(X_test[i : i + 1])

    t_sk = best_time(lambda: sk, sk_predict_one, z.repeats) / z.sk_one
    res.add(Row(name, config, "predict_proba_one", True, t_snb, t_riv, t_sk, sk_info=True))

    # batches: streamnb and scikit-learn the CSR matrix (streamnb with its vocabulary as
    # columns=), River a sparse DataFrame (its learn_many needs `X.sparse`, as produced by
    # BagOfWords in its docstring); streamnb's rate on a dense DataFrame is shown for information
    def batch(i: int) -> sp.csr_matrix:
        return X_bat[i * BATCH : (i + 1) * BATCH]

    dense = [pd.DataFrame(batch(i).toarray(), columns=vocab) for i in range(n_batches)]
    sparse_df = [pd.DataFrame.sparse.from_spmatrix(batch(i), columns=vocab) for i in range(n_batches)]
    csr = [batch(i) for i in range(n_batches)]
    labels = [pd.Series(y_bat[i * BATCH : (i + 1) * BATCH]) for i in range(n_batches)]
    arr_y = [y_bat[i * BATCH : (i + 1) * BATCH] for i in range(n_batches)]
    nl, npr = z.mn_learn_batches, z.mn_predict_batches

    def learn_many_on(frames: list[Any], **kw: Any) -> Callable[[Any], None]:
        def work(model: Any) -> None:
            for Xb, yb in zip(frames[:nl], labels[:nl]):
                model.learn_many(Xb, yb, **kw)

        return work

    def sk_learn_many(m: sk_nb.MultinomialNB) -> None:
        for i in range(nl):
            if i == 0:
                m.partial_fit(csr[i], arr_y[i], classes=classes)
            else:
                m.partial_fit(csr[i], arr_y[i])

    t_snb = best_time(streamnb.MultinomialNB, learn_many_on(csr, columns=vocab), z.repeats) / (BATCH * nl)
    t_riv = best_time(river_nb.MultinomialNB, learn_many_on(sparse_df), z.repeats) / (BATCH * nl)
    t_sk = t_sk_learn = best_time(sk_nb.MultinomialNB, sk_learn_many, z.repeats) / (BATCH * nl)
    res.add(Row(name, config, "learn_many", False, t_snb, t_riv, t_sk))
    t_snb_dense_learn = best_time(streamnb.MultinomialNB, learn_many_on(dense), 1) / (BATCH * nl)

    # the same batches on a model that knows the vocabulary already (scikit-learn's is fixed by
    # its columns from the first batch on; streamnb registers new tokens as they come)
    def knowing_vocabulary() -> streamnb.MultinomialNB:
        m = streamnb.MultinomialNB()
        m.learn_many(sp.identity(len(vocab), format="csr"), pd.Series([classes[i % len(classes)]
                                                                          for i in range(len(vocab))]), columns=vocab)
        return m

    t_snb_known = best_time(knowing_vocabulary, learn_many_on(csr, columns=vocab), z.repeats) / (BATCH * nl)

    def predict_many_on(frames: list[Any], **kw: Any) -> Callable[[Any], None]:
        def work(model: Any) -> None:
            for Xb in frames[:npr]:
                model.predict_proba_many(Xb, **kw)

        return work

    def sk_predict_many(m: sk_nb.MultinomialNB) -> None:
        for Xb in csr[:npr]:
            m.predict_proba(Xb)

    t_snb = best_time(lambda: snb, predict_many_on(csr, columns=vocab), z.repeats) / (BATCH * npr)
    t_riv = best_time(lambda: riv, predict_many_on(sparse_df), z.repeats) / (BATCH * npr)
    t_sk = best_time(lambda: sk, sk_predict_many, z.repeats) / (BATCH * npr)
    res.add(Row(name, config, "predict_proba_many", False, t_snb, t_riv, t_sk))
    t_snb_dense_pred = best_time(lambda: snb, predict_many_on(dense), 1) / (BATCH * npr)
    print(
        f"  (streamnb on a dense DataFrame, information: learn_many "
        f"{1 / t_snb_dense_learn:,.0f} rows/s, predict_proba_many {1 / t_snb_dense_pred:,.0f} rows/s; "
        f"learn_many on the CSR batches with the vocabulary known, as scikit-learn's is: "
        f"{1 / t_snb_known:,.0f} rows/s, x{t_sk_learn / t_snb_known:.2f} of scikit-learn)"
    )

    # agreement. streamnb ignores tokens never seen (River smooths them, sklearn has a fixed
    # vocabulary of 5,000 columns): small differences expected.
    few = test_rows[:5]
    p_snb = proba_one_matrix(snb, few, classes)
    one = agreement(
        "one  ", p_snb, {"River": proba_one_matrix(riv, few, classes), "sklearn": sk.predict_proba(X_test[:5])}
    )
    many = agreement(
        "many ",
        snb.predict_proba_many(dense[0].iloc[:5])[classes].to_numpy(),
        {
            "River": riv.predict_proba_many(sparse_df[0].iloc[:5])[classes].to_numpy(),
            "sklearn": sk.predict_proba(csr[0][:5]),
        },
    )
    smooth = streamnb.MultinomialNB(unseen="smooth")
    for x, label in zip(train_rows, y_list):
        smooth.learn_one(x, label)
    same = agreement("one, streamnb unseen='smooth'", proba_one_matrix(smooth, few, classes),
                     {"River": proba_one_matrix(riv, few, classes)})
    print(f"  agreement on 5 rows, models learned on the same {z.train:,} messages (streamnb ignores "
          "unseen words, River smooths them, sklearn smooths over all 5,000 columns):")
    print(f"    {one}\n    {many}\n    {same}")
    res.checks.append(f"{name} {config}: {one.strip()}; {many.strip()}")


# -- report -----------------------------------------------------------------------------------
def streamnb_origin() -> str:
    """Where streamnb was imported from, with its git commit and whether its files are modified."""
    pkg = Path(streamnb.__file__).resolve().parent

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=pkg, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return f"{pkg} (not a git checkout)"
    dirty = git("status", "--porcelain", "--", ".")
    return f"{pkg} (git {commit}{', with uncommitted changes' if dirty else ', clean'})"


def environment() -> None:
    print("Environment")
    print(f"  python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}")
    print(f"  cpus {os.cpu_count()}, machine {platform.machine()}, processor {platform.processor() or '?'}")
    print(f"  streamnb {streamnb.__version__} from {streamnb_origin()}")
    print(
        f"  river {river.__version__}, "
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"scipy {scipy.__version__}"
    )
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(
            f"{i.get('internal_api')} {i.get('version')} x{i.get('num_threads')}" for i in threadpool_info()
        )
        print(f"  thread pools: {blas or 'none'}")
    except ImportError:
        pass


def table(res: Results) -> None:
    print("\nSummary (per event: microseconds, lower is better; batches: rows/s, higher is better;")
    print("x = streamnb speed-up, > 1 means streamnb faster; * = sklearn 1-row call, for information)")
    head = f"{'model':<14}{'config':<16}{'operation':<20}{'unit':<9}{'streamnb':>12}{'River':>12}{'sklearn':>13}{'x River':>9}{'x sklearn':>11}"
    print(head)
    print("-" * len(head))
    for r in res.rows:
        unit = "us/event" if r.per_event else "rows/s"
        sk = r.shown(r.sk) + ("*" if r.sk_info else " ")
        xs = _fmt_ratio(r.ratio(r.sk)) + ("*" if r.sk_info else " ")
        print(
            f"{r.model:<14}{r.config:<16}{r.op:<20}{unit:<9}{r.shown(r.snb):>12}{r.shown(r.river):>12}"
            f"{sk:>13}{_fmt_ratio(r.ratio(r.river)):>9}{xs:>11}"
        )


def targets(res: Results) -> None:
    """The targets of the performance issue, PASS/MISS with the worst measured ratio."""

    def line(title: str, op: str, need_river: float, need_sk: float | None) -> None:
        rows = [r for r in res.rows if r.op == op]
        if not rows:
            return
        parts, ok = [], True
        for r in rows:
            xr = r.ratio(r.river)
            xs = r.ratio(r.sk)
            ok &= xr is not None and xr >= need_river
            cell = f"{r.model.replace('NB', '')} {r.config} x{_fmt_ratio(xr)}R"
            if need_sk is not None:
                ok &= xs is not None and xs >= need_sk
                cell += f"/x{_fmt_ratio(xs)}S"
            parts.append(cell)
        worst_r = min(r.ratio(r.river) or 0.0 for r in rows)
        worst = f"worst x{_fmt_ratio(worst_r)} vs River"
        if need_sk is not None:
            worst += f", x{_fmt_ratio(min(r.ratio(r.sk) or 0.0 for r in rows))} vs sklearn"
        print(f"  {'PASS' if ok else 'MISS'}  {title:<46} {worst}")
        print(f"        {'; '.join(parts)}")

    print("\nTargets (measured, not asserted; R = vs River, S = vs scikit-learn batch rate)")
    line("learn_one >= River", "learn_one", 1.0, None)
    line("predict_proba_one >= 10x River", "predict_proba_one", 10.0, None)
    line("learn_many >= 3x River and >= sklearn", "learn_many", 3.0, 1.0)
    line("predict_proba_many >= 3x River and >= sklearn", "predict_proba_many", 3.0, 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per figure (best kept)")
    args = parser.parse_args(argv)
    z = Sizes()
    if args.quick:
        z = Sizes(
            learn_one=300, predict_one=200, sk_one=20, train=1_000, learn_batches=2,
            predict_batches=2, mn_learn_batches=1, mn_predict_batches=1, repeats=1,
        )
    if args.repeats:
        z.repeats = args.repeats

    t0 = time.perf_counter()
    environment()
    print(
        f"\nSizes: learn_one {z.learn_one:,} events, predict_proba_one {z.predict_one:,} events, "
        f"trained models {z.train:,} events, batches of {BATCH:,} rows "
        f"(Gaussian {z.learn_batches} learn / {z.predict_batches} predict, multinomial "
        f"{z.mn_learn_batches} / {z.mn_predict_batches}); best of {z.repeats} after a warm-up"
    )
    print("Per-config lines: per event in microseconds, batches in rows/s; x = streamnb speed-up")
    res = Results()
    rng = np.random.default_rng(SEED)
    for d in (10, 50):
        for c in (2, 5):
            bench_gaussian(res, rng, d, c, z)
    bench_multinomial(res, rng, z)
    table(res)
    targets(res)
    print(f"\nTotal benchmark time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
