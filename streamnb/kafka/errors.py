"""Exceptions of the Kafka service; all derive from :class:`streamnb.StreamnbError`."""

from __future__ import annotations

from streamnb.exceptions import MissingExtraError, StateError, StreamnbError

__all__ = ["BadMessage", "BrokerUnavailableError", "CheckpointAheadError", "ConfigError", "MissingExtraError",
           "ServiceError"]


class BadMessage(StreamnbError, ValueError):
    """A message that cannot be learned or scored; it goes to the dead-letter topic.

    ``reason`` is a short machine-readable code (``"malformed_json"``, ``"not_utf8"``, ...),
    ``detail`` a human-readable explanation.

    >>> str(BadMessage("missing_label", "no field y"))
    'missing_label: no field y'
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class ServiceError(StreamnbError):
    """The service cannot go on (bad configuration, unusable broker, lost state)."""


class ConfigError(ServiceError, ValueError):
    """A configuration file that cannot be read, or a setting of the wrong name or type."""


class BrokerUnavailableError(ServiceError):
    """No broker answered within the allowed time."""


class CheckpointAheadError(ServiceError, StateError):
    """A checkpoint says events were learned that the partition's log does not hold.

    Typically the topic was deleted and recreated, or the broker lost its data: resuming would
    either skip new events or learn some twice, so the service stops and says so.
    """

    def __init__(self, partitions: dict) -> None:
        self.partitions = dict(partitions)
        parts = ", ".join(
            f"{tp} checkpoint at {ckpt} but log ends at {end}" for tp, (ckpt, end) in sorted(partitions.items())
        )
        super().__init__(
            f"checkpoint is beyond the end of the log ({parts}); the topic was probably recreated or "
            "the broker lost its data. Start with a fresh --checkpoint-dir, or pass "
            "--on-checkpoint-ahead=reset to learn these partitions again from their start"
        )
