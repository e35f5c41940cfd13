"""Why a prediction: per-feature log-likelihood contributions per class, plus the log prior."""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["Explanation"]


class Explanation(dict):
    """Per-feature log-likelihood contributions per class, plus the log prior.

    ``explanation[feature][cls]`` is ``log P(x_feature | cls)``; ``.log_prior[cls]`` is
    ``log P(cls)``; ``.joint()`` sums them, and ``.log_odds(a, b)`` breaks the log-odds of two
    classes down by feature.
    """

    def __init__(self, log_prior: dict, contributions: dict) -> None:
        super().__init__(contributions)
        self.log_prior = log_prior

    def joint(self) -> dict:
        return {c: lp + sum(f[c] for f in self.values()) for c, lp in self.log_prior.items()}

    def log_odds(self, a: Hashable, b: Hashable) -> dict:
        """``{feature: contribution to log P(a|x) - log P(b|x)}``, plus ``'(prior)'``."""
        out = {f: v[a] - v[b] for f, v in self.items()}
        out["(prior)"] = self.log_prior[a] - self.log_prior[b]
        return out
