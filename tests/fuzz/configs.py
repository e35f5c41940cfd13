"""The learners and wrappers the fuzzer drives, several configurations of each, by name.

Each configuration says which features its streams carry (``features``), which labels it
accepts (``labels``: None for any of the types the docs allow, str, int or bool) and what its
``merge`` promises: ``"exact"`` (the merge of A and B predicts as one learner fed A then B),
``"stats"`` (only the statistics add: the structure stays until the next relearn, or decay
clocks differ; the oracle then checks only that the merged model saves and loads to the same
predictions), or None (no merge). Everything else is asked of the learner itself (``hasattr``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamnb


@dataclass(frozen=True)
class Config:
    name: str
    make: Callable[[], Any]
    features: str  # "cat", "num", "mixed", "tokens", "dag"
    merge: str | None = "exact"
    labels: tuple | None = None
    key: str | None = None  # the field PerKey reads the key from
    #: whether unlearning the event just learned restores the predictions; not with a vocabulary
    #: cap, where learning may prune (documented: the subtraction is then approximate)
    unlearn_exact: bool = True


def _configs() -> list[Config]:
    s = streamnb
    spam = ("spam", "ham")
    dag = [("y", "a"), ("y", "b"), ("a", "c"), ("y", "c")]
    return [
        # naive Bayes
        Config("categorical-nb", lambda: s.CategoricalNB(), "cat"),
        Config("categorical-nb-alpha0", lambda: s.CategoricalNB(alpha=0.0), "cat"),
        Config("categorical-nb-smooth", lambda: s.CategoricalNB(alpha=0.5, unseen="smooth", epsilon=1e-9), "cat"),
        Config("gaussian-nb", lambda: s.GaussianNB(), "num"),
        Config("gaussian-nb-ddof1-nosmoothing", lambda: s.GaussianNB(var_smoothing=0.0, ddof=1), "num"),
        Config("multinomial-nb", lambda: s.MultinomialNB(), "tokens"),
        Config("multinomial-nb-capped", lambda: s.MultinomialNB(alpha=0.5, unseen="smooth", max_features=8), "tokens",
               "stats", unlearn_exact=False),
        Config("bernoulli-nb", lambda: s.BernoulliNB(), "tokens"),
        Config("bernoulli-nb-threshold", lambda: s.BernoulliNB(alpha=0.5, true_threshold=1.0), "tokens"),
        Config("complement-nb", lambda: s.ComplementNB(), "tokens"),
        Config("complement-nb-norm-capped", lambda: s.ComplementNB(norm=True, max_features=8), "tokens", "stats",
               unlearn_exact=False),
        Config("mixed-nb", lambda: s.MixedNB(), "mixed"),
        Config("mixed-nb-eps", lambda: s.MixedNB(alpha=0.1, epsilon=1e-6, var_smoothing=1e-3), "mixed"),
        # learned and given structure
        Config("tan-default", lambda: s.TANClassifier(), "mixed", "stats"),
        Config("tan-relearn1", lambda: s.TANClassifier(relearn_every=1), "mixed", "stats"),
        Config("tan-plain", lambda: s.TANClassifier(edge_penalty=None, swap_margin=0.0, relearn_every=10), "mixed", "stats"),
        Config("tan-categorical", lambda: s.TANClassifier(relearn_every=5, alpha=0.5, cmi_alpha=1.0), "cat", "stats"),
        Config("tan-linear-capped", lambda: s.TANClassifier(relearn_every=7, scales="linear", max_cells=8, max_numeric=1),
               "mixed", "stats"),
        Config("chow-liu-default", lambda: s.ChowLiuClassifier(), "mixed", "stats"),
        Config("chow-liu-relearn1", lambda: s.ChowLiuClassifier(relearn_every=1, cmi_alpha=1.0), "mixed", "stats"),
        Config("aode", lambda: s.AODE(), "mixed"),
        Config("aode-alpha-mincount", lambda: s.AODE(alpha=0.5, min_count=3.0, max_cells=8), "mixed"),
        Config("bayes-net-dag", lambda: s.BayesNetClassifier(dag), "dag"),
        Config("bayes-net-dag-alpha0", lambda: s.BayesNetClassifier(dag, alpha=0.0), "dag"),
        # drift wrappers
        Config("windowed-categorical", lambda: s.Windowed(s.CategoricalNB(), window=40, blocks=4), "cat", None),
        Config("windowed-gaussian", lambda: s.Windowed(s.GaussianNB(), window=20, blocks=2), "num", None),
        Config("windowed-tan", lambda: s.Windowed(s.TANClassifier(), window=60, blocks=3), "mixed", None),
        Config("forgetful-mixed", lambda: s.Forgetful(s.MixedNB(), half_life=50), "mixed", "stats"),
        Config("forgetful-multinomial", lambda: s.Forgetful(s.MultinomialNB(), half_life=20), "tokens", "stats"),
        Config("forgetful-tan-relearn1", lambda: s.Forgetful(s.TANClassifier(relearn_every=1), half_life=30),
               "mixed", "stats"),
        Config("drift-gaussian", lambda: s.DriftTriggered(s.GaussianNB()), "num", None),
        Config("drift-mixed-keep", lambda: s.DriftTriggered(s.MixedNB(), keep=0.5), "mixed", None),
        Config("drift-tan", lambda: s.DriftTriggered(s.TANClassifier(relearn_every=10), keep=None), "mixed", None),
        # per key, spam
        Config("perkey-categorical", lambda: s.PerKey(s.CategoricalNB(), by="key", takeover=5), "cat", key="key"),
        Config("perkey-multinomial", lambda: s.PerKey(s.MultinomialNB(), by="key", learn_shared=False), "tokens",
               key="key"),
        Config("perkey-spam", lambda: s.PerKey(s.SpamFilter(), by="key", takeover=3), "tokens", None, spam, "key"),
        Config("spam-filter", lambda: s.SpamFilter(), "tokens", None, spam),
        Config("spam-filter-capped", lambda: s.SpamFilter(max_tokens=8, max_discriminators=5, logistic_rate=None),
               "tokens", None, spam, unlearn_exact=False),
        Config("trainer-multinomial", lambda: s.Trainer(s.MultinomialNB(), regime="on_error"), "tokens", None),
        # no half_life: a decay between learn_one and unlearn_one makes the subtraction approximate
        Config("trainer-spam", lambda: s.Trainer(s.SpamFilter(), regime="unsure"), "tokens", None, spam),
    ]


CONFIGS: dict[str, Config] = {c.name: c for c in _configs()}
