"""The naive Bayes family, all built on :mod:`streamnb.stats`."""

from streamnb.naive_bayes.base import BaseNB, Explanation
from streamnb.naive_bayes.bernoulli import BernoulliNB
from streamnb.naive_bayes.categorical import CategoricalNB
from streamnb.naive_bayes.complement import ComplementNB
from streamnb.naive_bayes.gaussian import GaussianNB
from streamnb.naive_bayes.mixed import MixedNB
from streamnb.naive_bayes.multinomial import MultinomialNB

__all__ = ["BaseNB", "BernoulliNB", "CategoricalNB", "ComplementNB", "Explanation", "GaussianNB", "MixedNB", "MultinomialNB"]
