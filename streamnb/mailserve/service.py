"""What the daemon does with a message, whichever listener brought it: verdicts, learns,
snapshots and metrics, one place for the HTTP and the milter side."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from streamnb.exceptions import InvalidEventError, StateError
from streamnb.mailserve.filters import MODEL_CUTOFFS, Learned, MailFilters
from streamnb.mailserve.history import Entry, History
from streamnb.mailserve.headers import message_id, remove_headers
from streamnb.mailserve.forward import LearnForwarder, WriterError
from streamnb.mailserve.metrics import Metrics
from streamnb.mailserve.reports import TooManyReports
from streamnb.spam import TokenScore, Verdict
from streamnb.spam.operating import MAX_HAM_RATE

__all__ = ["CUTOFFS", "SYMBOLS", "Check", "MailService", "ServeConfig", "event", "events", "pushes"]

log = logging.getLogger("streamnb.mailserve")
#: One JSON object per line: a message checked, a learn, the daemon's start and stop.
events = logging.getLogger("streamnb.mailserve.events")


def event(fields: dict[str, Any]) -> None:
    """Log ``fields`` as a line of JSON (with the time and the process) on :data:`events`."""
    events.info(json.dumps({"time": round(time.time(), 3), "pid": os.getpid(), **fields}, ensure_ascii=True))

#: rspamd's action names.
NO_ACTION, ADD_HEADER, REJECT = "no action", "add header", "reject"

#: The symbols of a reply (:meth:`Check.rspamd`), with what each means.
SYMBOLS = {"STREAMNB_SPAM": "the message is spam; the score is the logit of its spamicity",
           "STREAMNB_HAM": "the message is ham; the score is the logit of its spamicity",
           "STREAMNB_UNSURE": "the message is neither; the score is the logit of its spamicity",
           "STREAMNB_SPAM_TOKENS": "the tokens that pushed towards spam, with their log-odds",
           "STREAMNB_HAM_TOKENS": "the tokens that pushed towards ham, with their log-odds"}  # fmt: skip

@dataclass(frozen=True)
class ServeConfig:
    """The daemon's settings (``streamnb mail serve --help`` documents each)."""

    model: str
    takeover: float = 50.0
    max_resident: int = 1000
    learn_shared: bool = False
    user_max_tokens: int | None = 20_000
    max_bytes: int = 1 << 20
    reject_above: float | None = None
    quarantine_above: float | None = None
    snapshot_every: int = 1000
    snapshot_seconds: float = 60.0
    ledger_size: int = 100_000
    max_ham_rate: float = MAX_HAM_RATE
    headers: str = "streamnb"  # one of HEADER_STYLES
    user_min_learns: int = 200
    spam_cutoff: float | None = None  # pinned on the model at start (spamicities)
    ham_cutoff: float | None = None
    reject_cutoff: float | None = None
    state: str | None = None  # a cluster's snapshot store (``--state``; see shared_state)
    bootstrap: str | None = None  # its Kafka (``--bootstrap``)
    learn_topic: str = "streamnb-mail-learns"
    member: str = "mail"  # this daemon's name in the store
    state_lease: float = 15.0  # seconds the member name's lease holds unrenewed (kafka: and s3:// stores)
    report_rate: int = 50  # reports (learns against the verdict) per user and hour; 0: no limit


@dataclass(frozen=True)
class Check:
    """A verdict with what the listeners need: the header lines and the action."""

    verdict: Verdict
    user: str | None
    action: str
    evidence: list[TokenScore]
    quarantine: bool
    reject_logit: float | None = None  # MailService.reject_threshold
    headers_style: str = "streamnb"

    @property
    def threshold(self) -> float:
        return _p(self.verdict.threshold)

    @property
    def header(self) -> str:
        """The ``X-Spam`` value, as ``streamnb mail classify`` writes it."""
        v = self.verdict
        return f"{v.label}, spamicity={v.score:.6f}, threshold={self.threshold:.6f}, tokens={v.n_tokens}"

    @property
    def score_header(self) -> str:
        return f"{self.verdict.score:.6f}"

    def headers(self) -> tuple[tuple[str, str], ...]:
        """The header lines added to the message (``--headers``): ``streamnb``: ``X-Spam`` and
        ``X-Spam-Score`` (the spamicity); ``spamassassin``: ``X-Spam-Flag``, ``X-Spam-Status``
        and ``X-Spam-Score`` in points (the score and required score of ``/checkv2``), as
        SpamAssassin writes them, for the rules that read those; ``both``: the two sets, with
        SpamAssassin's ``X-Spam-Score``."""
        v = self.verdict
        spam = v.label == "spam"
        sa = (("X-Spam-Flag", "YES" if spam else "NO"),
              ("X-Spam-Status", f"{'Yes' if spam else 'No'}, score={_clip(v.logit):.1f} required={_clip(v.threshold):.1f} "
                                f"tests=STREAMNB_{v.label.upper()}"),
              ("X-Spam-Score", f"{_clip(v.logit):.1f}"))  # fmt: skip
        own = (("X-Spam", self.header), ("X-Spam-Score", self.score_header))
        if self.headers_style == "spamassassin":
            return sa
        if self.headers_style == "both":
            return (own[0], *sa)
        return own

    def symbol_names(self) -> list[str]:
        """The names of the symbols in :meth:`rspamd`'s ``symbols`` (of :data:`SYMBOLS`)."""
        names = [f"STREAMNB_{self.verdict.label.upper()}"]
        if any(t.log_odds > 0 for t in self.evidence):
            names.append("STREAMNB_SPAM_TOKENS")
        if any(t.log_odds < 0 for t in self.evidence):
            names.append("STREAMNB_HAM_TOKENS")
        return names

    def rspamd(self) -> dict[str, Any]:
        """The ``/checkv2`` answer: rspamd's fields (score and required score on the logit of
        the spamicity) and streamnb's own under ``"streamnb"``."""
        v = self.verdict
        symbols: dict[str, Any] = {}
        name = f"STREAMNB_{v.label.upper()}"
        symbols[name] = {"name": name, "score": _clip(v.logit), "options": [f"{v.score:.6f}"]}
        for side, sign in (("SPAM", 1.0), ("HAM", -1.0)):
            tokens = sorted((t for t in self.evidence if sign * t.log_odds > 0), key=lambda t: -abs(t.log_odds))
            if tokens:
                sym = f"STREAMNB_{side}_TOKENS"
                symbols[sym] = {"name": sym, "score": round(sum(t.log_odds for t in tokens), 3),
                                "options": [f"{t.token}({t.log_odds:.2f})" for t in tokens]}  # fmt: skip
        thresholds = {ADD_HEADER: _clip(v.threshold)}
        if self.reject_logit is not None:
            thresholds[REJECT] = _clip(self.reject_logit)
        added = self.headers()
        return {
            "is_skipped": False,
            "score": _clip(v.logit),
            "required_score": _clip(v.threshold),
            "action": self.action,
            "thresholds": thresholds,
            "symbols": symbols,
            "milter": {"add_headers": {name: {"value": value, "order": 0} for name, value in added},
                       "remove_headers": {name: 0 for name in remove_headers(self.headers_style)}},
            "streamnb": {"label": v.label, "spamicity": v.score, "threshold": self.threshold, "tokens": v.n_tokens,
                         "user": self.user, "header": f"X-Spam: {self.header}"},
        }  # fmt: skip


#: The cut-offs an admin may pin at run time (:meth:`MailService.pin_cutoff`), with what each
#: does (the admin's page shows it): the model's, pinned on the shared filter
#: (:meth:`~streamnb.spam.SpamFilter.pin_cutoffs`, as ``--spam-cutoff``, ``--ham-cutoff``,
#: ``--reject-cutoff``), then the daemon's, a field of :class:`ServeConfig`.
CUTOFFS = {"spam_cutoff": "Spam at or above spamicity", "ham_cutoff": "Ham below spamicity",
           "reject_cutoff": "Reject spam at or above spamicity",
           "quarantine_above": "Quarantine spam at or above spamicity"}  # fmt: skip


def pushes(evidence: list[TokenScore], top: int = 5) -> list[tuple[str, float]]:
    """The ``top`` tokens that pushed hardest towards spam, then the ``top`` towards ham, as
    ``(token, log-odds)``."""
    out = []
    for sign in (1.0, -1.0):
        side = sorted((t for t in evidence if sign * t.log_odds > 0), key=lambda t: -abs(t.log_odds))
        out += [(str(t.token), t.log_odds) for t in side[:top]]
    return out


def _p(logit: float) -> float:
    if logit > 700:
        return 1.0
    if logit < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


def _logit(p: float) -> float:
    if p >= 1.0:
        return 100.0
    return math.log(p / (1.0 - p))


def _clip(logit: float) -> float:
    return round(max(-100.0, min(100.0, logit)), 3)


class MailService:
    """The models and the decisions of ``streamnb mail serve`` (see :mod:`streamnb.mailserve`)."""

    def __init__(self, config: ServeConfig, writer: LearnForwarder | None = None) -> None:
        self.config = config
        self.writer = writer
        cluster: dict[str, Any] = {}
        if config.state is not None:
            from streamnb.mailserve.shared_state import LearnLog, Snapshots

            if not config.bootstrap:
                raise StateError("--state needs --bootstrap (the Kafka of the learn log)")
            snapshots = Snapshots(config.state, config.member, config.bootstrap, config.learn_topic,
                                  lease=config.state_lease)  # fmt: skip
            cluster = {"log": LearnLog(config.bootstrap, config.learn_topic), "snapshots": snapshots}
        self.filters = MailFilters(config.model, takeover=config.takeover, max_resident=config.max_resident,
                                   learn_shared=config.learn_shared, user_max_tokens=config.user_max_tokens,
                                   max_bytes=config.max_bytes, ledger_size=config.ledger_size,
                                   max_ham_rate=config.max_ham_rate, replica=writer is not None,
                                   user_min_learns=config.user_min_learns,
                                   pins=(config.spam_cutoff, config.ham_cutoff, config.reject_cutoff),
                                   report_rate=config.report_rate, **cluster)  # fmt: skip
        self.metrics = Metrics()
        learn_log = self.filters.log
        if learn_log is not None:
            self.metrics.follow_lag_learns.set_function(lambda: learn_log.lag(self.filters.seq)[0])
            self.metrics.follow_lag_seconds.set_function(lambda: learn_log.lag(self.filters.seq)[1])
        self.metrics.users.set(self.filters.users.n_resident())
        self.scanned: dict[str, int] = {}  # checks by action, of this process
        self.hits: dict[str, int] = {}  # checks by symbol (of SYMBOLS), of this process
        self.check_seconds = 0.0  # the time those checks took
        self.started = time.monotonic()
        self.history = History()  # the last verdicts of this process, for the admin's page
        self.cutoff_reasons = {name: f"--{name.replace('_', '-')} at start"
                               for name in CUTOFFS if getattr(config, name) is not None}  # fmt: skip
        self._snapshot_lock = asyncio.Lock()
        self._last_snapshot = time.monotonic()

    # -- verdicts --------------------------------------------------------------------------
    def check(self, raw: bytes, user: str | None) -> Check:
        start = time.perf_counter()
        tokens = self.filters.tokens(raw)
        verdict, evidence = self.filters.check(tokens, user)
        cfg = self.config
        reject, pinned = self.reject_level()
        if verdict.label == "spam" and (verdict.reject if pinned else cfg.reject_above is not None
                                        and verdict.score >= cfg.reject_above):  # fmt: skip
            action = REJECT
        else:
            action = ADD_HEADER if verdict.label == "spam" else NO_ACTION
        quarantine = (cfg.quarantine_above is not None and verdict.label == "spam"
                      and verdict.score >= cfg.quarantine_above)  # fmt: skip
        check = Check(verdict, user, action, evidence, quarantine, reject, cfg.headers)
        metrics = self.metrics
        self.scanned[action] = self.scanned.get(action, 0) + 1
        for name in check.symbol_names():
            self.hits[name] = self.hits.get(name, 0) + 1
        seconds = time.perf_counter() - start
        self.check_seconds += seconds
        metrics.checked[verdict.label].inc()
        metrics.check_seconds.observe(seconds)
        metrics.users.set(self.filters.users.n_resident())
        return check

    def reject_threshold(self) -> float | None:
        """The score (the logit of the spamicity) at or above which spam is rejected, by the
        rule of :meth:`reject_level`; None for none."""
        reject = self.reject_level()[0]
        return reject if reject is not None and math.isfinite(reject) else None

    def action_thresholds(self) -> dict[str, float]:
        """The scores (as ``/checkv2``'s) from which the shared filter's verdicts take an action:
        ``add header`` at its spam threshold, ``reject`` at :meth:`reject_threshold` if any."""
        out = {ADD_HEADER: _clip(self.filters.shared.spam_threshold())}
        reject = self.reject_threshold()
        if reject is not None:
            out[REJECT] = _clip(reject)
        return out

    def reject_level(self) -> tuple[float | None, bool]:
        """``(score, pinned)``: spam at or above the score (a logit; None: no level) is rejected.
        One rule: **a reject cut-off pinned on the model wins** (``--reject-cutoff``, ``mail
        set``, the admin's page; ``pinned`` True); ``--reject-above`` applies only while none is
        pinned."""
        point = self.filters.shared.operating_point
        if point is not None and point.pins()["reject"] is not None:
            return point.reject_threshold(), True
        return (None if self.config.reject_above is None else _logit(self.config.reject_above)), False

    def log_check(self, check: Check, raw: bytes, queue_id: str, seconds: float) -> None:
        """The JSON log line of a message checked, and its entry in :attr:`history`."""
        v = check.verdict
        self.history.record(Entry(time.time(), message_id(raw), check.user, v.label, v.score, check.action,
                                  pushes(check.evidence), seconds))  # fmt: skip
        event({"event": "check", "queue_id": queue_id or None, "message_id": message_id(raw), "user": check.user,
               "label": v.label, "score": _clip(v.logit), "spamicity": round(v.score, 6), "action": check.action,
               "tokens": v.n_tokens, "ms": round(seconds * 1000, 3)})  # fmt: skip

    # -- cut-offs --------------------------------------------------------------------------
    def cutoffs(self) -> dict[str, Any]:
        """The cut-offs of :data:`CUTOFFS` in force (spamicities; None: none), each with why
        (the model's reason, ``pinned``, ``default`` or ``calibrated``, and who pinned it),
        whether it is pinned and what it does."""
        model = self.filters.shared.cutoffs()
        point = self.filters.shared.operating_point
        pins = point.pins() if point is not None else {}
        out: dict[str, Any] = {}
        for name in MODEL_CUTOFFS:
            short = name.split("_")[0]
            pinned = pins.get(short) is not None
            why = model.get(f"{short}_reason", "pinned" if model.get(name) is not None else None)
            if pinned and name in self.cutoff_reasons:
                why = f"{why}: {self.cutoff_reasons[name]}"
            out[name] = {"value": model.get(name), "why": why, "pinned": pinned, "label": CUTOFFS[name]}
        value = self.config.quarantine_above
        out["quarantine_above"] = {"value": value, "why": self.cutoff_reasons.get("quarantine_above"),
                                   "pinned": value is not None, "label": CUTOFFS["quarantine_above"]}  # fmt: skip
        return out

    async def pin_cutoff(self, name: str, value: float | None, why: str) -> None:
        """Pin the cut-off ``name`` (one of :data:`CUTOFFS`) at the spamicity ``value`` (None:
        free it: the model's follows its default or calibration again, the daemon's is off) for
        the checks from now on; a model's cut-off is kept in the model (a snapshot is written).
        :class:`InvalidEventError` (and nothing changed) for an unknown name, a value outside
        [0, 1], or cut-offs out of order (ham <= spam <= reject)."""
        if name not in CUTOFFS:
            raise InvalidEventError(f"unknown cut-off {name!r} (expected one of {', '.join(CUTOFFS)})")
        if value is not None and (isinstance(value, bool) or not isinstance(value, float) or not 0.0 <= value <= 1.0):
            raise InvalidEventError(f"{name}: expected a spamicity in [0, 1] or null, got {value!r}")
        if self.writer is not None:
            raise InvalidEventError("cut-offs are pinned in the writing process (the --controller listener)")
        if name in MODEL_CUTOFFS:
            await self.filters.pin(name, value)  # in a cluster: on every daemon, through the log
        else:
            changed: dict[str, Any] = {name: value}
            self.config = dataclasses.replace(self.config, **changed)
        if value is None:
            self.cutoff_reasons.pop(name, None)
        else:
            self.cutoff_reasons[name] = why
        event({"event": "cutoff", "name": name, "value": value, "why": why})
        if name in MODEL_CUTOFFS:
            await self.snapshot()

    # -- learning --------------------------------------------------------------------------
    async def learn_answer(self, raw: bytes, user: str | None, label: str, limit: bool = True) -> tuple[int, dict]:
        """:meth:`learn`, answered as the learn endpoints answer: ``(200, what was learned)``;
        ``(429, error)`` for a report over the user's ``--report-rate`` (with ``retry_after``,
        seconds; nothing learned); ``(500, error)`` when the journal could not be written
        (nothing learned: a retry learns it); the writing process's status when a check worker
        relays its refusal."""
        try:
            learned = await self.learn(raw, user, label, limit)
        except TooManyReports as exc:
            self.metrics.errors.labels("reports").inc()
            return 429, {"error": str(exc), "retry_after": exc.retry_after}
        except OSError as exc:
            self.metrics.errors.labels("journal").inc()
            return 500, {"error": f"could not write the journal: {exc}"}
        except WriterError as exc:
            self.metrics.errors.labels("writer").inc()
            return exc.status, {"error": str(exc)}
        return 200, {"success": True, "class": learned.label, "user": learned.user,
                     "moved_from": learned.moved_from, "already": learned.already, "report": learned.report}

    async def learn(self, raw: bytes, user: str | None, label: str, limit: bool = True) -> Learned:
        """Learn a message as ``label`` for ``user``; returns once it is durable (a check
        worker hands it to the writing process, then reads it back from the journal). With
        ``limit``, a report over the user's ``report_rate`` raises
        :class:`~streamnb.mailserve.reports.TooManyReports` (the admin's page learns without)."""
        start = time.perf_counter()
        if self.writer is not None:
            learned = await self.writer.learn(raw, user, label)  # the writer counts it
            self.filters.catch_up()
            self.metrics.users.set(self.filters.users.n_resident())
            return learned
        learned = await self.filters.learn(self.filters.tokens(raw), user, label, message_id(raw), limit)
        if not learned.already:
            self.metrics.learns.labels(label).inc()
        event({"event": "learn", "message_id": message_id(raw), "user": user, "class": label,
               "moved_from": learned.moved_from, "already": learned.already, "report": learned.report,
               "ms": round((time.perf_counter() - start) * 1000, 3)})  # fmt: skip
        self.metrics.learn_seconds.observe(time.perf_counter() - start)
        self.metrics.users.set(self.filters.users.n_resident())
        if self.filters.learns_since_snapshot >= self.config.snapshot_every:
            await self.snapshot()
        return learned

    # -- reports ---------------------------------------------------------------------------
    def reports(self, user: str | None = None, every_user: bool = True, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` reports (learns against the verdict), of ``user`` unless
        ``every_user``: id, time, user, class learned, the verdict and spamicity it contradicted,
        Message-ID, digest, and ``undone`` (None, or the undo's id and time)."""
        if self.writer is not None:
            self.filters.catch_up()
        return self.filters.reports.listing(user, every_user, limit)

    async def undo(self, report: int) -> dict[str, Any]:
        """Undo the report ``report`` (:meth:`~streamnb.mailserve.filters.MailFilters.undo`):
        journaled first, then unlearned exactly; :class:`~streamnb.mailserve.reports.UndoRefused`
        (nothing changed) when it cannot be."""
        if self.writer is not None:
            raise InvalidEventError("reports are undone in the writing process (the --controller listener, or "
                                    "`streamnb mail undo` with the daemon stopped)")
        entry = await self.filters.undo(report)
        event({"event": "undo", "report": report, "user": entry["user"], "class": entry["class"],
               "message_id": entry["message_id"], "applied": entry["undone"]["applied"]})  # fmt: skip
        self.metrics.users.set(self.filters.users.n_resident())
        return entry

    def stat(self, user: str | None) -> dict[str, Any]:
        """``/stat``: rspamd's layout (what ``rspamc stat`` prints: ``scanned``, ``actions``,
        ``spam_count``, ``ham_count``, ``total_learns`` and a ``statfiles`` entry per class whose
        ``revision`` and ``learned`` are the messages the shared filter learned as it), the
        counts of checks being this process's, and ``learned``, the messages learned (a number, as
        rspamd's); then the daemon's own fields (:meth:`~streamnb.mailserve.filters.MailFilters.stat`),
        with ``learned`` per class as ``learned_by_class``."""
        own = self.filters.stat(user)
        learned = own.pop("learned")
        actions = {name: self.scanned.get(name, 0) for name in (REJECT, ADD_HEADER, NO_ACTION)}
        statfiles = [{"symbol": f"STREAMNB_{label.upper()}", "type": "streamnb", "revision": int(learned[label]),
                      "learned": int(learned[label]), "used": own["tokens"], "total": own["tokens"], "size": 0,
                      "languages": 0, "users": own["users_resident"]} for label in ("spam", "ham")]  # fmt: skip
        rspamd = {"read_only": False, "scanned": sum(actions.values()), "actions": actions,
                  "spam_count": actions[REJECT] + actions[ADD_HEADER], "ham_count": actions[NO_ACTION],
                  "total_learns": int(learned["spam"] + learned["ham"]), "statfiles": statfiles,
                  "learned": int(learned["spam"] + learned["ham"])}  # fmt: skip
        return {**rspamd, "learned_by_class": learned, **own}

    async def snapshot(self) -> None:
        async with self._snapshot_lock:
            await self.filters.snapshot()
            self._last_snapshot = time.monotonic()

    async def snapshot_timer(self) -> None:
        """Snapshot every ``snapshot_seconds`` when something was learned (the writing process)."""
        if self.writer is not None:
            return
        while True:
            await asyncio.sleep(self.config.snapshot_seconds)
            if self.filters.learns_since_snapshot:
                try:
                    await self.snapshot()
                except OSError as exc:  # disk full: the journal still holds every learn
                    log.error("snapshot failed: %s", exc)

    async def close(self) -> None:
        """Stop: a last snapshot if anything was learned since (in a cluster, always: this
        member's snapshot of what it applied)."""
        if self.writer is None and (self.filters.learns_since_snapshot or self.filters.log is not None):
            await self.snapshot()
        await self.filters.close()
        if self.writer is not None:
            await self.writer.close()
