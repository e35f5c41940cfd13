"""rspamd's legacy protocol, ``RSPAMC/1.3``, which Exim's ``spamd_address = ... variant=rspamd``
speaks (Exim's ``src/spam.c``), on the HTTP listener's port.

The request is a command line, headers, a blank line and ``Content-length`` bytes of message::

    CHECK RSPAMC/1.3
    Content-length: 1234
    Queue-Id: 1abcDE-000001-Xy
    From: <ann@example.org>
    Recipient-Number: 1
    Rcpt: <bob@example.com>
    IP: 192.0.2.1

The reply, after which the daemon closes the connection (Exim reads until then)::

    RSPAMD/1.3 0 EX_OK
    Metric: default; True; 7.50 / 5.00 / 15.00
    Action: add header
    Symbol: STREAMNB_SPAM(7.50)

Exim reads the ``Metric`` line with ``sscanf("Metric: default; %7s %lf / %lf / %lf")``: the
verdict word with its semicolon, the score, the score needed to call it spam and the score that
rejects (the score clipped at 100 when ``--reject-above`` is not set); ``spam =`` is true when
the score reaches the second number; ``$spam_action`` is the ``Action``. ``SYMBOLS``, ``REPORT``
and ``PROCESS`` are answered as ``CHECK`` (without the message, for ``PROCESS``); ``PING`` with
``RSPAMD/1.3 0 PONG``. Whose filter answers is read as over HTTP
(:func:`~streamnb.mailserve.headers.recipient_user`).
"""

from __future__ import annotations

from collections.abc import Callable

from streamnb.exceptions import InvalidEventError
from streamnb.mailserve.headers import recipient_user

__all__ = ["COMMANDS", "LegacyRequest", "is_legacy", "reply"]

#: The commands answered.
COMMANDS = (b"CHECK", b"SYMBOLS", b"REPORT", b"REPORT_IFSPAM", b"PROCESS", b"PING")
MAX_HEAD = 64 << 10


def is_legacy(start: bytes) -> bool | None:
    """Whether a connection's first bytes are a legacy request (None: too few to tell)."""
    line, newline, _ = start.partition(b"\n")
    word, space, rest = line.partition(b" ")
    if not space:
        if newline or len(line) > 16:
            return False
        return None if any(c.startswith(line) for c in COMMANDS) else False
    return word in COMMANDS and (rest.startswith(b"RSPAMC/") or (not newline and b"RSPAMC/".startswith(rest[:7])))


class LegacyRequest:
    """A legacy request read in pieces: :meth:`feed` until :attr:`complete`; at most ``max_body``
    bytes of message, of which the first ``max_bytes`` are kept."""

    def __init__(self, max_bytes: int, max_body: int) -> None:
        self.max_bytes = max_bytes
        self.max_body = max_body
        self.head = b""
        self.command = b""
        self.headers: list[tuple[str, str]] = []
        self.length = -1
        self.body = bytearray()
        self.seen = 0
        self.complete = False

    def feed(self, data: bytes) -> None:
        """Take the next bytes; :class:`InvalidEventError` for a request that breaks the protocol
        or its bounds."""
        if self.length < 0:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            cut = 4
            if end < 0:
                end, cut = self.head.find(b"\n\n"), 2
            if end < 0:
                if len(self.head) > MAX_HEAD:
                    raise InvalidEventError(f"a request head over {MAX_HEAD} bytes")
                return
            head, data = self.head[:end], self.head[end + cut:]
            self._parse(head)
        self.seen += len(data)
        if self.seen > self.max_body:
            raise InvalidEventError(f"a message over {self.max_body} bytes")
        room = self.max_bytes - len(self.body)
        if room > 0:
            self.body += data[:room]
        if self.seen >= self.length:
            self.complete = True

    def _parse(self, head: bytes) -> None:
        lines = head.replace(b"\r\n", b"\n").split(b"\n")
        self.command = lines[0].split(b" ", 1)[0]
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                raise InvalidEventError(f"a header line without a colon: {line[:60]!r}")
            try:
                self.headers.append((name.decode("ascii").strip().lower(), value.decode("utf-8").strip()))
            except UnicodeDecodeError:
                raise InvalidEventError(f"header {name[:60]!r} is not UTF-8") from None
        length = self.get("content-length")
        if self.command == b"PING":
            self.length = 0
            return
        if length is None or not length.isdigit():
            raise InvalidEventError("a Content-length header is needed")
        self.length = int(length)
        if self.length > self.max_body:
            raise InvalidEventError(f"a message of {self.length} bytes, over {self.max_body}")

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def user(self) -> str | None:
        return recipient_user(self.get("deliver-to"), [v for k, v in self.headers if k == "rcpt"], self.get("user"))


def reply(request: LegacyRequest, check: Callable[[bytes, str | None], dict]) -> bytes:
    """The reply to a complete request; ``check(message, user)`` is ``/checkv2``'s answer."""
    if request.command == b"PING":
        return b"RSPAMD/1.3 0 PONG\r\n\r\n"
    answer = check(bytes(request.body), request.user())
    score, required = answer["score"], answer["required_score"]
    reject = answer["thresholds"].get("reject", 100.0)
    verdict = "True" if score >= required else "False"
    lines = ["RSPAMD/1.3 0 EX_OK", f"Metric: default; {verdict}; {score:.2f} / {required:.2f} / {reject:.2f}",
             f"Action: {answer['action']}"]  # fmt: skip
    for name, symbol in answer["symbols"].items():
        lines.append(f"Symbol: {name}({symbol['score']:.2f})")
    mid = answer.get("message-id")
    if mid:
        lines.append(f"Message-ID: {mid}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "replace")


def error(message: str) -> bytes:
    """The reply to a request that cannot be answered."""
    text = "".join(c if " " <= c <= "~" else " " for c in message)[:200]
    return f"RSPAMD/1.3 1 EX_ERROR\r\nError: {text}\r\n\r\n".encode("ascii")
