"""streamnb: streaming Bayesian network classifiers with exact, mergeable statistics."""

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
