"""A milter server (the Sendmail mail-filter protocol, version 6, as Postfix speaks it), on asyncio.

An MTA (Postfix ``smtpd_milters = inet:127.0.0.1:PORT``, Sendmail ``INPUT_MAIL_FILTER``) opens a
TCP connection, negotiates options, then streams each message as events (connect, HELO, MAIL,
RCPT, headers, body chunks, end of message). At the end of each message this server rebuilds the
raw RFC 822 message, asks ``decide`` for a :class:`Decision` and answers with header edits plus
accept, reject (``550 5.7.1``), tempfail or quarantine (Postfix: the message goes on hold).

Why the wire protocol is implemented here rather than taken from a library (read in their
released code, versions on the package index in 2026):

- ``kilter.protocol`` 0.6.0 / ``kilter.service`` 0.3.1 (asyncio, pure Python) are marked
  "Development Status :: 1 - Planning"; kilter.service needs Python 3.11 (streamnb supports 3.10)
  plus anyio and async-generator. kilter.protocol has no bound on a packet's length (a client
  announcing 4 GiB makes it wait for more data), a zero-length packet desynchronises its stream
  (it drops 4 of the 5 header bytes), and it decodes HELO names with the ``idna`` codec and macro
  values as ASCII, so an ``xn--`` label or an 8-bit macro value raises out of the parser.
- ``purepythonmilter`` 0.0.1: a single alpha release.
- ``pymilter`` 1.0.5: stable, but a C binding to Sendmail's libmilter (a Debian build dependency)
  with one thread per connection, not asyncio.

The protocol itself is small (length-prefixed packets, a dozen commands), documented by
Sendmail's libmilter and Postfix's ``milter8.c``; what is used here is tested against a real
Postfix (tests/mail).

Bounds: a read timeout per packet and for ``decide``, at most ``max_connections`` connections
(one more is closed at once, so the MTA applies its ``milter_default_action``), packets of at most
:data:`MAX_PACKET_BYTES` (1 MiB and a little), at most ``max_message_bytes`` of each message kept;
with a ``budget`` (:class:`~streamnb.mailserve.limits.Budget`), what the connections from other
addresses than ``exempt`` hold at once (the packet being read and the message being received)
stays within it: a connection that would pass it is closed. A malformed packet closes that
connection (logged); it never stops the server. ``decide`` raising answers TEMPFAIL.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from streamnb.exceptions import StreamnbError
from streamnb.mailserve.limits import READ_BUFFER, Budget, normal_address
from streamnb.mailserve.milter_wire import (
    ACTIONS_WANTED,
    CMD_ABORT,
    CMD_BODY,
    CMD_BODYEOB,
    CMD_CONNECT,
    CMD_DATA,
    CMD_EOH,
    CMD_HEADER,
    CMD_HELO,
    CMD_MACRO,
    CMD_MAIL,
    CMD_OPTNEG,
    CMD_QUIT_NC,
    CMD_RCPT,
    CMD_UNKNOWN,
    Decide,
    Decision,
    Envelope,
    KNOWN_COMMANDS,
    MAX_PACKET_BYTES,
    MESSAGE_COMMANDS,
    MilterProtocolError,
    NO_REPLY_FLAGS,
    PROTOCOL_VERSION,
    PROTO_WANTED,
    REPLY_ADDHEADER,
    REPLY_CHGHEADER,
    REPLY_CONTINUE,
    REPLY_QUARANTINE,
    REPLY_REPLYCODE,
    REPLY_TEMPFAIL,
    smtp_path,
    cstrings,
    header_name,
    encode_packet,
    safe_ascii,
    as_text,
)

__all__ = ["Decide", "Decision", "Envelope", "MilterProtocolError", "MilterServer", "MAX_PACKET_BYTES"]

log = logging.getLogger(__name__)
T = TypeVar("T")
QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class _Message:
    """The state of the message being received on one connection."""

    def __init__(self, max_bytes: int, removed: dict[str, bytes]) -> None:
        self.max_bytes = max_bytes
        self.mail_from = ""
        self.rcpts: list[str] = []
        self.data = bytearray()
        self.in_body = False
        self.forged = dict.fromkeys(removed, 0)

    def add(self, chunk: bytes) -> None:
        room = self.max_bytes - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def header(self, name: bytes, value: bytes) -> None:
        lowered = as_text(name).lower()
        if lowered in self.forged:
            self.forged[lowered] += 1
        # Postfix sends folded values with bare LF (libmilter's convention): back to CRLF
        value = value.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        self.add(name + b": " + value + b"\r\n")

    def end_headers(self) -> None:
        if not self.in_body:
            self.in_body = True
            self.add(b"\r\n")


class MilterServer:
    """An asyncio milter server: ``await start(host, port)``, ``await close()``.

    ``decide(message, envelope)`` is awaited once per message with the raw message (headers as
    the MTA passed them, a blank line, the body; at most ``max_message_bytes``). Headers named in
    ``remove_headers`` that arrive with the message (forged by a sender) are deleted before the
    decision's headers are added.
    """

    def __init__(
        self,
        decide: Decide,
        *,
        max_message_bytes: int = 10 << 20,
        timeout: float = 30.0,
        max_connections: int = 256,
        remove_headers: tuple[str, ...] = ("X-Spam", "X-Spam-Score"),
        budget: Budget | None = None,
        exempt: Iterable[str] = (),
    ) -> None:
        if max_message_bytes < 0 or timeout <= 0 or max_connections < 1:
            raise StreamnbError("max_message_bytes >= 0, timeout > 0 and max_connections >= 1 are needed")
        self.decide = decide  # these four are read by each connection
        self.max_message_bytes = max_message_bytes
        self.timeout = timeout
        self._max_connections = max_connections
        # lower-cased name -> the name as configured, sent back in CHGHEADER
        self.removed = {name.lower(): header_name(name) for name in remove_headers}
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}
        self.budget = budget  # for the connections from outside ``exempt``
        self.exempt = frozenset(normal_address(a) for a in exempt)

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host:port`` (port 0 picks a free one, see :attr:`port`)."""
        if self._server is not None:
            raise StreamnbError("milter server already started")
        self._server = await asyncio.start_server(self._serve, host, port, limit=READ_BUFFER)

    async def serve_accepted(self, conn: socket.socket, done: Callable[[], None] | None = None) -> None:
        """Serve ``conn``, an MTA connection the caller accepted, in a task of its own (counted
        in :attr:`connections` on return); ``done()`` is called when the connection ends."""
        reader, writer = await asyncio.open_connection(sock=conn, limit=READ_BUFFER)
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        if done is not None:
            task.add_done_callback(lambda _: done())
        await asyncio.sleep(0)  # the task's first step: it counts itself

    @property
    def port(self) -> int:
        """The TCP port listened on."""
        if self._server is None or not self._server.sockets:
            raise StreamnbError("milter server not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def connections(self) -> int:
        """The number of MTA connections being served."""
        return len(self._connections)

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        # closing the sockets ends every read; cancelling alone is not enough on Python 3.11,
        # whose wait_for can swallow a cancellation that races with a completed read
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        task = asyncio.current_task()
        if len(self._connections) >= self._max_connections or task is None:
            log.warning("milter: %d connections already, closing the one from %s", len(self._connections), peer)
            writer.close()
            return
        self._connections[task] = writer
        held = isinstance(peer, tuple) and normal_address(str(peer[0])) not in self.exempt
        connection = _Connection(self, reader, writer, self.budget if held else None)
        try:
            await connection.run()
        except (MilterProtocolError, asyncio.IncompleteReadError, TimeoutError, OSError) as err:
            log.warning("milter: connection from %s closed: %s", peer, err or type(err).__name__)
        except asyncio.CancelledError:  # close(): ending quietly (Python 3.11's streams log a cancelled handler)
            pass
        finally:
            connection.release()
            self._connections.pop(task, None)
            writer.close()


class _Connection:
    """One MTA connection: reads packets, answers them, keeps the message state."""

    def __init__(self, server: MilterServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 budget: Budget | None = None) -> None:  # fmt: skip
        self.server = server
        self.budget = budget
        self.charged = 0  # the bytes this connection holds of the budget
        self.reader = reader
        self.writer = writer
        self.negotiated = False
        self.no_reply = 0
        self.client_ip = ""
        self.helo = ""
        self.macros: dict[str, str] = {}
        self.message: _Message | None = None
        self.out = bytearray()  # the replies to one packet, sent in one write (no Nagle delay between them)

    async def read_packet(self) -> tuple[int, bytes] | None:
        try:
            head = await self.within_timeout(self.reader.readexactly(4))
        except asyncio.IncompleteReadError as err:
            if not err.partial:
                return None  # the MTA closed between packets
            raise
        (length,) = struct.unpack("!I", head)
        if length == 0 or length > MAX_PACKET_BYTES:
            raise MilterProtocolError(f"packet length {length} out of 1..{MAX_PACKET_BYTES}")
        self.charge(length)
        data = await self.within_timeout(self.reader.readexactly(length))
        self.ack_now()
        return data[0], data[1:]

    def charge(self, n: int) -> None:
        """Hold ``n`` more bytes of the budget; :class:`MilterProtocolError` if they are not there."""
        if self.budget is None:
            return
        if not self.budget.take(n):
            raise MilterProtocolError(f"{n} bytes more would pass the {self.budget.limit} bytes that clients "
                                      "outside the MTA's addresses may hold")  # fmt: skip
        self.charged += n

    def settle(self) -> None:
        """Hold what the message being received holds (no longer the packet read)."""
        if self.budget is not None:
            self.release()
            self.charge(len(self.message.data) if self.message is not None else 0)

    def release(self) -> None:
        if self.budget is not None:
            self.budget.give(self.charged)
            self.charged = 0

    def ack_now(self) -> None:
        """Acknowledge what was read at once (Linux), rather than with the delayed-ACK timer.

        Postfix writes each packet on its own with Nagle's algorithm on, so a packet that gets no
        reply (a macro, an event negotiated without reply) holds back its next packet until the
        delayed ACK, on every message. Linux clears TCP_QUICKACK by itself: it is set after each read.
        """
        sock = self.writer.get_extra_info("socket")
        if QUICKACK is not None and sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
            except OSError:
                pass

    async def within_timeout(self, waiting: Awaitable[T]) -> T:
        """Await socket I/O; past the timeout the connection is closed (a timer, no task per read)."""
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            self.writer.transport.abort()

        timer = asyncio.get_running_loop().call_later(self.server.timeout, expire)
        try:
            return await waiting
        except (asyncio.IncompleteReadError, ConnectionError):
            if expired:
                raise TimeoutError(f"nothing from the MTA for {self.server.timeout} s") from None
            raise
        finally:
            timer.cancel()

    def reply(self, command: int, payload: bytes = b"") -> None:
        self.out += encode_packet(command, payload)

    def reply_event(self, command: int) -> None:
        if not self.no_reply & NO_REPLY_FLAGS.get(command, 0):
            self.reply(REPLY_CONTINUE)

    async def run(self) -> None:
        while True:
            packet = await self.read_packet()
            if packet is None:
                return
            command, payload = packet
            if not await self.handle(command, payload):
                return
            self.settle()
            if self.out:
                self.writer.write(bytes(self.out))
                self.out.clear()
                await self.within_timeout(self.writer.drain())

    async def handle(self, command: int, payload: bytes) -> bool:
        """Answer one packet; False when the MTA said goodbye."""
        if command not in KNOWN_COMMANDS:
            raise MilterProtocolError(f"unknown command {bytes([command])!r}")
        if not self.negotiated:
            if command != CMD_OPTNEG:
                raise MilterProtocolError(f"command {chr(command)!r} before option negotiation")
            self.negotiate(payload)
            return True
        if command == CMD_OPTNEG:
            raise MilterProtocolError("option negotiation repeated")
        if command in MESSAGE_COMMANDS and self.message is None:
            raise MilterProtocolError(f"command {chr(command)!r} outside a message (no MAIL before)")
        if command == CMD_MACRO:
            self.macro(payload)
        elif command == CMD_CONNECT:
            self.connect(payload)
            self.reply_event(command)
        elif command == CMD_HELO:
            strings = cstrings(payload)
            self.helo = as_text(strings[0])
            self.reply_event(command)
        elif command == CMD_MAIL:
            self.message = _Message(self.server.max_message_bytes, self.server.removed)
            self.message.mail_from = smtp_path(cstrings(payload)[0])
            self.reply_event(command)
        elif command in (CMD_RCPT, CMD_HEADER, CMD_EOH, CMD_BODY):
            self.message_event(command, payload)
            self.reply_event(command)
        elif command in (CMD_DATA, CMD_UNKNOWN):
            self.reply_event(command)
        elif command == CMD_BODYEOB:
            await self.end_of_message(payload)
        elif command == CMD_ABORT:
            self.message = None
        elif command == CMD_QUIT_NC:  # the MTA reuses this connection for another SMTP session
            self.message = None
            self.client_ip = self.helo = ""
            self.macros.clear()
        else:  # CMD_QUIT
            return False
        return True

    def negotiate(self, payload: bytes) -> None:
        if len(payload) < 12:
            raise MilterProtocolError(f"option negotiation of {len(payload)} bytes, 12 needed")
        version, actions, protocol = struct.unpack("!III", payload[:12])
        if version < 2:
            raise MilterProtocolError(f"milter protocol version {version} not supported")
        if actions & ACTIONS_WANTED != ACTIONS_WANTED:
            log.warning("milter: the MTA offers actions %#x, %#x needed to edit headers", actions, ACTIONS_WANTED)
        self.no_reply = protocol & PROTO_WANTED
        self.negotiated = True
        self.reply(CMD_OPTNEG, struct.pack(
            "!III", min(version, PROTOCOL_VERSION), actions & ACTIONS_WANTED, self.no_reply))

    def macro(self, payload: bytes) -> None:
        if not payload:
            raise MilterProtocolError("empty macro packet")
        strings = cstrings(payload[1:]) if len(payload) > 1 else []
        for name, value in zip(strings[::2], strings[1::2]):
            if len(self.macros) < 64 or as_text(name) in self.macros:
                self.macros[as_text(name)] = as_text(value)

    def connect(self, payload: bytes) -> None:
        end = payload.find(b"\x00")
        if end < 0 or end + 1 >= len(payload):
            raise MilterProtocolError("connect packet without an address family")
        family = payload[end + 1:end + 2]
        self.client_ip = ""
        if family in (b"4", b"6"):
            self.client_ip = as_text(cstrings(payload[end + 4:])[0])

    def message_event(self, command: int, payload: bytes) -> None:
        message = self.message
        assert message is not None
        if command == CMD_RCPT:
            if len(message.rcpts) < 1000:
                message.rcpts.append(smtp_path(cstrings(payload)[0]))
        elif command == CMD_HEADER:
            strings = cstrings(payload)
            if len(strings) != 2:
                raise MilterProtocolError("header packet without a name and a value")
            message.header(strings[0], strings[1])
        elif command == CMD_EOH:
            message.end_headers()
        else:
            message.end_headers()
            message.add(payload)

    async def end_of_message(self, payload: bytes) -> None:
        message = self.message
        assert message is not None
        self.message = None
        message.end_headers()
        message.add(payload)
        envelope = Envelope(
            mail_from=message.mail_from,
            rcpts=tuple(message.rcpts),
            client_ip=self.client_ip or self.macros.get("{client_addr}", ""),
            helo=self.helo,
            queue_id=self.macros.get("i", self.macros.get("{i}", "")),
        )
        self.macros.pop("i", None)
        try:
            decision = await asyncio.wait_for(
                self.server.decide(bytes(message.data), envelope), self.server.timeout)
        except Exception:  # the filter's failure must not lose mail: the MTA retries later
            log.exception("milter: decide failed for queue id %r, answering tempfail", envelope.queue_id)
            self.reply(REPLY_TEMPFAIL)
            return
        if decision.action == "reject":
            self.reply(REPLY_REPLYCODE, b"550 5.7.1 " + safe_ascii(decision.reason or "Message rejected as spam") + b"\x00")
            return
        if decision.action == "tempfail":
            self.reply(REPLY_REPLYCODE, b"451 4.7.1 " + safe_ascii(decision.reason or "Try again later") + b"\x00")
            return
        for lowered, count in message.forged.items():
            configured = self.server.removed[lowered]
            for index in range(count, 0, -1):  # from the last, so indexes stay valid
                self.reply(REPLY_CHGHEADER, struct.pack("!I", index) + configured + b"\x00\x00")
        for name, value in decision.headers:
            self.reply(REPLY_ADDHEADER, header_name(name) + b"\x00" + safe_ascii(value) + b"\x00")
        if decision.action == "quarantine":
            self.reply(REPLY_QUARANTINE, safe_ascii(decision.reason or "spam") + b"\x00")
        self.reply(REPLY_CONTINUE)
