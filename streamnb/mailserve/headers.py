"""The header lines the daemon adds to a message and reads from it, shared by the listeners and
``streamnb mail serve``'s options (no aiohttp needed)."""

from __future__ import annotations

import re

__all__ = ["HEADER_STYLES", "message_id", "recipient_user", "remove_headers"]


def remove_headers(style: str) -> tuple[str, ...]:
    """The headers of ``--headers STYLE`` a sender may have forged: removed before ours go in."""
    own = ("X-Spam", "X-Spam-Score")
    sa = ("X-Spam-Flag", "X-Spam-Status", "X-Spam-Score")
    return {"streamnb": own, "spamassassin": sa}.get(style, ("X-Spam", *sa))


#: The values of ``--headers``.
HEADER_STYLES = ("streamnb", "spamassassin", "both")

_MESSAGE_ID = re.compile(rb"^message-id:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.IGNORECASE | re.MULTILINE)


def message_id(raw: bytes) -> str | None:
    r"""The ``Message-ID`` of a message's header block, without angle brackets.

    >>> message_id(b"Subject: x\r\nMessage-Id:\r\n <a@b>\r\n\r\nMessage-ID: <c@d>")
    'a@b'
    """
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        end = raw.find(b"\n\n")
    head = raw if end < 0 else raw[:end]
    found = _MESSAGE_ID.search(head)
    if found is None:
        return None
    value = found.group(1).decode("utf-8", "replace").strip().strip("<>").strip()
    return value[:998] or None


def recipient_user(deliver_to: str | None, rcpts: list[str], user: str | None) -> str | None:
    """Whose filter answers, as rspamd reads its request headers: the recipient, ``Deliver-To``,
    else the first ``Rcpt``; only without either, ``User`` (in rspamd the authenticated
    *sender*; taken as the user by clients that name no recipient, as ``streamnb mail classify
    --url --user`` does); None (the shared filter) when there is none. Lower-cased, without
    angle brackets.

    >>> recipient_user(None, ["<Bob@Example.com>", "cyd@example.com"], "ann")
    'bob@example.com'
    >>> recipient_user("dee@example.com", ["bob@example.com"], None), recipient_user("", [], "Ann")
    ('dee@example.com', 'ann')
    """
    for value in (deliver_to, *rcpts, user):
        address = (value or "").strip().strip("<>").strip().lower()
        if address:
            return address
    return None
