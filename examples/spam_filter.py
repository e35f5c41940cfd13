"""Live spam filtering, prequentially: each SMS is classified, then learned.

streamnb's Tokenizer turns a message (an SMS, or a raw e-mail) into token counts inside a River
pipeline; MultinomialNB and the Robinson-Fisher SpamFilter learn them one message at a time.
At the end, one message is explained token by token, and a wrong label is corrected with
``unlearn_one``. Run: ``python examples/spam_filter.py``.
"""

from __future__ import annotations

import time

from river import compose, metrics

import streamnb
from streamnb.datasets import sms_spam
from streamnb.spam import SpamFilter, Trainer, report
from streamnb.text import Tokenizer


def main() -> None:
    nb = compose.Pipeline(Tokenizer(), streamnb.MultinomialNB(max_features=20_000))
    spam_filter = compose.Pipeline(Tokenizer(), Trainer(SpamFilter(max_tokens=20_000), regime="everything"))
    # binary metrics get booleans (is spam): River 0.26's pos_val with string labels reads 0
    scores = {name: (metrics.Accuracy(), metrics.MCC(), metrics.Recall()) for name in ("nb", "filter")}
    start = time.perf_counter()
    for i, (text, label) in enumerate(sms_spam(), 1):
        for name, model in (("nb", nb), ("filter", spam_filter)):
            pred = model.predict_one(text)
            for m in scores[name]:
                m.update(label == "spam", pred == "spam")
            model.learn_one(text, label)
        if i % 1000 == 0:
            print(f"{i:5d} messages  NB: {'  '.join(map(str, scores['nb']))}  |  filter: {scores['filter'][1]}")
    rate = i / (time.perf_counter() - start)
    for name, (acc, mcc, recall) in scores.items():
        print(f"done {name:6s}: {acc}  {mcc}  spam {recall}")
    print(f"{i} messages, {rate:,.0f} msg/s (both models)")

    message = "URGENT! You have won a 1 week FREE membership in our £100,000 prize Jackpot! Txt CLAIM to 81010"
    print(f"\nwhy {message!r}?\n-- naive Bayes --\n{report(nb, message, top=8)}")
    print(f"-- spam filter --\n{report(spam_filter, message, top=8)}")

    before = nb.predict_proba_one("see you at the jackpot party")["spam"]
    nb.learn_one("see you at the jackpot party", "spam")  # a wrong label...
    nb["MultinomialNB"].unlearn_one(nb["Tokenizer"].transform_one("see you at the jackpot party"), "spam")
    after = nb.predict_proba_one("see you at the jackpot party")["spam"]
    print(f"\nwrong label learned then unlearned: P(spam) {before:.6f} -> {after:.6f}")


if __name__ == "__main__":
    main()
