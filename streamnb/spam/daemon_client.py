"""A client of a running ``streamnb mail serve`` daemon, through its rspamd-compatible HTTP API:
``POST /checkv2`` for a verdict, ``POST /learnspam`` / ``/learnham`` to learn a message (the
daemon moves a message learned before as the other class).

The standard library only (:mod:`http.client`), so that ``streamnb mail classify --url`` starts
in a few milliseconds more than Python itself. Every exchange is bounded: ``timeout`` seconds in
all (connecting, sending, waiting and reading), at most :data:`MAX_REPLY_BYTES` of reply. Any
failure (no daemon, a timeout, an HTTP error status, a reply that is not the documented JSON)
raises :class:`DaemonError` with a one-line message.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from streamnb.exceptions import StreamnbError

__all__ = ["LABELS", "MAX_REPLY_BYTES", "DaemonError", "check", "learn"]

#: Largest reply read from the daemon (a verdict lists one symbol per significant token).
MAX_REPLY_BYTES = 8 << 20
#: The three verdicts of ``streamnb.label`` in a ``/checkv2`` reply.
LABELS = ("ham", "unsure", "spam")


class DaemonError(StreamnbError):
    """The daemon could not be reached or did not answer as documented."""


def check(url: str, message: bytes, user: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """The daemon's ``/checkv2`` reply on ``message`` (for ``user``'s model if given), with its
    ``streamnb`` part checked: ``label`` one of :data:`LABELS`, ``header`` one ``X-Spam:`` line."""
    reply = _post(url, "/checkv2", message, user, timeout)
    verdict = reply.get("streamnb")
    if not isinstance(verdict, dict):
        raise DaemonError(f"{url}: the /checkv2 reply has no 'streamnb' object")
    label, header = verdict.get("label"), verdict.get("header")
    if label not in LABELS:
        raise DaemonError(f"{url}: the /checkv2 reply has label {label!r}, not one of {', '.join(LABELS)}")
    if not isinstance(header, str) or not header.startswith("X-Spam: ") or "\r" in header or "\n" in header:
        raise DaemonError(f"{url}: the /checkv2 reply has no single-line X-Spam header: {_short(header)}")
    return reply


def learn(url: str, message: bytes, label: str, user: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """Have the daemon learn ``message`` as ``label`` (``"spam"`` or ``"ham"``; a message it
    learned before as the other class moves); its reply, whose ``success`` is true."""
    if label not in ("spam", "ham"):
        raise ValueError(f"label must be 'spam' or 'ham', got {label!r}")
    reply = _post(url, f"/learn{label}", message, user, timeout)
    if reply.get("success") is not True:
        reason = reply.get("error") or reply.get("message") or "no reason given"
        raise DaemonError(f"{url}: /learn{label} did not succeed: {_short(reason)}")
    return reply


def _post(url: str, path: str, body: bytes, user: str | None, timeout: float) -> dict[str, Any]:
    """POST ``body`` to ``url`` + ``path``; the JSON object of a 2xx reply."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise DaemonError(f"{url!r} is not a URL: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DaemonError(f"{url!r} is not an http:// or https:// URL")
    if not timeout > 0:
        raise DaemonError(f"the timeout must be positive, got {timeout}")
    headers = {"Content-Type": "message/rfc822", "Content-Length": str(len(body))}
    if user is not None:
        headers["User"] = user
    deadline = time.monotonic() + timeout
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, port, timeout=timeout)
    try:
        conn.connect()
        _set_timeout(conn, deadline)
        conn.request("POST", parts.path.rstrip("/") + path, body=body, headers=headers)
        _set_timeout(conn, deadline)
        resp = conn.getresponse()
        data = _read(conn, resp, deadline)
    except (socket.timeout, TimeoutError) as exc:
        raise DaemonError(f"{url}: no answer within {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise DaemonError(f"{url}: {exc or type(exc).__name__}") from exc
    except ValueError as exc:  # a header value http.client refuses (a line break in --user)
        raise DaemonError(f"{url}: {exc}") from exc
    finally:
        conn.close()
    if not 200 <= resp.status < 300:
        raise DaemonError(f"{url}{path}: HTTP {resp.status} {resp.reason}: {_short(data.decode('utf-8', 'replace'))}")
    try:
        reply = json.loads(data)
    except ValueError as exc:
        raise DaemonError(f"{url}{path}: the reply is not JSON: {_short(data.decode('utf-8', 'replace'))}") from exc
    if not isinstance(reply, dict):
        raise DaemonError(f"{url}{path}: the reply is not a JSON object: {_short(reply)}")
    return reply


def _set_timeout(conn: http.client.HTTPConnection, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    if conn.sock is not None:
        conn.sock.settimeout(remaining)


def _read(conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, deadline: float) -> bytes:
    """The reply body, one system call at a time, so the deadline holds however slowly it comes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        _set_timeout(conn, deadline)
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise DaemonError(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)


def _short(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."
