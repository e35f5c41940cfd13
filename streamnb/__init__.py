"""streamnb: streaming Bayesian network classifiers with exact, mergeable statistics.

The public names are imported on first use (:mod:`streamnb.lazy_exports`): ``import streamnb``
alone imports no learner, so ``streamnb mail classify`` loads only what a spam filter needs.
"""

from typing import TYPE_CHECKING

from streamnb.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from streamnb import persistence  # noqa: F401  (streamnb.persistence.save/load)
    from streamnb.bn import AODE, BayesNetClassifier, ChowLiuClassifier, TANClassifier
    from streamnb.drift import DriftTriggered, Forgetful, Windowed
    from streamnb.exceptions import InvalidEventError, StateError, StreamnbError
    from streamnb.naive_bayes import BernoulliNB, CategoricalNB, ComplementNB, GaussianNB, MixedNB, MultinomialNB
    from streamnb.perkey import PerKey
    from streamnb.spam import SpamFilter, Trainer
    from streamnb.text import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "AODE",
    "BayesNetClassifier",
    "BernoulliNB",
    "CategoricalNB",
    "ComplementNB",
    "ChowLiuClassifier",
    "DriftTriggered",
    "Forgetful",
    "GaussianNB",
    "InvalidEventError",
    "MixedNB",
    "MultinomialNB",
    "PerKey",
    "SpamFilter",
    "StateError",
    "StreamnbError",
    "TANClassifier",
    "Tokenizer",
    "Trainer",
    "Windowed",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AODE": "streamnb.bn",
    "BayesNetClassifier": "streamnb.bn",
    "ChowLiuClassifier": "streamnb.bn",
    "TANClassifier": "streamnb.bn",
    "DriftTriggered": "streamnb.drift",
    "Forgetful": "streamnb.drift",
    "Windowed": "streamnb.drift",
    "InvalidEventError": "streamnb.exceptions",
    "StateError": "streamnb.exceptions",
    "StreamnbError": "streamnb.exceptions",
    "BernoulliNB": "streamnb.naive_bayes",
    "CategoricalNB": "streamnb.naive_bayes",
    "ComplementNB": "streamnb.naive_bayes",
    "GaussianNB": "streamnb.naive_bayes",
    "MixedNB": "streamnb.naive_bayes",
    "MultinomialNB": "streamnb.naive_bayes",
    "PerKey": "streamnb.perkey",
    "SpamFilter": "streamnb.spam",
    "Trainer": "streamnb.spam",
    "Tokenizer": "streamnb.text",
}, submodules=["persistence"])  # fmt: skip
