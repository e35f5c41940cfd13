"""The milter listener's decisions: the daemon's verdict as headers and an MTA action.

Every message gets ``X-Spam`` (the line ``streamnb mail classify`` prints) and ``X-Spam-Score``
(the spamicity), or SpamAssassin's ``X-Spam-Flag``, ``X-Spam-Status`` and ``X-Spam-Score`` with
``--headers spamassassin`` (:meth:`~streamnb.mailserve.service.Check.headers`); spam at or above ``--reject-above`` is rejected, at or above
``--quarantine-above`` put on hold; the rest is accepted. Whose filter answers is
``--milter-user`` (see :func:`user_key`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses

from streamnb.exceptions import StreamnbError
from streamnb.mailserve.milter import Decision, Envelope, MilterServer
from streamnb.mailserve.headers import remove_headers
from streamnb.mailserve.limits import Budget
from streamnb.mailserve.service import REJECT, MailService

__all__ = ["MILTER_USERS", "UserKey", "start_milter", "user_key", "user_of"]

#: The forms of ``--milter-user``.
MILTER_USERS = ("first-recipient", "header:NAME", "none")

UserKey = Callable[[bytes, Envelope], "str | None"]

_HEADERS = BytesHeaderParser(policy=compat32)


def _normal(address: str) -> str | None:
    user = address.strip().strip("<>").strip().lower()
    return user or None


def user_of(envelope: Envelope) -> str | None:
    """The first recipient, without angle brackets, lower-cased; None if there is none."""
    for rcpt in envelope.rcpts:
        user = _normal(rcpt)
        if user:
            return user
    return None


def recipients(envelope: Envelope) -> set[str]:
    """The envelope's distinct recipients. A message for several is judged by the shared filter
    alone (one milter verdict covers every recipient): no user's own filter, trained by that
    user's reports, tags or rejects it for the others."""
    return {user for user in (_normal(r) for r in envelope.rcpts) if user}


def header_user(raw: bytes, name: str) -> str | None:
    """The first address in the first ``name`` header of the message, lower-cased; None if the
    header is missing or holds no address.

    >>> header_user(b"To: x@y\\r\\nX-Original-To: Ann <Ann@Mail.Test>, bob@mail.test\\r\\n\\r\\nbody", "x-original-to")
    'ann@mail.test'
    >>> header_user(b"Subject: hi\\r\\n\\r\\nX-Original-To: eve@mail.test\\r\\n", "X-Original-To") is None
    True
    """
    end = raw.find(b"\r\n\r\n")
    head = raw if end < 0 else raw[: end + 2]  # the body is never read for a header
    value = _HEADERS.parsebytes(head).get(name)
    if value is None:
        return None
    for _, address in getaddresses([str(value)]):
        user = _normal(address)
        if user:
            return user
    return None


def user_key(spec: str) -> UserKey:
    """What ``--milter-user SPEC`` takes as the user of a message: ``first-recipient`` (the
    envelope's first RCPT TO), ``header:NAME`` (the first address in the message's first NAME
    header, e.g. ``header:X-Original-To``) or ``none`` (no user: the shared filter answers).

    >>> user_key("header:Bad Name")
    Traceback (most recent call last):
    ...
    streamnb.exceptions.StreamnbError: 'header:Bad Name': a header name is printable ASCII without spaces or ':'
    """
    if spec == "first-recipient":
        return lambda raw, envelope: user_of(envelope)
    if spec == "none":
        return lambda raw, envelope: None
    kind, sep, name = spec.partition(":")
    if kind != "header" or not sep:
        raise StreamnbError(f"{spec!r}: expected one of {', '.join(MILTER_USERS)}")
    if not name or any(not "!" <= c <= "~" or c == ":" for c in name):
        raise StreamnbError(f"{spec!r}: a header name is printable ASCII without spaces or ':'")
    return lambda raw, envelope: header_user(raw, name)


def milter_server(service: MailService, timeout: float, max_connections: int, user: str = "first-recipient",
                  budget: Budget | None = None, mta: Iterable[str] = ()) -> MilterServer:  # fmt: skip
    """A milter server answering with ``service``'s verdicts, for the connections handed to it
    (:meth:`MilterServer.serve_accepted`); ``user`` is a ``--milter-user`` form
    (:func:`user_key`); the connections from other addresses than ``mta`` hold what they read
    within ``budget``."""
    key = user_key(user)

    async def decide(raw: bytes, envelope: Envelope) -> Decision:
        start = time.perf_counter()
        check = service.check(raw, key(raw, envelope) if len(recipients(envelope)) <= 1 else None)
        headers = check.headers()
        service.log_check(check, raw, envelope.queue_id, time.perf_counter() - start)
        if check.action == REJECT:
            return Decision(headers, "reject", "message refused as spam")
        if check.quarantine:
            return Decision(headers, "quarantine", f"spam, spamicity {check.score_header}")
        return Decision(headers, "accept")

    return MilterServer(decide, max_message_bytes=service.config.max_bytes, timeout=timeout,
                        max_connections=max_connections,
                        remove_headers=remove_headers(service.config.headers),
                        budget=budget, exempt=mta)  # fmt: skip
