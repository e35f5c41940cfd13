"""Bayesian network classifiers learned on the stream: TAN, per-class Chow-Liu, AODE, given DAG."""

from streamnb.bn.tan import ChowLiuClassifier, TANClassifier

__all__ = ["ChowLiuClassifier", "TANClassifier"]
