"""Spam filtering: a Robinson-Fisher scorer with a calibrated operating point, training regimes,
explanations, mailbox reading (:mod:`streamnb.spam.mailbox`) and the ``streamnb mail`` commands
(:mod:`streamnb.spam.command`)."""

from streamnb.spam.explain import explain, report
from streamnb.spam.filter import SpamFilter
from streamnb.spam.operating import OperatingPoint
from streamnb.spam.robinson import chi2q, fisher, fisher_logit, robinson, significant
from streamnb.spam.training import REGIMES, Trainer
from streamnb.spam.verdict import TokenScore, Verdict

__all__ = ["REGIMES", "OperatingPoint", "SpamFilter", "TokenScore", "Trainer", "Verdict", "chi2q", "explain",
           "fisher", "fisher_logit", "report", "robinson", "significant"]  # fmt: skip
