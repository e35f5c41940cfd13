"""Prequential (test-then-train) evaluation of a binary text classifier over a stream.

Every message is first scored and predicted, then learned: the figures are those a live filter
would have had. The stream is a JSON-lines file (one object per line with a text and a label),
or the bundled SMS corpus by name (``"sms"``), or any iterable of ``(x, label)`` (e.g.
:func:`streamnb.spam.mailbox.labelled`). Metrics (the positive class is "spam"): accuracy, spam
recall, ham misclassification rate (hams predicted spam / hams), precision, F1, MCC and ROC AUC
(of the score), the TREC spam-track measures ``one_minus_roca_pct`` ((1-ROCA)%, lower is better)
and ``sm_pct_at_hm_0.1`` (spam missed, %, at the threshold calling 0.1% of ham spam), the
share of ``unsure`` verdicts, plus messages per second; rolling versions over a window, and the
ROC curve, can be drawn to PNGs.

The score of a three-way filter (a model with ``classify_one``, e.g.
:class:`~streamnb.spam.SpamFilter`) is its verdict's unrounded ``logit``, and a message counts
as predicted spam only for a *spam* verdict (unsure is delivered, as ham); for other models the
score is the probability of ``positive`` and the prediction ``predict_one``. In a pipeline of
stateless featurizers (steps declaring ``stateless = True``, such as the
:class:`~streamnb.text.Tokenizer`) each message is featurized once for its test and its train.

>>> import streamnb
>>> from river import compose
>>> from streamnb.text import Tokenizer
>>> result = evaluate(compose.Pipeline(Tokenizer(), streamnb.MultinomialNB()), "sms", limit=300)
>>> result.n, result.metrics["accuracy"] > 0.85
(300, True)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MODELS", "ROC_LIMITS", "Evaluation", "evaluate", "main", "metrics", "plot", "plot_roc",
           "require_plotting", "roc_auc", "roc_figure", "rolling", "trec_measures"]  # fmt: skip


def _models() -> dict[str, Callable[[], Any]]:
    from river import compose

    import streamnb
    from streamnb.naive_bayes import ComplementNB
    from streamnb.spam import SpamFilter
    from streamnb.text import Tokenizer

    return {
        "multinomial": lambda: compose.Pipeline(Tokenizer(), streamnb.MultinomialNB()),
        "complement": lambda: compose.Pipeline(Tokenizer(), ComplementNB()),
        "bernoulli": lambda: compose.Pipeline(Tokenizer(), streamnb.BernoulliNB()),
        "spamfilter": lambda: compose.Pipeline(Tokenizer(), SpamFilter()),
    }


#: How :meth:`Evaluation.table` shows each metric: its name in words and its format.
METRIC_NAMES: dict[str, tuple[str, str]] = {
    "accuracy": ("accuracy", "{:.2%}"),
    "spam_recall": ("spam caught (recall)", "{:.2%}"),
    "ham_misclassified": ("ham called spam", "{:.2%}"),
    "precision": ("spam verdicts right (precision)", "{:.2%}"),
    "f1": ("F1 score", "{:.4f}"),
    "mcc": ("Matthews correlation (MCC)", "{:.4f}"),
    "roc_auc": ("ROC AUC", "{:.4f}"),
    "one_minus_roca_pct": ("(1 - ROC AUC) x 100", "{:.4f}"),
    "sm_pct_at_hm_0.1": ("spam missed at 0.1% ham called spam", "{:.2f}%"),
    "unsure": ("unsure (delivered as ham)", "{:.2%}"),
    "msg_per_s": ("messages per second", "{:,.0f}"),
}

#: Names accepted by ``main --model``: a streamnb Tokenizer followed by the learner.
MODELS = ("multinomial", "complement", "bernoulli", "spamfilter")


@dataclass
class Evaluation:
    """Outcome of :func:`evaluate`: per-message truth, prediction and score, and the metrics."""

    y_true: np.ndarray
    y_pred: np.ndarray
    score: np.ndarray
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    unsure: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.y_true)

    def table(self) -> str:
        """The metrics one per line, named in words (:data:`METRIC_NAMES`; ``--json`` has the keys).

        >>> print(Evaluation(np.array([True, False]), np.array([True, False]), np.zeros(2), 1.0,
        ...                  {"accuracy": 1.0, "mcc": 1.0, "msg_per_s": 2000.0}).table())
        accuracy                    100.00%
        Matthews correlation (MCC)   1.0000
        messages per second           2,000
        """
        rows = []
        for key, value in self.metrics.items():
            name, fmt = METRIC_NAMES.get(key, (key, "{:.4f}"))
            rows.append((name, "n/a" if isinstance(value, float) and math.isnan(value) else fmt.format(value)))
        width = max((len(name) for name, _ in rows), default=0) + 2
        right = max((len(text) for _, text in rows), default=0)
        return "\n".join(f"{name:<{width}}{text:>{right}}" for name, text in rows)

    def report(self) -> str:
        """The TREC measures and the default operating point, in a mail admin's words."""
        m = self.metrics
        hams, spams = int((~self.y_true).sum()), int(self.y_true.sum())
        fp = int((~self.y_true & self.y_pred).sum())
        return "\n".join([
            f"{self.n} messages ({hams} ham, {spams} spam), test-then-train, {m['msg_per_s']:,.0f} msg/s",
            f"ranking: (1-ROCA)% {m['one_minus_roca_pct']:.3f}   spam missed at 0.1% ham called spam: "
            f"{m['sm_pct_at_hm_0.1']:.1f}%",
            f"default operating point: ham called spam {m['ham_misclassified']:.2%} ({fp} of {hams}), "
            f"spam recall {m['spam_recall']:.1%}, unsure {m['unsure']:.1%} (delivered as ham), MCC {m['mcc']:.3f}",
        ])  # fmt: skip


def read_stream(stream: str | Path | Iterable[tuple[Any, Any]], text_key: str = "text", label_key: str = "label") -> Iterator[tuple[Any, Any]]:
    """``(x, y)`` pairs from ``"sms"`` (the bundled corpus), a JSON-lines file or an iterable."""
    if isinstance(stream, str) and stream.lower() in ("sms", "sms_spam"):
        from streamnb.datasets import sms_spam

        yield from sms_spam()
        return
    if isinstance(stream, (str, Path)):
        with open(stream, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    yield obj[text_key], obj[label_key]
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{stream}:{n}: expected an object with {text_key!r} and {label_key!r}") from exc
        return
    yield from stream


def stages(model: Any) -> tuple[list[Any], Any]:
    """``(featurizers, final)``: the stateless steps of a pipeline and the learner after them,
    so a loop can featurize a message once for its test and its train; ``([], model)`` when a
    step keeps state (then the pipeline itself must see every message)."""
    from river import compose

    if isinstance(model, compose.Pipeline):
        steps = list(model.steps.values())
        if all(getattr(step, "stateless", False) for step in steps[:-1]):
            return steps[:-1], steps[-1]
    return [], model


def featurize(featurizers: list[Any], x: Any) -> Any:
    for step in featurizers:
        x = step.transform_one(x)
    return x


def evaluate(
    model: Any,
    stream: str | Path | Iterable,
    positive: Any = "spam",
    limit: int | None = None,
    text_key: str = "text",
    label_key: str = "label",
    window: int = 500,
    plot_to: str | Path | None = None,
    roc_to: str | Path | None = None,
) -> Evaluation:
    """Test-then-train ``model`` on ``stream``; see the module docstring. With ``plot_to`` or
    ``roc_to``, a missing matplotlib is reported before the work (``MissingExtraError``)."""
    if plot_to is not None or roc_to is not None:
        require_plotting()
    truth, pred, score, unsure = [], [], [], []
    featurizers, final = stages(model)
    three_way = hasattr(final, "classify_one")
    start = time.perf_counter()
    for i, (x, y) in enumerate(read_stream(stream, text_key, label_key)):
        if limit is not None and i >= limit:
            break
        x = featurize(featurizers, x)
        if three_way:
            verdict = final.classify_one(x)
            p_spam, value, maybe = verdict.label == "spam", verdict.logit, verdict.label == "unsure"
        else:
            proba = final.predict_proba_one(x)
            p_spam, maybe = final.predict_one(x) == positive, False
            value = float(proba.get(positive, 0.0)) if proba else 0.5
        truth.append(y == positive)
        pred.append(p_spam)
        score.append(value)
        unsure.append(maybe)
        final.learn_one(x, y)
    seconds = time.perf_counter() - start
    result = Evaluation(np.array(truth, dtype=bool), np.array(pred, dtype=bool), np.array(score, dtype=float),
                        seconds, unsure=np.array(unsure, dtype=bool))  # fmt: skip
    result.metrics = metrics(result.y_true, result.y_pred, result.score)
    unsure_share = result.unsure
    result.metrics["unsure"] = float(unsure_share.mean()) if unsure_share is not None and result.n else 0.0
    result.metrics["msg_per_s"] = result.n / seconds if seconds > 0 else math.inf
    if plot_to is not None:
        plot(result, plot_to, window)
    if roc_to is not None:
        plot_roc(result, roc_to)
    return result


def _confusion(t: np.ndarray, p: np.ndarray) -> tuple[float, float, float, float]:
    return float((t & p).sum()), float((~t & p).sum()), float((~t & ~p).sum()), float((t & ~p).sum())


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def metrics(y_true: np.ndarray, y_pred: np.ndarray, score: np.ndarray | None = None) -> dict[str, float]:
    """Binary metrics of boolean arrays (True = spam).

    >>> m = metrics(np.array([1, 1, 0, 0, 0], bool), np.array([1, 0, 1, 0, 0], bool))
    >>> m["accuracy"], m["spam_recall"], round(m["ham_misclassified"], 4), round(m["mcc"], 4)
    (0.6, 0.5, 0.3333, 0.1667)
    """
    tp, fp, tn, fn = _confusion(np.asarray(y_true, bool), np.asarray(y_pred, bool))
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    out = {
        "accuracy": _ratio(tp + tn, tp + tn + fp + fn),
        "spam_recall": recall,
        "ham_misclassified": _ratio(fp, fp + tn),
        "precision": precision,
        "f1": _ratio(2 * precision * recall, precision + recall),
        "mcc": _ratio(tp * tn - fp * fn, den),
    }
    if score is not None:
        out["roc_auc"] = roc_auc(y_true, score)
        out.update(trec_measures(y_true, score))
    return out


def trec_measures(y_true: np.ndarray, score: np.ndarray, hm: float = 0.001) -> dict[str, float]:
    """The TREC spam track's summary measures of a score (higher = more spam):
    ``one_minus_roca_pct`` = 100 (1 - ROC area) and ``sm_pct_at_hm_0.1`` = the % of spam missed
    at the threshold that calls at most ``hm`` of the ham spam (the ``floor(hm n_ham) + 1``-th
    highest ham score; a spam tied with it counts half). NaN with one class only.

    >>> t = np.array([0] * 1000 + [1] * 4, bool)
    >>> s = np.concatenate([np.arange(1000.0), [2000.0, 999.0, 998.5, 10.0]])
    >>> m = trec_measures(t, s)
    >>> round(m["one_minus_roca_pct"], 4), m["sm_pct_at_hm_0.1"]  # cut: 998, the 2nd highest ham
    (24.775, 25.0)
    """
    y_true = np.asarray(y_true, bool)
    score = np.asarray(score, float)
    ham, spam = np.sort(score[~y_true])[::-1], score[y_true]
    if not len(ham) or not len(spam):
        return {"one_minus_roca_pct": math.nan, "sm_pct_at_hm_0.1": math.nan}
    cut = ham[min(len(ham) - 1, int(math.floor(hm * len(ham))))]
    missed = float((spam < cut).sum() + 0.5 * (spam == cut).sum())
    return {"one_minus_roca_pct": 100.0 * (1.0 - roc_auc(y_true, score)),
            "sm_pct_at_hm_0.1": 100.0 * missed / len(spam)}  # fmt: skip


def roc_points(y_true: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ham misclassification, spam misclassification)`` at every distinct threshold."""
    y_true = np.asarray(y_true, bool)
    order = np.argsort(-np.asarray(score, float), kind="mergesort")
    s, t = np.asarray(score, float)[order], y_true[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # last index of each distinct score
    fp, tp = np.cumsum(~t)[last], np.cumsum(t)[last]
    return fp / max(1, (~t).sum()), 1.0 - tp / max(1, t.sum())


#: The ROC plot's range on both axes (fractions; the TREC plots' 0.01% to 50% / 99%).
ROC_LIMITS = {"ham": (1e-4, 0.5), "spam": (1e-4, 0.99)}


def require_plotting() -> None:
    """Raise :class:`~streamnb.exceptions.MissingExtraError` naming the extra to install when
    matplotlib is missing: call it before the work whose figures are to be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        from streamnb.exceptions import MissingExtraError

        message = "plots need matplotlib: install it with pip install 'streamnb[plot]'"
        raise MissingExtraError(message) from exc


def roc_figure(result: Evaluation) -> Any:
    """The ROC curve as the TREC spam track draws it: ham misclassified against spam
    misclassified, both on logit scales labelled in %, with the default operating point marked.
    Returns the matplotlib ``Figure`` (rates are drawn as fractions, the scale's domain; values
    beyond the range are drawn on its edge)."""
    require_plotting()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    (x_lo, x_hi), (y_lo, y_hi) = ROC_LIMITS["ham"], ROC_LIMITS["spam"]
    hm, sm = roc_points(result.y_true, result.score)
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.plot(np.clip(hm, x_lo, x_hi), np.clip(sm, y_lo, y_hi), label="ROC")
    m = result.metrics
    ax.plot([np.clip(m["ham_misclassified"], x_lo, x_hi)], [np.clip(1 - m["spam_recall"], y_lo, y_hi)], "o",
            color="tab:red",
            label=f"default: ham called spam {m['ham_misclassified']:.2%}, spam missed {1 - m['spam_recall']:.1%}")
    ax.set_xscale("logit")
    ax.set_yscale("logit")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:.4g}%"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("% ham misclassified (logit scale)")
    ax.set_ylabel("% spam misclassified (logit scale)")
    ax.set_title(f"(1-ROCA)% {m['one_minus_roca_pct']:.3f}   sm% @ hm 0.1%: {m['sm_pct_at_hm_0.1']:.1f}", fontsize=9)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_roc(result: Evaluation, path: str | Path) -> None:
    """Draw :func:`roc_figure` to a PNG file."""
    import matplotlib.pyplot as plt

    fig = roc_figure(result)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def roc_auc(y_true: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half); NaN with one class only.

    >>> roc_auc(np.array([0, 0, 1, 1], bool), np.array([0.1, 0.4, 0.35, 0.8]))
    0.75
    """
    y_true = np.asarray(y_true, bool)
    n_pos, n_neg = int(y_true.sum()), int((~y_true).sum())
    if not n_pos or not n_neg:
        return math.nan
    order = np.argsort(score, kind="mergesort")
    s = np.asarray(score)[order]
    ranks = np.empty(len(s))
    # average ranks over ties
    _, first, counts = np.unique(s, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y_true].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def rolling(result: Evaluation, window: int = 500) -> dict[str, np.ndarray]:
    """Metrics over the last ``window`` messages at each position (from ``window`` on)."""
    t, p = result.y_true, result.y_pred

    def run(a: np.ndarray) -> np.ndarray:
        c = np.concatenate([[0.0], np.cumsum(a, dtype=float)])
        return c[window:] - c[:-window]

    tp, fp, tn, fn = run(t & p), run(~t & p), run(~t & ~p), run(t & ~p)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return {
            "accuracy": (tp + tn) / window,
            "spam recall": np.where(tp + fn > 0, tp / (tp + fn), np.nan),
            "ham misclassified": np.where(fp + tn > 0, fp / (fp + tn), np.nan),
            "MCC": np.where(den > 0, (tp * tn - fp * fn) / np.where(den > 0, den, 1.0), np.nan),
        }


def plot(result: Evaluation, path: str | Path, window: int = 500) -> None:
    """Draw the rolling metrics to a PNG file."""
    require_plotting()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    window = max(1, min(window, result.n))
    curves = rolling(result, window)
    x = np.arange(window, result.n + 1)
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name in ("accuracy", "spam recall", "MCC"):
        axes[0].plot(x, curves[name], label=name)
    axes[0].set_ylabel(f"rolling ({window} messages)")
    axes[0].legend(loc="lower right")
    axes[1].plot(x, curves["ham misclassified"], color="tab:red", label="ham misclassified")
    axes[1].set_xlabel("messages seen")
    axes[1].legend(loc="upper right")
    fig.suptitle(" ".join(f"{k}={v:.3f}" for k, v in result.metrics.items() if k in ("accuracy", "spam_recall",
                 "ham_misclassified", "mcc", "roc_auc")), fontsize=8)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """``streamnb evaluate STREAM [--model NAME] [--plot FILE] ...``; prints the metrics."""
    parser = argparse.ArgumentParser(prog="streamnb evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("stream", help='"sms" (bundled SMS Spam Collection) or a JSON-lines file')
    parser.add_argument("--model", choices=MODELS, default="multinomial")
    parser.add_argument("--positive", default="spam", help="the positive (spam) label")
    parser.add_argument("--text-key", default="text")
    parser.add_argument("--label-key", default="label")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many messages")
    parser.add_argument("--window", type=int, default=500, help="rolling window of the plot")
    parser.add_argument("--plot", default=None, help="write the rolling metrics to this PNG")
    parser.add_argument("--roc", default=None, help="write the ROC curve (logit scales) to this PNG")
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")
    args = parser.parse_args(argv)
    if args.plot or args.roc:
        from streamnb.exceptions import MissingExtraError

        try:
            require_plotting()
        except MissingExtraError as exc:
            parser.exit(5, f"streamnb evaluate: {exc}\n")
    model = _models()[args.model]()
    try:
        result = evaluate(model, args.stream, args.positive, args.limit, args.text_key, args.label_key,
                          args.window, args.plot, args.roc)  # fmt: skip
    except (OSError, ValueError) as exc:
        parser.exit(2, f"streamnb evaluate: {exc}\n")
    if args.json:
        print(json.dumps({"n": result.n, **result.metrics}))
    else:
        spams = int(result.y_true.sum())
        print(f"{args.model} on {args.stream}: {result.n} messages ({spams} spam, {result.n - spams} ham), "
              f"each predicted, then learned\n{result.table()}")
        for label, path in (("plot", args.plot), ("ROC curve", args.roc)):
            if path:
                print(f"{label} written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
