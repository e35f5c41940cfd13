"""Datasets bundled with streamnb, streamed one event at a time."""

from streamnb.datasets.sms import sms_spam

__all__ = ["sms_spam"]
