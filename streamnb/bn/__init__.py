"""Bayesian network classifiers learned on the stream: TAN, per-class Chow-Liu, AODE, given DAG."""

from streamnb.bn.aode import AODE
from streamnb.bn.chow_liu_classifier import ChowLiuClassifier
from streamnb.bn.network import BayesNetClassifier
from streamnb.bn.tan import TANClassifier

__all__ = ["AODE", "BayesNetClassifier", "ChowLiuClassifier", "TANClassifier"]
