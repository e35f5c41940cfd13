"""Prequential (test-then-train) evaluation of a binary text classifier over a stream.

Every message is first scored and predicted, then learned: the figures are those a live filter
would have had. The stream is a JSON-lines file (one object per line with a text and a label),
or the bundled SMS corpus by name (``"sms"``). Metrics (the positive class is "spam"):
accuracy, spam recall, ham misclassification rate (hams predicted spam / hams), precision, F1,
MCC and ROC AUC (of the positive-class probability), plus messages per second; rolling
versions over a window can be drawn to a PNG.

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

__all__ = ["MODELS", "Evaluation", "evaluate", "main", "metrics", "plot", "roc_auc", "rolling"]


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

    @property
    def n(self) -> int:
        return len(self.y_true)

    def table(self) -> str:
        return "  ".join(f"{k} {v:.4f}" if k != "msg_per_s" else f"{k} {v:,.0f}" for k, v in self.metrics.items())


def read_stream(stream: str | Path | Iterable, text_key: str = "text", label_key: str = "label") -> Iterator[tuple[Any, Any]]:
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


def evaluate(
    model: Any,
    stream: str | Path | Iterable,
    positive: Any = "spam",
    limit: int | None = None,
    text_key: str = "text",
    label_key: str = "label",
    window: int = 500,
    plot_to: str | Path | None = None,
) -> Evaluation:
    """Test-then-train ``model`` on ``stream``; see the module docstring."""
    truth, pred, score = [], [], []
    start = time.perf_counter()
    for i, (x, y) in enumerate(read_stream(stream, text_key, label_key)):
        if limit is not None and i >= limit:
            break
        proba = model.predict_proba_one(x)
        p = model.predict_one(x)
        truth.append(y == positive)
        pred.append(p == positive)
        score.append(float(proba.get(positive, 0.0)) if proba else 0.5)
        model.learn_one(x, y)
    seconds = time.perf_counter() - start
    result = Evaluation(np.array(truth, dtype=bool), np.array(pred, dtype=bool), np.array(score), seconds)
    result.metrics = metrics(result.y_true, result.y_pred, result.score)
    result.metrics["msg_per_s"] = result.n / seconds if seconds > 0 else math.inf
    if plot_to is not None:
        plot(result, plot_to, window)
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
    return out


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
    fig.suptitle(" ".join(f"{k}={v:.3f}" for k, v in result.metrics.items() if k != "msg_per_s"), fontsize=8)
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
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")
    args = parser.parse_args(argv)
    model = _models()[args.model]()
    try:
        result = evaluate(model, args.stream, args.positive, args.limit, args.text_key, args.label_key,
                          args.window, args.plot)  # fmt: skip
    except (OSError, ValueError) as exc:
        parser.exit(2, f"streamnb evaluate: {exc}\n")
    if args.json:
        print(json.dumps({"n": result.n, **result.metrics}))
    else:
        print(f"{args.model} on {args.stream}: {result.n} messages\n{result.table()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
