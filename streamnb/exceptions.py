"""Exceptions raised by streamnb.

Every error streamnb raises on purpose derives from :class:`StreamnbError`, so a service can
catch one type, dead-letter the event and carry on. Errors about an event also derive from
``ValueError`` or ``TypeError`` so that generic code handles them as usual.
"""

from __future__ import annotations


class StreamnbError(Exception):
    """Base class of every error streamnb raises on purpose."""


class InvalidEventError(StreamnbError, ValueError):
    """An event (features, label or weight) that cannot be learned or scored.

    The model is left exactly as it was before the call.

    >>> err = InvalidEventError("not a number", feature="age")
    >>> str(err)
    "feature 'age': not a number"
    """

    def __init__(self, reason: str, feature: object = None) -> None:
        self.reason = reason
        self.feature = feature
        super().__init__(reason if feature is None else f"feature {feature!r}: {reason}")


class MissingExtraError(StreamnbError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it
    (``pip install 'streamnb[kafka]'``)."""


class StateError(StreamnbError, ValueError):
    """A saved state that cannot be loaded: corrupt, from an unknown version, or not streamnb's."""
