"""The milter listener's decisions: the daemon's verdict as headers and an MTA action.

Every message gets ``X-Spam`` (the line ``streamnb mail classify`` prints) and ``X-Spam-Score``
(the spamicity); spam at or above ``--reject-above`` is rejected, at or above
``--quarantine-above`` put on hold; the rest is accepted. The user is the first recipient.
"""

from __future__ import annotations

from streamnb.mailserve.milter import Decision, Envelope, MilterServer
from streamnb.mailserve.service import REJECT, MailService

__all__ = ["start_milter", "user_of"]


def user_of(envelope: Envelope) -> str | None:
    """The first recipient, without angle brackets, lower-cased; None if there is none."""
    for rcpt in envelope.rcpts:
        user = rcpt.strip().strip("<>").strip().lower()
        if user:
            return user
    return None


async def start_milter(service: MailService, host: str, port: int, timeout: float,
                       max_connections: int, reuse_port: bool = False) -> MilterServer:  # fmt: skip
    """A milter server answering with ``service``'s verdicts, listening."""

    async def decide(raw: bytes, envelope: Envelope) -> Decision:
        check = service.check(raw, user_of(envelope))
        headers = (("X-Spam", check.header), ("X-Spam-Score", check.score_header))
        if check.action == REJECT:
            return Decision(headers, "reject", "message refused as spam")
        if check.quarantine:
            return Decision(headers, "quarantine", f"spam, spamicity {check.score_header}")
        return Decision(headers, "accept")

    server = MilterServer(decide, max_message_bytes=service.config.max_bytes, timeout=timeout,
                          max_connections=max_connections)  # fmt: skip
    await server.start(host, port, reuse_port)
    return server
