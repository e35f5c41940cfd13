"""The HTTP listener, rspamd-compatible, on aiohttp.

========================  ==============================================================
``POST /checkv2``         the message as the body; headers ``User`` (or ``Deliver-To``),
                          ``Rcpt``, ``From``, ``IP``; JSON ``score``, ``required_score``,
                          ``action``, ``symbols`` (rspamd's) and ``streamnb`` (label,
                          spamicity, threshold, tokens, user, the ``X-Spam`` header line)
``POST /learnspam``       learn the body as spam (``/learnham``: ham) for ``User``; a
                          message learned before as the other class moves; answered once
                          the learn is durable: ``{"success": true, ...}``; 403 without
                          the ``Password`` or from outside ``--secure-ip``
                          (:mod:`streamnb.mailserve.auth`)
``GET /reports``          the last reports (learns against the verdict, newest first;
                          ``?user=NAME``, ``?limit=N``): id, time, user, class, verdict,
                          Message-ID, digest, undone; as the learns, behind the password
``POST /undo?id=N``       undo report N (unlearned exactly, journaled first); 409 when it
                          cannot be (not kept, undone already, learned again since)
``GET /stat``             what the shared filter learned; ``?user=NAME``: that user's too
``GET /auth``             what ``rspamc uptime`` prints, ``/counters`` what ``rspamc
                          counters`` prints, ``/symbols`` and ``/actions`` as rspamd's
                          controller lists them (:mod:`streamnb.mailserve.controller`)
``GET /healthz``          ``{"status": "ok", "pid": N}`` (N: the process that answered)
``GET /metrics``          Prometheus text
``GET /``                 the admin's page, on the listener that learns
                          (:mod:`streamnb.mailserve.console`)
========================  ==============================================================

Errors are JSON ``{"error": "..."}`` with a 4xx status (413 for a body over the hard limit,
429 with ``Retry-After`` for a report over the user's ``--report-rate``, 503 when the daemon is
at its bound of concurrent requests, or when the bodies read for clients outside the MTA's
addresses would pass the ``budget``, :class:`~streamnb.mailserve.limits.Budget`). A body is read
up to ``max_bytes`` for the verdict; the rest, up to ``max_body``, is read and dropped.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from streamnb.exceptions import InvalidEventError, StreamnbError
from streamnb.mailserve import controller
from streamnb.mailserve.auth import Authority
from streamnb.mailserve.headers import message_id, recipient_user
from streamnb.mailserve.limits import Budget, normal_address
from streamnb.mailserve.reports import UndoRefused
from streamnb.mailserve.service import MailService

__all__ = ["answer_check", "make_app", "user_of"]

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:  # pragma: no cover  (aiohttp brings async-timeout on 3.10)
    from async_timeout import timeout as _timeout

log = logging.getLogger("streamnb.mailserve")

SERVICE: web.AppKey[MailService] = web.AppKey("service", MailService)
LIMITS: web.AppKey[dict] = web.AppKey("limits", dict)
_HELD = "streamnb.held"  # a request's bytes in the budget


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def header(request: web.Request, name: str) -> str:
    """A request header's value, stripped ("" if missing); :class:`InvalidEventError` if it is
    not UTF-8 text on one line (aiohttp keeps undecodable bytes as surrogates)."""
    value = request.headers.get(name, "").strip()
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidEventError(f"the {name} header is not UTF-8") from None
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidEventError(f"the {name} header holds control characters")
    return value


def user_of(request: web.Request) -> str | None:
    """Whose filter answers (:func:`~streamnb.mailserve.headers.recipient_user`): ``Deliver-To``,
    else the first ``Rcpt``, else ``User``."""
    rcpts = request.headers.getall("Rcpt", [])
    if rcpts:
        header(request, "Rcpt")  # the same checks as any header
    return recipient_user(header(request, "Deliver-To"), rcpts, header(request, "User"))


def _decompress(data: bytes, keep: int, how: str) -> bytes:
    """The first ``keep`` bytes of a body sent compressed (``Compression: zstd``, what
    ``rspamc -z`` sends), never more however much it expands."""
    if how.lower() != "zstd":
        raise web.HTTPUnsupportedMediaType(reason=f"compression {how!r} is not supported (zstd is)")
    try:
        import zstandard
    except ImportError:
        raise web.HTTPUnsupportedMediaType(reason="zstd bodies need the zstandard package") from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out = bytearray()
            while len(out) < keep:
                chunk = reader.read(min(1 << 16, keep - len(out)))
                if not chunk:
                    break
                out += chunk
    except zstandard.ZstdError as exc:
        if not out:  # (a stream cut at max_bytes ends in an error after its output)
            raise InvalidEventError(f"the body is not zstd: {exc}") from None
    return bytes(out)


def _hold(request: web.Request, n: int) -> None:
    """Count ``n`` bytes kept for ``request`` in the budget of clients outside the MTA's
    addresses (given back when the request ends); 503 if they are not there."""
    limits = request.app[LIMITS]
    budget: Budget | None = limits["budget"]
    if budget is None or normal_address(request.remote or "") in limits["mta"]:
        return
    if not budget.take(n):
        raise web.HTTPServiceUnavailable(reason="too many bytes held for clients outside the MTA's addresses")
    request[_HELD] = request.get(_HELD, 0) + n


async def _body(request: web.Request) -> bytes:
    limits = request.app[LIMITS]
    keep, cap = limits["max_bytes"], limits["max_body"]
    compression = header(request, "Compression")
    if request.content_length is not None and request.content_length > cap:
        raise web.HTTPRequestEntityTooLarge(max_size=cap, actual_size=request.content_length)
    chunks, kept, seen = [], 0, 0
    while True:
        chunk = await request.content.read(1 << 16)
        if not chunk:
            break
        seen += len(chunk)
        if seen > cap:
            raise web.HTTPRequestEntityTooLarge(max_size=cap, actual_size=seen)
        if kept < keep:
            chunks.append(chunk[: keep - kept])
            _hold(request, len(chunks[-1]))
            kept += len(chunks[-1])
    raw = b"".join(chunks)
    if not compression:
        return raw
    plain = _decompress(raw, keep, compression)
    _hold(request, len(plain))
    return plain


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """Bounded concurrency and time; every failure a JSON error, never a stopped daemon."""
    limits = request.app[LIMITS]
    service = request.app[SERVICE]
    if limits["inflight"] >= limits["max_connections"] and normal_address(request.remote or "") not in limits["mta"]:
        service.metrics.errors.labels("busy").inc()
        return _error(503, "too many requests in progress")
    limits["inflight"] += 1
    try:
        async with _timeout(limits["timeout"]):  # no task per request, unlike wait_for
            return await handler(request)
    except web.HTTPException as exc:
        if exc.status >= 400:
            service.metrics.errors.labels(str(exc.status)).inc()
            return _error(exc.status, exc.reason)
        raise
    except asyncio.TimeoutError:
        service.metrics.errors.labels("timeout").inc()
        return _error(408, "request timed out")
    except StreamnbError as exc:
        service.metrics.errors.labels("invalid").inc()
        return _error(400, str(exc))
    except ConnectionError:  # the client left in the middle of its request: nobody to answer
        service.metrics.errors.labels("aborted").inc()
        return _error(400, "connection lost")
    except Exception:  # a defect: an error reply, logged, never a plain-text page
        log.exception("%s %s failed", request.method, request.path)
        service.metrics.errors.labels("internal").inc()
        return _error(500, "internal error (logged)")
    finally:
        limits["inflight"] -= 1
        if limits["budget"] is not None:
            limits["budget"].give(request.get(_HELD, 0))


def answer_check(service: MailService, raw: bytes, user: str | None, queue_id: str) -> dict[str, Any]:
    """``/checkv2``'s answer to a message (logged): rspamd's fields and streamnb's."""
    start = time.perf_counter()
    check = service.check(raw, user)
    reply = check.rspamd()
    mid = message_id(raw)
    if mid is not None:
        reply["message-id"] = mid
    reply["time_real"] = round(time.perf_counter() - start, 6)
    service.log_check(check, raw, queue_id, reply["time_real"])
    return reply


async def checkv2(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    raw = await _body(request)
    return web.json_response(answer_check(service, raw, user_of(request), header(request, "Queue-Id")))


async def ping(request: web.Request) -> web.Response:
    return web.Response(text="pong\r\n")


async def _refused(request: web.Request) -> web.Response | None:
    """The error reply to a learn (or a report's listing or undo) this request may not make."""
    service = request.app[SERVICE]
    limits = request.app[LIMITS]
    if not limits["learn"]:
        service.metrics.errors.labels("forbidden").inc()
        return _error(403, "learning is on the controller listener (--controller)")
    authority: Authority | None = limits["authority"]
    if authority is not None and not await authority.allows(request.remote, header(request, "Password") or None):
        service.metrics.errors.labels("forbidden").inc()
        return _error(403, "learning needs the password (Password header) or an address of --secure-ip")
    return None


async def _learn(request: web.Request, label: str) -> web.Response:
    refused = await _refused(request)
    if refused is not None:
        return refused
    raw = await _body(request)
    if not raw.strip():
        return _error(400, "empty message")
    status, doc = await request.app[SERVICE].learn_answer(raw, user_of(request), label)
    headers = {"Retry-After": str(doc["retry_after"])} if "retry_after" in doc else None
    return web.json_response(doc, status=status, headers=headers)


def _int(request: web.Request, name: str, default: int | None = None) -> int:
    value = request.query.get(name)
    if value is None and default is not None:
        return default
    if value is None or not value.isdigit():
        raise InvalidEventError(f"?{name}= needs a number, got {value!r}")
    return int(value)


async def reports(request: web.Request) -> web.Response:
    refused = await _refused(request)
    if refused is not None:
        return refused
    user = request.query.get("user")
    listing = request.app[SERVICE].reports(user.lower() if user else None, every_user=user is None,
                                           limit=_int(request, "limit", 100))  # fmt: skip
    return web.json_response({"reports": listing})


async def undo(request: web.Request) -> web.Response:
    refused = await _refused(request)
    if refused is not None:
        return refused
    try:
        entry = await request.app[SERVICE].undo(_int(request, "id"))
    except UndoRefused as exc:
        return _error(409, str(exc))
    return web.json_response({"success": entry["undone"]["applied"], "report": entry})


async def learnspam(request: web.Request) -> web.Response:
    return await _learn(request, "spam")


async def learnham(request: web.Request) -> web.Response:
    return await _learn(request, "ham")


async def stat(request: web.Request) -> web.Response:
    user = request.query.get("user")
    return web.json_response(request.app[SERVICE].stat(user.lower() if user else None))


async def auth(request: web.Request) -> web.Response:
    read_only = not request.app[LIMITS]["learn"]
    return web.json_response(controller.auth(request.app[SERVICE], read_only))


async def counters(request: web.Request) -> web.Response:
    return web.json_response(controller.counters(request.app[SERVICE]))


async def symbols(request: web.Request) -> web.Response:
    return web.json_response(controller.symbols(request.app[SERVICE]))


async def actions(request: web.Request) -> web.Response:
    return web.json_response(controller.actions(request.app[SERVICE]))


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "pid": os.getpid()})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[SERVICE].metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_app(service: MailService, max_bytes: int, max_body: int = 64 << 20, timeout: float = 30.0,
             max_connections: int = 256, authority: Authority | None = None, learn: bool = True,
             mta: Iterable[str] = (), console: bool = False,
             budget: Budget | None = None) -> web.Application:  # fmt: skip
    """The aiohttp application of the HTTP listener: learns are allowed as ``authority`` says
    (None: every learn, for the daemon's private socket), none at all unless ``learn``; the
    ``mta`` addresses are served beyond ``max_connections`` requests in progress (their
    connections are bounded by the listener's slots), so slow clients elsewhere cannot hold
    every request slot the MTA needs. With ``console`` (and an ``authority``) it serves the
    admin's page (:mod:`streamnb.mailserve.console`) at ``GET /``. The bodies read for other
    addresses than ``mta`` are held within ``budget`` (None: no bound but each body's)."""
    app = web.Application(middlewares=[_guard], client_max_size=max_body)
    app[SERVICE] = service
    app[LIMITS] = {"max_bytes": max_bytes, "max_body": max_body, "timeout": timeout,
                   "max_connections": max_connections, "inflight": 0, "authority": authority,
                   "learn": learn, "mta": frozenset(normal_address(a) for a in mta),
                   "budget": budget}  # fmt: skip
    app.router.add_post("/checkv2", checkv2)
    app.router.add_post("/learnspam", learnspam)
    app.router.add_post("/learnham", learnham)
    app.router.add_get("/reports", reports)
    app.router.add_post("/undo", undo)
    app.router.add_get("/stat", stat)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/ping", ping)
    app.router.add_get("/auth", auth)
    app.router.add_get("/counters", counters)
    app.router.add_get("/symbols", symbols)
    app.router.add_get("/actions", actions)
    app.router.add_get("/metrics", metrics)
    if console and authority is not None:
        from streamnb.mailserve.console import add_console

        add_console(app, service, authority, os.getpid())
    return app
