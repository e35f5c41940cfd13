"""Why a message was scored as it was: the tokens that pushed it towards spam or ham.

For a naive Bayes learner a token's contribution is its share of the log-odds
``log P(spam | x) - log P(ham | x)`` (from :meth:`~streamnb.naive_bayes.base.BaseNB.explain_one`;
contributions plus the prior's sum to the log-odds of the prediction). For a
:class:`~streamnb.spam.filter.SpamFilter` it is ``ln f(w) - ln (1 - f(w))`` of each combined
token (they sum to half the difference of Fisher's two chi-square statistics). A River pipeline
is explained through its last step, on the features the earlier steps produce.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from streamnb.spam.filter import SpamFilter
from streamnb.spam.training import Trainer

__all__ = ["explain", "report"]

PRIOR = "(prior)"


def _features(model: Any, x: Any) -> tuple[Any, Any]:
    """The final estimator and the features it sees."""
    from river import compose  # imported here: classifying mail needs neither River's pipelines nor scipy

    if isinstance(model, compose.Pipeline):
        steps = list(model.steps.values())
        for step in steps[:-1]:
            x = step.transform_one(x)
        model = steps[-1]
    if isinstance(model, Trainer):
        model = model.model
    return model, x


def explain(model: Any, x: Any, spam: Hashable = "spam", ham: Hashable = "ham") -> list[tuple[Any, float]]:
    """``[(token, contribution)]``, strongest first; > 0 pushes towards spam.

    For naive Bayes the class prior appears as ``"(prior)"``; unknown tokens are absent.

    >>> import streamnb
    >>> nb = streamnb.MultinomialNB()
    >>> nb.learn_one({"free": 2, "hi": 1}, "spam"); nb.learn_one({"hi": 2}, "ham")
    >>> [(t, round(v, 3)) for t, v in explain(nb, {"free": 1, "hi": 1})]  # ln(0.6/0.25), ln(0.4/0.75)
    [('free', 0.875), ('hi', -0.629), ('(prior)', 0.0)]
    """
    from streamnb.naive_bayes.base import BaseNB

    model, x = _features(model, x)
    if isinstance(model, SpamFilter):
        rows = [(t.token, t.log_odds) for t in model.token_scores(x) if t.used]
    elif isinstance(model, BaseNB):
        if spam not in model.classes or ham not in model.classes:
            return []
        odds = model.explain_one(x).log_odds(spam, ham)
        rows = list(odds.items())
    else:
        raise TypeError(f"cannot explain a {type(model).__name__}")
    return sorted(rows, key=lambda r: -abs(r[1]))


def report(model: Any, x: Any, spam: Hashable = "spam", ham: Hashable = "ham", top: int = 20) -> str:
    """A ``bogofilter -vvv``-like table: per token its counts (filter) and contribution."""
    final, feats = _features(model, x)
    lines = []
    if isinstance(final, SpamFilter):
        verdict = final.classify_one(feats)
        lines.append(f"{'token':<30} {'spam':>7} {'ham':>7} {'f(w)':>8} {'log-odds':>9}")
        scores = sorted((t for t in final.token_scores(feats) if t.used), key=lambda t: -abs(t.f - 0.5))
        for t in scores[:top]:
            lines.append(f"{str(t.token)[:30]:<30} {t.n_spam:>7g} {t.n_ham:>7g} {t.f:>8.4f} {t.log_odds:>+9.3f}")
        lines.append(f"{verdict.label}: I={verdict.score:.4f} S={verdict.spam:.4f} H={verdict.ham:.4f} "
                     f"({verdict.n_tokens} tokens)")  # fmt: skip
    else:
        rows = explain(final, feats, spam, ham)
        lines.append(f"{'token':<30} {'log-odds':>9}")
        lines += [f"{str(t)[:30]:<30} {v:>+9.3f}" for t, v in rows[:top]]
        lines.append(f"total log-odds {sum(v for _, v in rows):+.3f} (spam if > 0)")
    return "\n".join(lines)
