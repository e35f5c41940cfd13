"""The HTTP listener, rspamd-compatible, on aiohttp.

========================  ==============================================================
``POST /checkv2``         the message as the body; headers ``User`` (or ``Deliver-To``),
                          ``Rcpt``, ``From``, ``IP``; JSON ``score``, ``required_score``,
                          ``action``, ``symbols`` (rspamd's) and ``streamnb`` (label,
                          spamicity, threshold, tokens, user, the ``X-Spam`` header line)
``POST /learnspam``       learn the body as spam (``/learnham``: ham) for ``User``; a
                          message learned before as the other class moves; answered once
                          the learn is durable: ``{"success": true, ...}``
``GET /stat``             what the shared filter learned; ``?user=NAME``: that user's too
``GET /healthz``          ``{"status": "ok", "pid": N}`` (N: the process that answered)
``GET /metrics``          Prometheus text
========================  ==============================================================

Errors are JSON ``{"error": "..."}`` with a 4xx status (413 for a body over the hard limit,
503 when the daemon is at its bound of concurrent requests). A body is read up to
``max_bytes`` for the verdict; the rest, up to ``max_body``, is read and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from streamnb.exceptions import InvalidEventError, StreamnbError
from streamnb.mailserve.forward import WriterError
from streamnb.mailserve.service import MailService

__all__ = ["make_app"]

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:  # pragma: no cover  (aiohttp brings async-timeout on 3.10)
    from async_timeout import timeout as _timeout

log = logging.getLogger("streamnb.mailserve")

SERVICE: web.AppKey[MailService] = web.AppKey("service", MailService)
LIMITS: web.AppKey[dict] = web.AppKey("limits", dict)


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
    """The user key: the ``User`` header, else ``Deliver-To``; None (the shared filter) if neither."""
    for name in ("User", "Deliver-To"):
        value = header(request, name)
        if value:
            return value.lower()
    return None


async def _body(request: web.Request) -> bytes:
    limits = request.app[LIMITS]
    keep, cap = limits["max_bytes"], limits["max_body"]
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
            kept += len(chunks[-1])
    return b"".join(chunks)


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """Bounded concurrency and time; every failure a JSON error, never a stopped daemon."""
    limits = request.app[LIMITS]
    service = request.app[SERVICE]
    if limits["inflight"] >= limits["max_connections"]:
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
    except Exception:  # a defect: an error reply, logged, never a plain-text page
        log.exception("%s %s failed", request.method, request.path)
        service.metrics.errors.labels("internal").inc()
        return _error(500, "internal error (logged)")
    finally:
        limits["inflight"] -= 1


async def checkv2(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    raw = await _body(request)
    return web.json_response(service.check(raw, user_of(request)).rspamd())


async def _learn(request: web.Request, label: str) -> web.Response:
    service = request.app[SERVICE]
    raw = await _body(request)
    if not raw.strip():
        return _error(400, "empty message")
    try:
        learned = await service.learn(raw, user_of(request), label)
    except OSError as exc:  # the journal could not be written: not learned durably
        service.metrics.errors.labels("journal").inc()
        return _error(500, f"could not write the journal: {exc}")
    except WriterError as exc:  # a check worker relays the writing process's answer
        service.metrics.errors.labels("writer").inc()
        return _error(exc.status, str(exc))
    return web.json_response({"success": True, "class": learned.label, "user": learned.user,
                              "moved_from": learned.moved_from, "already": learned.already})  # fmt: skip


async def learnspam(request: web.Request) -> web.Response:
    return await _learn(request, "spam")


async def learnham(request: web.Request) -> web.Response:
    return await _learn(request, "ham")


async def stat(request: web.Request) -> web.Response:
    user = request.query.get("user")
    return web.json_response(request.app[SERVICE].filters.stat(user.lower() if user else None))


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "pid": os.getpid()})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[SERVICE].metrics.exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_app(service: MailService, max_bytes: int, max_body: int = 64 << 20, timeout: float = 30.0,
             max_connections: int = 256) -> web.Application:  # fmt: skip
    """The aiohttp application of the HTTP listener."""
    app = web.Application(middlewares=[_guard], client_max_size=max_body)
    app[SERVICE] = service
    app[LIMITS] = {"max_bytes": max_bytes, "max_body": max_body, "timeout": timeout,
                   "max_connections": max_connections, "inflight": 0}  # fmt: skip
    app.router.add_post("/checkv2", checkv2)
    app.router.add_post("/learnspam", learnspam)
    app.router.add_post("/learnham", learnham)
    app.router.add_get("/stat", stat)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app
