"""The admin's page: ``GET /`` on the listener that learns (the HTTP listener, or the
``--controller`` one when given), with the password of ``--password-file``.

One page (HTML, CSS and JavaScript shipped in the package, nothing fetched from elsewhere):
status, the last verdicts with the tokens that pushed hardest, a message pasted or uploaded
scanned and learned, the cut-offs pinned, the last reports (learns against the verdict) with a
button to undo each, verdicts and latency per minute, the spamicities of recent mail by verdict
with the cut-offs drawn.

========================  ==============================================================
``GET /``                 the page (``/console/console.css``, ``/console/console.js``)
``POST /console/login``   form field ``password``: a session cookie (HttpOnly,
                          SameSite=Strict, random, expiring after ``SESSION_SECONDS``
                          idle) and the session's CSRF token
``POST /console/logout``  the session ends
``GET /console/state``    ``{"logged_in": false}``, or the status, cut-offs, the last
                          ``REPORTS`` reports, history, per-minute counts and score
                          histograms and the CSRF token
``POST /console/scan``    JSON ``{"message", "user"}``: the verdict with its evidence
``POST /console/learn``   JSON ``{"message", "user", "class"}``: learned as spam or ham
``POST /console/cutoff``  JSON ``{"name", "value"}``: a cut-off of
                          :data:`~streamnb.mailserve.service.CUTOFFS` pinned (null:
                          freed)
``POST /console/undo``    JSON ``{"id"}``: the report undone (409 if it cannot be)
========================  ==============================================================

Every POST but the login needs the session cookie and its token in ``X-CSRF-Token``; every POST
(the login too) is refused when the browser says it comes from another site (``Sec-Fetch-Site``
other than ``same-origin``, or an ``Origin`` that is not this listener's). Logging in needs the
password: ``--secure-ip`` addresses get no session without it; with no ``--password-file`` no one
logs in (the page says so).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web

from streamnb.exceptions import InvalidEventError
from streamnb.mailserve.auth import Authority
from streamnb.mailserve.headers import message_id
from streamnb.mailserve.reports import UndoRefused
from streamnb.mailserve.service import MailService, pushes

__all__ = ["COOKIE", "SESSION_SECONDS", "Sessions", "add_console"]

log = logging.getLogger("streamnb.mailserve")

COOKIE = "streamnb_session"
SESSION_SECONDS = 3600.0  # idle time after which a session ends
MAX_SESSIONS = 64  # the oldest ends when one more logs in
REPORTS = 20  # the last reports the page lists
_ASSETS = {"console.css": "text/css", "console.js": "text/javascript"}
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}  # fmt: skip


@dataclass
class _Session:
    csrf: str
    expires: float


class Sessions:
    """Logged-in sessions, kept in memory by the SHA-256 of their token (the cookie's value).

    >>> s = Sessions(seconds=10.0)
    >>> token, csrf = s.open(now=0.0)
    >>> s.csrf(token, now=5.0) == csrf, s.csrf(token, now=14.0) == csrf, s.csrf(token, now=30.0)
    (True, True, None)
    """

    def __init__(self, seconds: float = SESSION_SECONDS, most: int = MAX_SESSIONS) -> None:
        self.seconds = seconds
        self.most = most
        self._open: dict[bytes, _Session] = {}

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()

    def open(self, now: float | None = None) -> tuple[str, str]:
        """A new session: (its token, its CSRF token)."""
        now = time.monotonic() if now is None else now
        for key in [k for k, s in self._open.items() if s.expires <= now]:
            del self._open[key]
        while len(self._open) >= self.most:
            del self._open[next(iter(self._open))]
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self._open[self._key(token)] = _Session(csrf, now + self.seconds)
        return token, csrf

    def csrf(self, token: str | None, now: float | None = None) -> str | None:
        """The CSRF token of the live session ``token`` (its expiry moved on), else None."""
        if not token:
            return None
        now = time.monotonic() if now is None else now
        key = self._key(token)
        session = self._open.get(key)
        if session is None:
            return None
        if session.expires <= now:
            del self._open[key]
            return None
        session.expires = now + self.seconds
        return session.csrf

    def close(self, token: str | None) -> None:
        if token:
            self._open.pop(self._key(token), None)


SESSIONS: web.AppKey[Sessions] = web.AppKey("sessions", Sessions)
CONSOLE: web.AppKey[dict] = web.AppKey("console", dict)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=_HEADERS)


def _json(doc: dict[str, Any]) -> web.Response:
    return web.json_response(doc, headers=_HEADERS)


def _cross_site(request: web.Request) -> str | None:
    """Why a POST is refused as coming from another site (None: it is not)."""
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site != "same-origin":
        return f"a cross-site request (Sec-Fetch-Site: {fetch_site})"
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        return f"a request from another origin ({origin})"
    return None


def _session(request: web.Request, need_csrf: bool = True) -> str | None:
    """The CSRF token of the request's session when the request may change state, else None."""
    csrf = request.app[SESSIONS].csrf(request.cookies.get(COOKIE))
    if csrf is None:
        return None
    if need_csrf and not hmac.compare_digest(request.headers.get("X-CSRF-Token", ""), csrf):
        return None
    return csrf


def _refused(request: web.Request) -> web.Response | None:
    """The error reply for a POST that may not change state, else None."""
    why = _cross_site(request)
    if why is not None:
        return _error(403, why)
    if _session(request) is None:
        return _error(403, "log in first (the session and its CSRF token are needed)")
    return None


_AdminHandler = Callable[[web.Request, MailService, dict[str, Any]], Awaitable[web.Response]]


def _signed_in(handler: _AdminHandler) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A POST handler of the signed-in admin: refused as :func:`_refused` says, else called with
    the service and the request's JSON document."""

    async def guarded(request: web.Request) -> web.Response:
        refused = _refused(request)
        if refused is not None:
            return refused
        return await handler(request, request.app[CONSOLE]["service"], await _document(request))

    return guarded


async def _document(request: web.Request) -> dict[str, Any]:
    try:
        doc = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise InvalidEventError("expected a JSON object") from None
    if not isinstance(doc, dict):
        raise InvalidEventError("expected a JSON object")
    return doc


def _message(doc: dict[str, Any], keep: int) -> tuple[bytes, str | None]:
    text, user = doc.get("message"), doc.get("user") or None
    if not isinstance(text, str) or not text.strip():
        raise InvalidEventError("expected the message as text in \"message\"")
    if user is not None and (not isinstance(user, str) or any(ord(c) < 32 for c in user)):
        raise InvalidEventError("expected the user as one line of text in \"user\"")
    raw = text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8", "surrogateescape")
    return raw[:keep], user.strip().lower() if user else None


async def index(request: web.Request) -> web.Response:
    html = resources.files("streamnb.mailserve").joinpath("console_assets/index.html").read_bytes()
    return web.Response(body=html, content_type="text/html", charset="utf-8", headers=_HEADERS)


async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in _ASSETS:
        return _error(404, "no such file")
    body = resources.files("streamnb.mailserve").joinpath(f"console_assets/{name}").read_bytes()
    return web.Response(body=body, content_type=_ASSETS[name], charset="utf-8", headers=_HEADERS)


async def login(request: web.Request) -> web.Response:
    why = _cross_site(request)
    if why is not None:
        return _error(403, why)
    authority: Authority = request.app[CONSOLE]["authority"]
    if authority.hashed is None:
        return _error(403, "no --password-file: the page has no password to log in with")
    form = await request.post()
    password = form.get("password")
    if not isinstance(password, str) or not await authority.allows(None, password):
        request.app[CONSOLE]["service"].metrics.errors.labels("forbidden").inc()
        return _error(403, "wrong password")
    token, csrf = request.app[SESSIONS].open()
    response = _json({"logged_in": True, "csrf": csrf})
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/", secure=request.secure,
                        max_age=int(SESSION_SECONDS))  # fmt: skip
    return response


async def logout(request: web.Request) -> web.Response:
    refused = _refused(request)
    if refused is not None:
        return refused
    request.app[SESSIONS].close(request.cookies.get(COOKIE))
    response = _json({"logged_in": False})
    response.del_cookie(COOKIE, path="/")
    return response


async def state(request: web.Request) -> web.Response:
    csrf = _session(request, need_csrf=False)
    if csrf is None:
        return _json({"logged_in": False, "password": request.app[CONSOLE]["authority"].hashed is not None})
    service: MailService = request.app[CONSOLE]["service"]
    user = request.query.get("user") or None
    stat = service.stat(user.lower() if user else None)
    history = service.history
    return _json({"logged_in": True, "csrf": csrf, "pid": request.app[CONSOLE]["pid"], "stat": stat,
                  "cutoffs": service.cutoffs(), "reports": service.reports(limit=REPORTS),
                  "history": [e.to_json() for e in history.entries()], "minutes": history.minutes(),
                  "scores": history.scores(), "now": time.time()})  # fmt: skip


@_signed_in
async def scan(request: web.Request, service: MailService, doc: dict[str, Any]) -> web.Response:
    raw, user = _message(doc, service.config.max_bytes)
    start = time.perf_counter()
    check = service.check(raw, user)
    seconds = time.perf_counter() - start
    service.log_check(check, raw, "", seconds)
    v = check.verdict
    return _json({"message_id": message_id(raw), "user": user, "label": v.label, "spamicity": v.score,
                  "threshold": check.threshold, "action": check.action, "tokens": v.n_tokens,
                  "quarantine": check.quarantine, "seconds": round(seconds, 6),
                  "evidence": [[t, round(x, 3)] for t, x in pushes(check.evidence, top=10)]})  # fmt: skip


@_signed_in
async def learn(request: web.Request, service: MailService, doc: dict[str, Any]) -> web.Response:
    raw, user = _message(doc, service.config.max_bytes)
    label = doc.get("class")
    if label not in ("spam", "ham"):
        raise InvalidEventError("expected \"class\": \"spam\" or \"ham\"")
    status, answer = await service.learn_answer(raw, user, label, limit=False)  # the admin: no --report-rate
    return web.json_response(answer, status=status, headers=_HEADERS)


@_signed_in
async def cutoff(request: web.Request, service: MailService, doc: dict[str, Any]) -> web.Response:
    name, value = doc.get("name"), doc.get("value")
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    try:
        await service.pin_cutoff(str(name), value, f"on the page at {when}")
    except OSError as exc:  # pinned, but the model's snapshot failed: the timer tries again
        log.error("snapshot after pinning %s failed: %s", name, exc)
        return _error(500, f"pinned for now, but the model could not be written: {exc}")
    return _json({"cutoffs": service.cutoffs()})


@_signed_in
async def undo(request: web.Request, service: MailService, doc: dict[str, Any]) -> web.Response:
    report = doc.get("id")
    if not isinstance(report, int) or isinstance(report, bool):
        raise InvalidEventError(f"expected \"id\": a report's number, got {report!r}")
    try:
        entry = await service.undo(report)
    except UndoRefused as exc:
        return _error(409, str(exc))
    return _json({"success": entry["undone"]["applied"], "report": entry})


def add_console(app: web.Application, service: MailService, authority: Authority, pid: int) -> None:
    """Serve the page and its requests on ``app``, logins checked by ``authority``."""
    app[SESSIONS] = Sessions()
    app[CONSOLE] = {"service": service, "authority": authority, "pid": pid}
    app.router.add_get("/", index)
    app.router.add_get("/console/state", state)  # before the assets' route, which would match it
    app.router.add_get("/console/{name}", asset)
    app.router.add_post("/console/login", login)
    app.router.add_post("/console/logout", logout)
    app.router.add_post("/console/scan", scan)
    app.router.add_post("/console/learn", learn)
    app.router.add_post("/console/cutoff", cutoff)
    app.router.add_post("/console/undo", undo)
