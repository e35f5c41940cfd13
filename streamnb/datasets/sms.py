"""The SMS Spam Collection v.1 (Almeida & Gomez Hidalgo, 2011), bundled as a stream.

Copyright T. A. Almeida and J. M. Gomez Hidalgo; provided "for free and with no limitations"
(see ``data/SMSSpamCollection.readme.txt``); UCI lists it as CC BY 4.0. Cite: Almeida, T.A.,
Gomez Hidalgo, J.M., Yamakami, A. *Contributions to the Study of SMS Spam Filtering: New
Collection and Results.* Proc. ACM DocEng 2011.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

from river.datasets import base

__all__ = ["SMSSpam", "sms_spam"]


def sms_spam() -> Iterator[tuple[str, str]]:
    """Yield ``(text, label)`` for the 5,574 messages in file order; labels ``ham``/``spam``.

    >>> stream = list(sms_spam())
    >>> len(stream), sum(label == "spam" for _, label in stream)
    (5574, 747)
    """
    path = resources.files("streamnb.datasets").joinpath("data/SMSSpamCollection")
    with path.open(encoding="utf-8") as f:
        for line in f:
            label, text = line.rstrip("\n").split("\t", 1)
            yield text, label


class SMSSpam(base.Dataset):
    """The same messages in the shape of River's ``datasets.SMSSpam``: ``({"body": text}, is_spam)``.

    Bundled (River's downloads the file), in file order; the text is that of :func:`sms_spam`
    (River's keeps each line's trailing newline).

    >>> x, y = next(iter(SMSSpam()))
    >>> x["body"][:30], y
    ('Go until jurong point, crazy..', False)

    In a River evaluation (``streamnb.Tokenizer(on="body")`` reads the field):

    >>> from river import compose, evaluate, metrics
    >>> from streamnb import SpamFilter, Tokenizer
    >>> model = compose.Pipeline(Tokenizer(on="body"), SpamFilter())
    >>> result = evaluate.progressive_val_score(SMSSpam(), model, metrics.Accuracy())
    """

    def __init__(self) -> None:
        super().__init__(task=base.BINARY_CLF, n_features=1, n_samples=5_574)

    def __iter__(self) -> Iterator[tuple[dict[str, str], bool]]:
        for text, label in sms_spam():
            yield {"body": text}, label == "spam"
