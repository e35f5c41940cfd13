"""Spam filtering: a Robinson-Fisher scorer, training regimes, explanations."""

from streamnb.spam.explain import explain, report
from streamnb.spam.filter import SpamFilter, TokenScore, Verdict
from streamnb.spam.robinson import chi2q, fisher, robinson, significant
from streamnb.spam.training import REGIMES, Trainer

__all__ = ["REGIMES", "SpamFilter", "TokenScore", "Trainer", "Verdict", "chi2q", "explain", "fisher", "report",
           "robinson", "significant"]  # fmt: skip
