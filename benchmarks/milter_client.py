"""A load client playing the MTA's side of the milter protocol (as Postfix does: version 6, the
no-reply flags, one connection per client carrying message after message), for
``bench_mail_serve.py``."""

from __future__ import annotations

import asyncio
import re
import struct
import time

ALL_ACTIONS = 0x1FF
POSTFIX_PROTOCOL = 0x1FFFFF
FOLD = re.compile(rb"\r?\n(?=[ \t])")


def _packet(command: bytes, payload: bytes = b"") -> bytes:
    return struct.pack("!I", len(payload) + 1) + command + payload


def _cstr(*strings: bytes) -> bytes:
    return b"".join(s + b"\x00" for s in strings)


def _events(raw: bytes, i: int) -> bytes:
    """The packets of one message, up to its end-of-body."""
    head, _, body = raw.replace(b"\r\n", b"\n").partition(b"\n\n")
    out = [_packet(b"D", b"M" + _cstr(b"i", b"Q%d" % i)), _packet(b"M", _cstr(b"<bob@example.org>")),
           _packet(b"R", _cstr(b"<user%d@mail.test>" % (i % 20)))]  # fmt: skip
    for line in FOLD.sub(b" ", head).split(b"\n"):
        name, sep, value = line.partition(b":")
        if sep and name and b"\x00" not in line:
            out.append(_packet(b"L", _cstr(name, value.strip())))
    out.append(_packet(b"N"))
    body = body.replace(b"\n", b"\r\n")
    for start in range(0, len(body), 65536):
        out.append(_packet(b"B", body[start : start + 65536]))
    out.append(_packet(b"E"))
    return b"".join(out)


async def _read(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    length, command = struct.unpack("!IB", await reader.readexactly(5))
    return bytes([command]), await reader.readexactly(length - 1)


async def _client(port: int, queue: list[tuple[int, bytes]], latencies: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, POSTFIX_PROTOCOL)))
    command, _ = await _read(reader)
    assert command == b"O"
    writer.write(_packet(b"C", _cstr(b"client.example.org") + b"4" + struct.pack("!H", 25) + _cstr(b"127.0.0.1")))
    writer.write(_packet(b"H", _cstr(b"client.example.org")))
    while queue:
        i, raw = queue.pop()
        start = time.perf_counter()
        writer.write(_events(raw, i))
        while True:  # header edits, then the final reply
            command, _ = await _read(reader)
            if command in (b"a", b"c", b"y", b"t", b"r"):
                break
        latencies.append(time.perf_counter() - start)
    writer.write(_packet(b"Q"))
    writer.close()


def check_many(port: int, messages: list[bytes], clients: int) -> tuple[float, float, float]:
    """(p50 ms, p99 ms, messages per second) of ``messages`` over ``clients`` connections."""
    queue = list(enumerate(messages))
    latencies: list[float] = []

    async def run() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(_client(port, queue, latencies) for _ in range(clients)))
        return time.perf_counter() - start

    wall = asyncio.run(run())
    ms = sorted(v * 1000 for v in latencies)
    return ms[len(ms) // 2], ms[min(len(ms) - 1, int(0.99 * len(ms)))], len(ms) / wall
