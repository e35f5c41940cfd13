"""Datasets bundled with streamnb, streamed one event at a time."""

from streamnb.datasets.sms import SMSSpam, sms_spam

__all__ = ["SMSSpam", "sms_spam"]
