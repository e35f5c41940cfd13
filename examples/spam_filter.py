"""Live spam filtering, prequentially: each SMS is classified, then learned.

River's BagOfWords turns a message into token counts; streamnb's MultinomialNB learns them
one message at a time. Run: ``python examples/spam_filter.py``.
"""

from __future__ import annotations

import time

from river import compose, feature_extraction, metrics

import streamnb
from streamnb.datasets import sms_spam


def main() -> None:
    model = compose.Pipeline(
        feature_extraction.BagOfWords(lowercase=True),
        streamnb.MultinomialNB(alpha=0.1),
    )
    # binary metrics get booleans (is spam): River 0.26's pos_val with string labels reads 0
    acc, mcc, recall = metrics.Accuracy(), metrics.MCC(), metrics.Recall()
    start = time.perf_counter()
    for i, (text, label) in enumerate(sms_spam(), 1):
        pred = model.predict_one(text)
        if pred is not None:
            for m in (acc, mcc, recall):
                m.update(label == "spam", pred == "spam")
        model.learn_one(text, label)
        if i % 1000 == 0:
            print(f"{i:5d} messages  {acc}  {mcc}  spam {recall}")
    rate = i / (time.perf_counter() - start)
    print(f"done: {i} messages, {rate:,.0f} msg/s  {acc}  {mcc}  spam {recall}")


if __name__ == "__main__":
    main()
