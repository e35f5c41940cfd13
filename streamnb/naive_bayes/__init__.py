"""The naive Bayes family, all built on :mod:`streamnb.stats`.

The learners are imported on first use (:mod:`streamnb.lazy_exports`), so that the event
checks of :mod:`streamnb.naive_bayes.values` can be used without them.
"""

from typing import TYPE_CHECKING

from streamnb.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from streamnb.naive_bayes.base import BaseNB, Explanation
    from streamnb.naive_bayes.bernoulli import BernoulliNB
    from streamnb.naive_bayes.categorical import CategoricalNB
    from streamnb.naive_bayes.complement import ComplementNB
    from streamnb.naive_bayes.gaussian import GaussianNB
    from streamnb.naive_bayes.mixed import MixedNB
    from streamnb.naive_bayes.multinomial import MultinomialNB

__all__ = ["BaseNB", "BernoulliNB", "CategoricalNB", "ComplementNB", "Explanation", "GaussianNB", "MixedNB", "MultinomialNB"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BaseNB": "streamnb.naive_bayes.base",
    "Explanation": "streamnb.naive_bayes.base",
    "BernoulliNB": "streamnb.naive_bayes.bernoulli",
    "CategoricalNB": "streamnb.naive_bayes.categorical",
    "ComplementNB": "streamnb.naive_bayes.complement",
    "GaussianNB": "streamnb.naive_bayes.gaussian",
    "MixedNB": "streamnb.naive_bayes.mixed",
    "MultinomialNB": "streamnb.naive_bayes.multinomial",
})  # fmt: skip
