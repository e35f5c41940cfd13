"""The SMS Spam Collection v.1 (Almeida & Gomez Hidalgo, 2011), bundled as a stream.

Copyright T. A. Almeida and J. M. Gomez Hidalgo; provided "for free and with no limitations"
(see ``data/SMSSpamCollection.readme.txt``); UCI lists it as CC BY 4.0. Cite: Almeida, T.A.,
Gomez Hidalgo, J.M., Yamakami, A. *Contributions to the Study of SMS Spam Filtering: New
Collection and Results.* Proc. ACM DocEng 2011.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

__all__ = ["sms_spam"]


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
