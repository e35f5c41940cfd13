"""The milter protocol's wire format (version 6, as Sendmail's libmilter and Postfix's
``milter8.c`` document it): commands, replies, option bits, packets, and the values a server
hands to its ``decide`` (:class:`Envelope`) and gets back (:class:`Decision`). The server is
:mod:`streamnb.mailserve.milter`."""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from streamnb.exceptions import StreamnbError

__all__ = [
    "ACTIONS",
    "ACTIONS_WANTED",
    "ACTION_ADDHDRS",
    "ACTION_CHGHDRS",
    "ACTION_QUARANTINE",
    "CMD_ABORT",
    "CMD_BODY",
    "CMD_BODYEOB",
    "CMD_CONNECT",
    "CMD_DATA",
    "CMD_EOH",
    "CMD_HEADER",
    "CMD_HELO",
    "CMD_MACRO",
    "CMD_MAIL",
    "CMD_OPTNEG",
    "CMD_QUIT",
    "CMD_QUIT_NC",
    "CMD_RCPT",
    "CMD_UNKNOWN",
    "Decide",
    "Decision",
    "Envelope",
    "KNOWN_COMMANDS",
    "MAX_PACKET_BYTES",
    "MESSAGE_COMMANDS",
    "MilterProtocolError",
    "NO_REPLY_FLAGS",
    "PROTOCOL_VERSION",
    "PROTO_NODATA",
    "PROTO_NOUNKNOWN",
    "PROTO_WANTED",
    "REPLY_ACCEPT",
    "REPLY_ADDHEADER",
    "REPLY_CHGHEADER",
    "REPLY_CONTINUE",
    "REPLY_QUARANTINE",
    "REPLY_REPLYCODE",
    "REPLY_TEMPFAIL",
    "smtp_path",
    "cstrings",
    "header_name",
    "encode_packet",
    "safe_ascii",
    "as_text",
]

MAX_PACKET_BYTES = (1 << 20) + 1024
"""The longest packet accepted: a command and 1 MiB of data (the most any MTA sends: Postfix's
body chunks are at most 64 KiB, Sendmail's at most 1 MiB with ``MDS_1M``), plus a little. A
longer length closes the connection before anything of it is read, so a connection holds at most
about this much of a packet in memory."""

PROTOCOL_VERSION = 6

# commands, MTA -> filter
CMD_ABORT = ord("A")
CMD_BODY = ord("B")
CMD_CONNECT = ord("C")
CMD_MACRO = ord("D")
CMD_BODYEOB = ord("E")
CMD_HELO = ord("H")
CMD_QUIT_NC = ord("K")
CMD_HEADER = ord("L")
CMD_MAIL = ord("M")
CMD_EOH = ord("N")
CMD_OPTNEG = ord("O")
CMD_QUIT = ord("Q")
CMD_RCPT = ord("R")
CMD_DATA = ord("T")
CMD_UNKNOWN = ord("U")

# replies, filter -> MTA
REPLY_ACCEPT = ord("a")
REPLY_CONTINUE = ord("c")
REPLY_ADDHEADER = ord("h")
REPLY_CHGHEADER = ord("m")
REPLY_QUARANTINE = ord("q")
REPLY_TEMPFAIL = ord("t")
REPLY_REPLYCODE = ord("y")

# actions the filter asks for (SMFIF_*)
ACTION_ADDHDRS = 0x01
ACTION_CHGHDRS = 0x10
ACTION_QUARANTINE = 0x20
ACTIONS_WANTED = ACTION_ADDHDRS | ACTION_CHGHDRS | ACTION_QUARANTINE

# protocol flags (SMFIP_*): skip the events not needed, and no reply to the ones that need none
PROTO_NOUNKNOWN = 0x100
PROTO_NODATA = 0x200
NO_REPLY_FLAGS = {
    CMD_CONNECT: 0x1000,
    CMD_HELO: 0x2000,
    CMD_MAIL: 0x4000,
    CMD_RCPT: 0x8000,
    CMD_DATA: 0x10000,
    CMD_UNKNOWN: 0x20000,
    CMD_EOH: 0x40000,
    CMD_BODY: 0x80000,
    CMD_HEADER: 0x80,
}
PROTO_WANTED = PROTO_NOUNKNOWN | PROTO_NODATA
for _flag in NO_REPLY_FLAGS.values():
    PROTO_WANTED |= _flag

# commands of a message, valid only between MAIL and the end of the message
MESSAGE_COMMANDS = frozenset({CMD_RCPT, CMD_DATA, CMD_HEADER, CMD_EOH, CMD_BODY, CMD_BODYEOB})
KNOWN_COMMANDS = frozenset({
    CMD_ABORT, CMD_BODY, CMD_CONNECT, CMD_MACRO, CMD_BODYEOB, CMD_HELO, CMD_QUIT_NC, CMD_HEADER,
    CMD_MAIL, CMD_EOH, CMD_OPTNEG, CMD_QUIT, CMD_RCPT, CMD_DATA, CMD_UNKNOWN,
})
ACTIONS = ("accept", "reject", "quarantine", "tempfail")


class MilterProtocolError(StreamnbError, ValueError):
    """A packet from the MTA that breaks the milter protocol; its connection is closed."""


@dataclass(frozen=True)
class Envelope:
    """What the MTA told us about a message (SMTP envelope, client, queue id)."""

    mail_from: str
    rcpts: tuple[str, ...]
    client_ip: str
    helo: str
    queue_id: str


@dataclass(frozen=True)
class Decision:
    """The verdict on one message: headers to add and what the MTA does with it.

    >>> Decision(action="discard")
    Traceback (most recent call last):
    ...
    streamnb.exceptions.StreamnbError: unknown milter action 'discard'
    """

    headers: tuple[tuple[str, str], ...] = ()
    action: str = "accept"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise StreamnbError(f"unknown milter action {self.action!r}")


Decide = Callable[[bytes, Envelope], Awaitable[Decision]]


def as_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def cstrings(payload: bytes) -> list[bytes]:
    """The NUL-terminated strings of a payload (the last one must be terminated).

    >>> cstrings(b"<a@b>\\x00SIZE=10\\x00")
    [b'<a@b>', b'SIZE=10']
    """
    if not payload.endswith(b"\x00"):
        raise MilterProtocolError("string not NUL-terminated")
    return payload[:-1].split(b"\x00")


def smtp_path(raw: bytes) -> str:
    """An SMTP path without its angle brackets.

    >>> smtp_path(b"<Joe@Example.org>"), smtp_path(b"<>")
    ('Joe@Example.org', '')
    """
    text = as_text(raw).strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    return text


def safe_ascii(text: str, limit: int = 900) -> bytes:
    """Text for a reply or a header value: printable ASCII on one line, no NUL, bounded.

    >>> safe_ascii("bad\\r\\nBcc: x\\x00 100%")
    b'bad  Bcc: x  100'
    """
    cleaned = "".join(c if " " <= c <= "~" and c != "%" else " " for c in text).rstrip()
    return cleaned[:limit].encode("ascii")


def header_name(name: str) -> bytes:
    if not name or any(not "!" <= c <= "~" or c == ":" for c in name):
        raise MilterProtocolError(f"invalid header name {name!r}")
    return name.encode("ascii")


def encode_packet(command: int, payload: bytes = b"") -> bytes:
    return struct.pack("!IB", len(payload) + 1, command) + payload
