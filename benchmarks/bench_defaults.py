"""TAN's defaults against its naive Bayes counterpart and against plain TAN (issue 26), on every
UCI/PMLB set of the shared data: accuracy and log-loss, 5-fold, the same folds for every model.

Run: ``.venv/bin/python benchmarks/bench_defaults.py`` (all sets, several minutes on 2 cores:
letter and shuttle are most of it), ``--sets car colic`` for some sets, ``--data DIR`` or
``STREAMNB_DATA`` for the shared data directory (default ``/work/shared/data``; sets are read
from its ``uci_pmlb`` folder, and vote from its ``bnclassify_car_voting`` folder), ``--tab FILE
...`` for sets outside the shared data in Orange's ``.tab`` format (:func:`read_tab`; e.g. the
sets the ``orange3`` package ships in ``Orange/datasets``), alone or beside ``--sets``. Nothing
is asserted: figures are printed, and a loss of the default beyond 2 standard errors is flagged
``LOSS``. ``--led-resamples K`` instead scores the default against plain TAN on K fresh samples
of led7's generator (:data:`LED_DIGITS`, whose features are independent given the class): how
often that flag fires by chance alone; ``--fold-seeds K --sets car`` (or ``--tab FILE``) scores
the default against plain TAN and naive Bayes with K splits into folds; ``--pair-gain --sets
car`` prints, per pair of features, what the pair says about the class beyond naive Bayes
(:func:`pair_gain`); ``--edge-evidence --sets car``, for each edge of plain TAN that the default
leaves out, the prequential evidence for it (:func:`edge_evidence`); ``--class-gates --sets
car`` plain TAN's tree with each edge tested per class (:func:`class_gates`); ``--both-kinds
--sets colic``, TAN with each declaration of the kinds that the mixed sets' two naive Bayes read
(:func:`both_kinds`); ``--average``, the main table with the column ``TAN`` the mean of the
default's and plain TAN's posteriors (:class:`Average`), a hedge between the two.

Sets and kinds:

- categorical sets (:data:`CATEGORICAL_SETS`, those of ``bench_structure.py``, and
  :data:`OTHER_SETS`): every column read as categories (strings); the naive Bayes counterpart is
  ``CategoricalNB``;
- numeric sets (``bench_tree_numeric.NUMERIC_SETS`` and glass2, spambase, letter, shuttle):
  every column ``"gaussian"``; the counterpart is ``GaussianNB``;
- mixed sets (``bench_tree_numeric``'s mixed and extra mixed sets): an integer column with at
  most 10 distinct values in the file is categorical, the rest numeric
  (``bench_tree_numeric.column_kinds``); the counterpart is the better of ``GaussianNB`` and
  ``MixedNB(kinds=...)`` on that set and metric;
- sets read with ``--tab``: the kinds of the file's header; the counterpart is ``CategoricalNB``,
  ``GaussianNB``, or ``MixedNB(kinds=...)`` when both kinds occur.

Models: ``NB`` (the counterpart), ``plain`` = ``TANClassifier(edge_penalty=None, swap_margin=0)``
(Friedman's spanning tree; the default smoothing), ``TAN`` = ``TANClassifier()`` (defaults
only), and for information ``TAN lid`` = ``TANClassifier(smoothing="lidstone")`` (the default
structure, the CPTs smoothed toward uniform as before this issue). Stratified 5-fold
cross-validation (``StratifiedKFold(5, shuffle=True, random_state=0)``), each fold learned with
``learn_many`` (``relearn_every`` = 100 as by default), then ``relearn()`` once, then
``predict_many`` and ``predict_proba_many`` on the test fold. Log-loss: mean ``-log P(true
class)`` in nats, a probability below 1e-15 counted as 1e-15. ``d NB`` = TAN - NB and ``d pl`` =
TAN - plain (signed so that ``d > 0`` is a win for TAN in both tables), ``se`` the standard
deviation of the 5 per-fold differences over sqrt(5); ``vs best`` is the comparison with the
better of the two (by mean) on that set and metric. ``edges``: TAN's and plain TAN's edges
learned on the whole set.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import chi2_contingency
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tree_numeric import EXTRA_MIXED_SETS, MIXED_SETS, NUMERIC_SETS, column_kinds  # noqa: E402

from streamnb import CategoricalNB, GaussianNB, MixedNB, TANClassifier  # noqa: E402
from streamnb.bn.tree_inference import MARGINAL_PRIOR, lid, smoothed  # noqa: E402

DATA = Path(os.environ.get("STREAMNB_DATA", "/work/shared/data"))
CATEGORICAL_SETS = ["car", "corral", "monk1", "monk2", "monk3", "tic_tac_toe", "breast_cancer", "led7", "flare",
                    "mushroom", "nursery"]
#: Sets of the shared data outside its ``uci_pmlb`` folder: file (under the data directory) and
#: class column. Their columns are categories, ``NA`` a missing value (left out of the event).
OTHER_SETS = {"vote": ("bnclassify_car_voting/voting.csv", "Class")}
MIXED = MIXED_SETS + EXTRA_MIXED_SETS
NUMERIC = NUMERIC_SETS + ["glass2", "spambase", "letter", "shuttle"]
ALL_SETS = CATEGORICAL_SETS + list(OTHER_SETS) + MIXED + NUMERIC
FLOOR = 1e-15
Scores = dict[str, list[float]]


def models(name: str, X: pd.DataFrame, kinds: dict | None = None) -> tuple[pd.DataFrame, dict, dict]:
    """The set's frame as learned, the makers of the models, and the kinds (``kinds`` given: a
    set read by :func:`read_tab`, whose counterpart is ``CategoricalNB``, ``GaussianNB`` or,
    with both kinds, ``MixedNB``)."""
    if kinds is None and name in CATEGORICAL_SETS:
        kinds = {c: "categorical" for c in X.columns}
    if kinds is None:
        kinds = column_kinds(X, name in MIXED)
        nb = {"GaussNB": GaussianNB}
        if name in MIXED:
            nb["MixedNB"] = lambda: MixedNB(kinds=kinds)
    elif set(kinds.values()) == {"categorical"}:
        X = X.astype(str).where(X.notna())  # a missing value stays missing
        nb = {"NB": CategoricalNB}
    elif "categorical" in kinds.values():
        nb = {"MixedNB": lambda: MixedNB(kinds=kinds)}
    else:
        nb = {"GaussNB": GaussianNB}
    makers = {
        **nb,
        "plain": lambda: TANClassifier(kinds=kinds, edge_penalty=None, swap_margin=0),
        "TAN": lambda: TANClassifier(kinds=kinds),
        "TAN lid": lambda: TANClassifier(kinds=kinds, smoothing="lidstone"),
    }
    return X, makers, kinds


def read_set(name: str) -> tuple[pd.DataFrame, pd.Series]:
    """A set of the shared data: its features and its class."""
    if name in OTHER_SETS:
        file, target = OTHER_SETS[name]
        df = pd.read_csv(DATA / file, dtype=str, na_values=["NA"], keep_default_na=False)
    else:
        df, target = pd.read_csv(DATA / "uci_pmlb" / f"{name}.tsv.gz", sep="\t"), "target"
    return df.drop(columns=target), df[target]


def load(name: str, tab: Path | None = None) -> tuple[pd.DataFrame, pd.Series, dict, dict] | None:
    """A set as scored: features, class, makers of the models and kinds (``tab``: a file read by
    :func:`read_tab`); None if the set's file is absent."""
    if tab is not None:
        X, y, kinds = read_tab(tab)
    elif name in OTHER_SETS or (DATA / "uci_pmlb" / f"{name}.tsv.gz").exists():
        X, y = read_set(name)
        kinds = {c: "categorical" for c in X.columns} if name in OTHER_SETS else None
    else:
        return None
    X, makers, kinds = models(name, X, kinds)
    return X, y, makers, kinds


def read_tab(path: Path) -> tuple[pd.DataFrame, pd.Series, dict]:
    """A set in Orange's tab-separated format (names; types, ``c``/``continuous`` numeric and
    any other categorical; flags, ``class`` the class and ``meta``/``i``/``ignore`` left out),
    ``?`` or an empty field missing (a row without its class left out): its features, class
    and kinds."""
    lines = path.read_text().split("\n")
    names, types, flags = (line.split("\t") for line in lines[:3])
    flags += [""] * (len(names) - len(flags))
    df = pd.read_csv(path, sep="\t", header=None, skiprows=3, names=names, dtype=str, na_values=["?", ""],
                     keep_default_na=False)
    target = next(n for n, f in zip(names, flags) if "class" in f.split())
    df = df[df[target].notna()].reset_index(drop=True)
    kinds = {n: "gaussian" if t.strip() in ("c", "continuous") else "categorical"
             for n, t, f in zip(names, types, flags) if n != target and not f.strip()}
    X = df[list(kinds)].copy()
    for n, k in kinds.items():
        if k == "gaussian":
            X[n] = pd.to_numeric(X[n])
    return X, df[target], kinds


class Average:
    """The mean of the posteriors of ``models`` (``--average``: a hedge between two structures)."""

    def __init__(self, *models: TANClassifier) -> None:
        self.models = models

    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        for m in self.models:
            m.learn_many(X, y)

    def relearn(self) -> None:
        for m in self.models:
            m.relearn()

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        frames = [m.predict_proba_many(X) for m in self.models]
        columns = sorted(set().union(*(f.columns for f in frames)), key=str)
        return sum(f.reindex(columns=columns, fill_value=0.0) for f in frames) / len(frames)

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        return self.predict_proba_many(X).idxmax(axis=1)


def fold_scores(X: pd.DataFrame, y: pd.Series, makers: dict, seed: int = 0) -> tuple[Scores, Scores]:
    acc: Scores = {m: [] for m in makers}
    loss: Scores = {m: [] for m in makers}
    labels = list(y.unique())
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
        Xtr, ytr, Xte, yte = X.iloc[train], y.iloc[train], X.iloc[test], y.iloc[test].to_numpy()
        for m, make in makers.items():
            model = make()
            model.learn_many(Xtr, ytr)
            if hasattr(model, "relearn"):
                model.relearn()
            acc[m].append(float(np.mean(model.predict_many(Xte).to_numpy() == yte)))
            proba = model.predict_proba_many(Xte).reindex(columns=labels, fill_value=0.0).to_numpy()
            p_true = proba[np.arange(len(yte)), [labels.index(v) for v in yte]]
            loss[m].append(float(-np.mean(np.log(np.maximum(p_true, FLOOR)))))
    counterparts = [m for m in ("GaussNB", "MixedNB") if m in makers]
    if counterparts:  # the better naive Bayes on this set and metric
        for scores, better in ((acc, max), (loss, min)):
            scores["NB"] = scores[better(counterparts, key=lambda m: float(np.mean(scores[m])))]
    return acc, loss


def diff(scores: Scores, a: str, b: str, sign: float) -> tuple[float, float]:
    d = sign * (np.array(scores[a]) - np.array(scores[b]))
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


#: The ten digits of the LED display as its seven segments (top, upper left, upper right, middle,
#: lower left, lower right, bottom): the generator of the led7 set (Breiman et al. 1984), each
#: segment flipped with probability 0.1. Given the digit the segments are independent, so naive
#: Bayes is the true model and every TAN edge is noise.
LED_DIGITS = ["1110111", "0010010", "1011101", "1011011", "0111010", "1101011", "1101111", "1010010", "1111111",
              "1111011"]


def led_resamples(k: int, rows: int = 3200, noise: float = 0.1) -> None:
    """``k`` fresh samples of the led7 generator, each scored as one set above (the same 5 folds
    and learners): how often the default falls more than 2 se behind plain TAN by chance."""
    rng = np.random.default_rng(7)
    pattern = np.array([[int(b) for b in d] for d in LED_DIGITS])
    flagged, diffs = {"accuracy": 0, "log-loss": 0}, {"accuracy": [], "log-loss": []}
    for _ in range(k):
        y = rng.integers(0, 10, rows)
        x = pattern[y] ^ (rng.random((rows, 7)) < noise)
        X = pd.DataFrame(x, columns=[f"s{i}" for i in range(7)]).astype(str)
        makers = {"plain": lambda: TANClassifier(edge_penalty=None, swap_margin=0), "TAN": TANClassifier}
        acc, loss = fold_scores(X, pd.Series(y), makers)
        for metric, scores, sign in (("accuracy", acc, 1.0), ("log-loss", loss, -1.0)):
            d, se = diff(scores, "TAN", "plain", sign)
            diffs[metric].append(d)
            flagged[metric] += d < -2 * se
    for metric, values in diffs.items():
        d = np.array(values)
        print(f"led7 generator, {k} samples of {rows} rows, {metric}: TAN - plain mean {d.mean():+.4f} "
              f"(sd {d.std(ddof=1):.4f}), TAN behind by more than 2 se on {flagged[metric]} of {k}")


def fold_seeds(sets: list[tuple[str, Path | None]], k: int) -> None:
    """The default against plain TAN and against its naive Bayes counterpart (``NB`` of the main
    table) on each set (name, and file for a set in Orange's format) with ``k`` different splits
    into folds (``random_state`` 0 .. k - 1): how much a verdict depends on the split."""
    for name, tab in sets:
        found = load(name, tab)
        if found is None:
            print(f"skipped (file absent): {name}")
            continue
        X, y, makers, _ = found
        chosen = {m: make for m, make in makers.items() if m != "TAN lid"}
        runs = [fold_scores(X, y, chosen, seed) for seed in range(k)]
        for ref in ("plain", "NB"):
            for metric, at, sign in (("accuracy", 0, 1.0), ("log-loss", 1, -1.0)):
                rows = [diff(run[at], "TAN", ref, sign) for run in runs]
                mean = float(np.mean([d for d, _ in rows]))
                print(f"{name} {metric}, TAN - {ref} over {k} splits: "
                      + " ".join(f"{d:+.4f}({se:.4f})" for d, se in rows) + f"; mean {mean:+.4f}, behind by "
                      f"more than 2 se on {sum(d < -2 * se for d, se in rows)} of {k}", flush=True)


def pair_gain(name: str, alpha: float = 1.0) -> None:
    """Per pair of columns ``(i, j)`` of a categorical set: the leave-one-out conditional
    log-likelihood of the class from the two features alone, their joint ``P(x_i, x_j | y)``
    against naive Bayes's ``P(x_i | y) P(x_j | y)`` (nats per event; Lidstone ``alpha`` spread
    over the cells, each event scored with its own counts taken out, so a pair with nothing to
    add scores below 0), beside the pair's G statistic given the class. A discriminative edge
    criterion that reads only the pair's own table would admit the pairs scoring above 0."""
    df = pd.read_csv(DATA / "uci_pmlb" / f"{name}.tsv.gz", sep="\t").astype(str)
    y, names = df["target"], [c for c in df.columns if c != "target"]
    n_y = y.value_counts()
    print(f"{name}: the pair's leave-one-out log P(y | x_i, x_j), joint less naive Bayes; G given the class")
    for a, b in itertools.combinations(names, 2):
        cells = df.groupby(["target", a, b]).size()
        n_ya, n_yb = df.groupby(["target", a]).size(), df.groupby(["target", b]).size()
        v_a, v_b = df[a].nunique(), df[b].nunique()
        gain = g = 0.0
        for (c, u, v), n in cells.items():
            joint, naive = {}, {}
            for k in n_y.index:
                d = float(k == c)  # the event's own counts taken out
                m = n_y[k] - d + alpha
                joint[k] = (n_y[k] - d + 1) * (cells.get((k, u, v), 0) - d + alpha / (v_a * v_b)) / m
                naive[k] = (n_y[k] - d + 1) * ((n_ya.get((k, u), 0) - d + alpha / v_a) / m) * (
                    (n_yb.get((k, v), 0) - d + alpha / v_b) / m)
            gain += n * (math.log(joint[c] / sum(joint.values())) - math.log(naive[c] / sum(naive.values())))
            g += 2 * n * math.log(n * n_y[c] / (n_ya[(c, u)] * n_yb[(c, v)]))
        print(f"  {a:>12} {b:>12}  {gain / len(df):+.5f}  G {g:7.1f}")


class Counts:
    """Class, feature and pair counts of categorical events, and the CPT terms TAN's default
    reads from them (:func:`~streamnb.bn.tree_inference.lid`, and
    :func:`~streamnb.bn.tree_inference.smoothed` toward the class marginal with ``prior``
    pseudo-events): the model of :func:`edge_evidence` and :func:`class_gates`."""

    def __init__(self, nv: dict, alpha: float = 1.0, prior: float = MARGINAL_PRIOR) -> None:
        self.nv, self.alpha, self.prior = nv, alpha, prior
        self.n_y: Counter = Counter()
        self.n_fy: Counter = Counter()
        self.n_pair: Counter = Counter()

    def learn(self, x: dict, y: str, pairs: list[tuple[str, str]]) -> None:
        """Count ``x`` (feature to value, the observed ones) in class ``y``, and each
        ``(child, parent)`` of ``pairs`` observed together."""
        self.n_y[y] += 1
        for f, v in x.items():
            self.n_fy[f, v, y] += 1
        for c, u in pairs:
            if c in x and u in x:
                self.n_pair[c, x[c], u, x[u], y] += 1

    def term(self, x: dict, f: str, y: str, u: str | None) -> float:
        """``log P(x_f | x_u, y)`` (``u`` None or unobserved: ``log P(x_f | y)``), as TAN's."""
        if u is None or u not in x:
            return lid(self.n_fy[f, x[f], y], self.n_y[y], self.alpha, self.nv[f])
        return smoothed(self.n_pair[f, x[f], u, x[u], y], self.n_fy[u, x[u], y], self.n_fy[f, x[f], y],
                        self.n_y[y], self.alpha, self.nv[f], self.prior)


def edge_evidence(name: str, orders: int = 8, prior: float = MARGINAL_PRIOR, alpha: float = 1.0) -> None:
    """For each edge ``p -> c`` of plain TAN's tree (learned on the whole set) that the default's
    forest leaves out, ``c`` having no parent there: the prequential log-likelihood ratio of the
    class, the default's structure with that edge against without it, over ``orders`` random
    orders of the set. Each event is scored by the model learned from the events before it,
    then learned (CPTs as the default smooths them, :func:`~streamnb.bn.tree_inference.smoothed`:
    toward the class marginal with ``prior`` pseudo-events). A sequential test of the edge at
    level 0.001 (Ville's inequality) admits it once the ratio exceeds ``log(1000)`` = 6.9 nats."""
    df = pd.read_csv(DATA / "uci_pmlb" / f"{name}.tsv.gz", sep="\t").astype(str)
    names = [c for c in df.columns if c != "target"]
    learned = []
    for kw in ({}, {"edge_penalty": None, "swap_margin": 0}):
        m = TANClassifier(**kw)
        m.learn_many(df[names], df["target"])
        m.relearn()
        learned.append(set(m.structure().edges))
    parent = {c: p for p, c in learned[0]}
    nv = {f: df[f].nunique() for f in names}
    classes = sorted(df["target"].unique())
    rows = [(dict(zip(names, r[:-1])), r[-1]) for r in df[names + ["target"]].itertuples(index=False)]
    fold = len(rows) * 4 // 5
    for p, c in sorted(learned[1] - learned[0]):
        if c in parent:
            continue
        ends = []
        for seed in range(orders):
            order = rows[:]
            random.Random(seed).shuffle(order)
            counts = Counts(nv, alpha, prior)
            evidence, marks = 0.0, {}
            for t, (x, yt) in enumerate(order):
                if t:
                    base = [math.log(counts.n_y[y] + 1)
                            + sum(counts.term(x, f, y, parent.get(f)) for f in names) for y in classes]
                    alt = [b + counts.term(x, c, y, p) - counts.term(x, c, y, None)
                           for y, b in zip(classes, base)]
                    k = classes.index(yt)
                    evidence += (alt[k] - base[k]) - (logsumexp(alt) - logsumexp(base))
                counts.learn(x, yt, [(c, p)] + [(f, u) for f, u in parent.items()])
                if t + 1 == fold:
                    marks["fold"] = evidence
            ends.append((marks["fold"], evidence))
        print(f"{name}: {p} -> {c}, prequential log-likelihood ratio of the class over {orders} orders, "
              f"after {fold} events (a training fold): " + " ".join(f"{a:+.1f}" for a, _ in ends)
              + f"; after all {len(rows)}: " + " ".join(f"{b:+.1f}" for _, b in ends))


def class_gates(name: str, levels: tuple[float, ...] = (0.01, 0.05), alpha: float = 1.0) -> None:
    """Plain TAN's tree with each edge's CPT gated per class: in class ``y`` the child is read
    given its parent (as the default smooths it, :func:`~streamnb.bn.tree_inference.smoothed`)
    where the default keeps that edge or the pair's G test within ``y`` passes at ``level / C``
    (over the values seen in ``y``; Bonferroni over the ``C`` classes), and given the class
    alone (naive Bayes's term) elsewhere. Scored on the main table's 5 folds against the tree
    with every edge read (plain TAN) and with none (naive Bayes), all three computed here from
    the same counts. An edge whose evidence sits in one class, as car's doors-lug_boot, can enter
    that class alone, where a false entry costs one class's parameters, not every class's."""
    X, y = read_set(name)
    X, y = X.astype(str).where(X.notna()), y.astype(str)
    names, classes = list(X.columns), sorted(y.unique())
    nv = {f: X[f].nunique() for f in names}
    variants = ["plain", "NB", *(f"gate {lv}" for lv in levels)]
    acc: Scores = {v: [] for v in variants}
    loss: Scores = {v: [] for v in variants}
    opened = []
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        structure = {}
        for key, kw in (("default", {}), ("plain", {"edge_penalty": None, "swap_margin": 0})):
            model = TANClassifier(**kw)
            model.learn_many(X.iloc[train], y.iloc[train])
            model.relearn()
            structure[key] = model.structure().edges
        kept = {frozenset(e) for e in structure["default"]}
        parent = {c: p for p, c in structure["plain"]}
        events = [({f: v for f, v in zip(names, r) if isinstance(v, str)}, yt)
                  for *r, yt in zip(*(X[f].iloc[train] for f in names), y.iloc[train])]
        counts = Counts(nv, alpha)
        for x, yt in events:
            counts.learn(x, yt, list(parent.items()))
        p_value = {}
        for c, p in parent.items():
            for k in classes:
                pairs = [(x[c], x[p]) for x, yt in events if yt == k and c in x and p in x]
                table = pd.crosstab(*zip(*pairs)) if pairs else pd.DataFrame()
                small = min(table.shape) < 2
                p_value[c, k] = 1.0 if small else chi2_contingency(table, correction=False,
                                                                     lambda_="log-likelihood")[1]
        opened.append(sum(frozenset((c, p)) not in kept and p_value[c, k] < levels[-1] / len(classes)
                          for c, p in parent.items() for k in classes))
        gates = {"plain": lambda c, k: True, "NB": lambda c, k: False}
        for lv in levels:
            gates[f"gate {lv}"] = (lambda c, k, lv=lv: frozenset((c, parent[c])) in kept
                                   or p_value[c, k] < lv / len(classes))
        truth = [classes.index(v) for v in y.iloc[test]]
        rows = [{f: v for f, v in zip(names, r) if isinstance(v, str)}
                for r in zip(*(X[f].iloc[test] for f in names))]
        for v, gate in gates.items():
            logs = np.array([[math.log(counts.n_y[k] + 1) + sum(
                counts.term(x, f, k, parent.get(f) if f in parent and gate(f, k) else None) for f in x)
                for k in classes] for x in rows])
            proba = np.exp(logs - logsumexp(logs, axis=1, keepdims=True))
            acc[v].append(float(np.mean(proba.argmax(axis=1) == truth)))
            loss[v].append(float(-np.mean(np.log(np.maximum(proba[np.arange(len(truth)), truth], FLOOR)))))
    for v in variants[2:]:
        parts = []
        for metric, scores, sign in (("accuracy", acc, 1.0), ("log-loss", loss, -1.0)):
            (d_pl, se_pl), (d_nb, se_nb) = diff(scores, v, "plain", sign), diff(scores, v, "NB", sign)
            flag = " LOSS" if d_pl < -2 * se_pl or d_nb < -2 * se_nb else ""
            parts.append(f"{metric} {np.mean(scores[v]):.4f}, - plain {d_pl:+.4f} ({se_pl:.4f}), "
                         f"- NB {d_nb:+.4f} ({se_nb:.4f}){flag}")
        print(f"{name} {v}: " + "; ".join(parts), flush=True)
    print(f"{name}: (edge, class) pairs opened beyond the default's edges at {levels[-1]}, per fold: "
          + " ".join(str(n) for n in opened), flush=True)


def both_kinds(names: list[str], seed: int = 0) -> None:
    """On each mixed set, TAN's default and plain TAN with each declaration of the kinds the main
    table's counterparts read: the set's kinds (as ``MixedNB(kinds=...)``) and every column
    numeric (as ``GaussianNB``). Each TAN is flagged against the naive Bayes and the plain TAN
    of its own declaration; the main table sets TAN with the set's kinds against the better of
    both naive Bayes."""
    for name in names:
        found = load(name)
        if found is None:
            print(f"skipped (file absent): {name}")
            continue
        X, y, makers, kinds = found
        numeric = {c: "gaussian" for c in X.columns}
        declared = {"kinds": (makers["MixedNB"] if "MixedNB" in makers else makers["NB"], kinds),
                    "numeric": (GaussianNB, numeric)}
        cols: dict = {}
        for label, (nb, k) in declared.items():
            cols[f"NB {label}"] = nb
            cols[f"TAN {label}"] = lambda k=k: TANClassifier(kinds=k)
            cols[f"plain {label}"] = lambda k=k: TANClassifier(kinds=k, edge_penalty=None, swap_margin=0)
        acc, loss = fold_scores(X, y, cols, seed)
        for metric, scores, sign in (("accuracy", acc, 1.0), ("log-loss", loss, -1.0)):
            parts = []
            for label in declared:
                row = " ".join(f"{m} {np.mean(scores[f'{m} {label}']):.3f}" for m in ("NB", "TAN", "plain"))
                flags = [f"behind {ref} {d:+.3f} ({se:.3f})" for ref in ("NB", "plain")
                         for d, se in [diff(scores, f"TAN {label}", f"{ref} {label}", sign)] if d < -2 * se]
                parts.append(f"{label}: {row}" + (" LOSS " + ", ".join(flags) if flags else ""))
            print(f"{name} {metric}: " + "; ".join(parts), flush=True)


def main(argv: list[str]) -> int:
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=None, help="these sets only")
    parser.add_argument("--data", type=Path, default=None, help="shared data directory (holds uci_pmlb/)")
    parser.add_argument("--tab", type=Path, nargs="+", default=[], metavar="FILE",
                        help="also these sets, in Orange's .tab format (sets outside the shared data)")
    parser.add_argument("--led-resamples", type=int, default=0, metavar="K",
                        help="only: K fresh samples of the led7 generator, TAN against plain TAN")
    parser.add_argument("--fold-seeds", type=int, default=0, metavar="K",
                        help="only: the default against plain TAN and NB on --sets with K splits into folds")
    parser.add_argument("--pair-gain", action="store_true",
                        help="only: per pair of features of --sets, what it tells of the class beyond NB")
    parser.add_argument("--edge-evidence", action="store_true",
                        help="only: the evidence for plain TAN's edges the default leaves out, on --sets")
    parser.add_argument("--class-gates", action="store_true",
                        help="only: plain TAN's tree with each edge tested per class, on categorical --sets")
    parser.add_argument("--both-kinds", action="store_true",
                        help="only: on mixed --sets, TAN with the set's kinds and with every column numeric")
    parser.add_argument("--average", action="store_true",
                        help="the table with TAN's posterior the mean of the default's and plain TAN's")
    args = parser.parse_args(argv)
    if args.data is not None:
        DATA = args.data
    if args.edge_evidence:
        for name in args.sets or CATEGORICAL_SETS:
            edge_evidence(name)
        return 0
    if args.both_kinds:
        both_kinds(args.sets or MIXED)
        return 0
    if args.class_gates:
        for name in args.sets or CATEGORICAL_SETS + list(OTHER_SETS):
            class_gates(name)
        return 0
    if args.pair_gain:
        for name in args.sets or CATEGORICAL_SETS:
            pair_gain(name)
        return 0
    names = args.sets if args.sets is not None else [] if args.tab else ALL_SETS
    sets = [(name, None) for name in names] + [(path.stem, path) for path in args.tab]
    if args.fold_seeds:
        fold_seeds(sets, args.fold_seeds)
        return 0
    if args.led_resamples:
        led_resamples(args.led_resamples)
        return 0
    t_all = time.perf_counter()
    head = (f"{'dataset':<14}{'kind':<6}{'rows':>6}{'cls':>4}{'NB':>8}{'plain':>8}{'TAN':>8}{'TAN lid':>8}"
            f"{'d NB':>8}{'se':>7}{'d pl':>8}{'se':>7}{'vs best':>9}{'flag':>6}")
    tables: dict = {"accuracy": [], "log-loss": []}
    tally = {t: [0, 0] for t in tables}
    edges = []
    for name, tab in sets:
        t0 = time.perf_counter()
        found = load(name, tab)
        if found is None:
            print(f"skipped (file absent): {name}")
            continue
        X, y, makers, kinds = found
        structures = {m: makers[m] for m in ("TAN", "plain")}
        if args.average:
            makers["TAN"] = lambda: Average(structures["TAN"](), structures["plain"]())
        acc, loss = fold_scores(X, y, makers)
        values = set(kinds.values())
        kind = "cat" if values == {"categorical"} else "mixed" if name in MIXED or len(values) > 1 else "num"
        lead = f"{name:<14}{kind:<6}{len(y):>6}{y.nunique():>4}"
        for metric, scores, sign, fmt in (("accuracy", acc, 1.0, ".4f"), ("log-loss", loss, -1.0, ".3f")):
            mean = {m: float(np.mean(v)) for m, v in scores.items()}
            (d_nb, se_nb), (d_pl, se_pl) = diff(scores, "TAN", "NB", sign), diff(scores, "TAN", "plain", sign)
            best = "NB" if sign * mean["NB"] >= sign * mean["plain"] else "plain"
            lost = d_nb < -2 * se_nb or d_pl < -2 * se_pl
            tally[metric][0] += lost
            tally[metric][1] += d_nb >= -2 * se_nb and d_pl >= -2 * se_pl and (d_nb > 2 * se_nb or d_pl > 2 * se_pl)
            tables[metric].append(
                lead + "".join(f"{mean[m]:>8{fmt}}" for m in ("NB", "plain", "TAN", "TAN lid"))
                + f"{d_nb:>+8{fmt}}{se_nb:>7{fmt}}{d_pl:>+8{fmt}}{se_pl:>7{fmt}}{best:>9}{'LOSS' if lost else '':>6}")
        whole = {}
        for m, make in structures.items():
            model = make()
            model.learn_many(X, y)
            model.relearn()
            whole[m] = len(model.structure().edges)
        edges.append(f"{name}: TAN {whole['TAN']}, plain {whole['plain']} ({time.perf_counter() - t0:.0f} s)")
        print(f"{tables['accuracy'][-1]}   [{edges[-1]}]", flush=True)
    for metric, rows in tables.items():
        print(f"\n## {metric}{' (nats per event, lower is better; d > 0: TAN lower)' if metric == 'log-loss' else ''}\n")
        print(head)
        print("-" * len(head))
        print("\n".join(rows))
        print(f"\n{metric}: TAN loses beyond 2 se against NB or plain TAN on {tally[metric][0]} of {len(rows)} "
              f"sets; wins beyond 2 se against one of them (and loses to neither) on {tally[metric][1]}")
    print("\nedges learned on the whole set:\n  " + "\n  ".join(edges))
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
