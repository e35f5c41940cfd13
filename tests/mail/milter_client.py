"""The MTA's end of a milter connection, packet by packet, for tests that play Postfix's part."""

from __future__ import annotations

import socket
import struct

ALL_ACTIONS = 0x1FF
NR_FLAGS = 0x1000 | 0x2000 | 0x4000 | 0x8000 | 0x10000 | 0x20000 | 0x40000 | 0x80000 | 0x80
POSTFIX_PROTOCOL = 0x1FFFFF  # every protocol flag Postfix 3.7 offers for version 6


def packet(command: bytes, payload: bytes = b"") -> bytes:
    return struct.pack("!I", len(payload) + 1) + command + payload


def cstr(*strings: bytes) -> bytes:
    return b"".join(s + b"\x00" for s in strings)


#: How long a read waits for the server: a bound a busy machine never reaches, not a measure
WAIT = 60.0


class Mta:
    """The MTA's end of a milter connection."""

    def __init__(self, port: int, source: str | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT,
                                             source_address=(source, 0) if source else None)  # fmt: skip

    def send(self, command: bytes, payload: bytes = b"") -> None:
        self.sock.sendall(packet(command, payload))

    def read(self) -> tuple[bytes, bytes]:
        head = self.recv_exactly(5)
        length, command = struct.unpack("!IB", head)
        return bytes([command]), self.recv_exactly(length - 1)

    def recv_exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    def closed_by_server(self) -> bool:
        """True when the server closed the connection (within the socket's timeout, :data:`WAIT`
        unless a test set another; past it, :class:`TimeoutError`)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def negotiate(self, protocol: int = POSTFIX_PROTOCOL) -> tuple[int, int, int]:
        self.send(b"O", struct.pack("!III", 6, ALL_ACTIONS, protocol))
        command, payload = self.read()
        assert command == b"O"
        return struct.unpack("!III", payload)

    def event(self, command: bytes, payload: bytes = b"") -> None:
        """An event packet; with the no-reply flags negotiated the server answers nothing."""
        self.send(command, payload)

    def message(self, headers: list[tuple[bytes, bytes]], body: list[bytes], mail_from: bytes = b"<bob@example.org>",
                rcpts: tuple[bytes, ...] = (b"<alice@mail.test>",), queue_id: bytes = b"4AB12C3") -> None:
        self.send(b"D", b"M" + cstr(b"i", queue_id, b"{mail_addr}", mail_from.strip(b"<>")))
        self.event(b"M", cstr(mail_from, b"SIZE=100"))
        for rcpt in rcpts:
            self.event(b"R", cstr(rcpt))
        for name, value in headers:
            self.event(b"L", cstr(name, value))
        self.event(b"N")
        for chunk in body:
            self.event(b"B", chunk)
        self.send(b"D", b"E" + cstr(b"i", queue_id))
        self.send(b"E")

    def replies_until_final(self) -> list[tuple[bytes, bytes]]:
        replies = [self.read()]
        while replies[-1][0] in (b"h", b"m", b"q", b"i"):
            replies.append(self.read())
        return replies

    def close(self) -> None:
        self.sock.close()
