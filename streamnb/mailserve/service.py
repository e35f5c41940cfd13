"""What the daemon does with a message, whichever listener brought it: verdicts, learns,
snapshots and metrics, one place for the HTTP and the milter side."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from streamnb.mailserve.filters import Learned, MailFilters
from streamnb.mailserve.forward import LearnForwarder
from streamnb.mailserve.metrics import Metrics
from streamnb.spam import TokenScore, Verdict

__all__ = ["Check", "MailService", "ServeConfig"]

log = logging.getLogger("streamnb.mailserve")

#: rspamd's action names.
NO_ACTION, ADD_HEADER, REJECT = "no action", "add header", "reject"
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
    max_ham_rate: float = 0.002
    user_min_learns: int = 200
    spam_cutoff: float | None = None  # pinned on the model at start (spamicities)
    ham_cutoff: float | None = None
    reject_cutoff: float | None = None


@dataclass(frozen=True)
class Check:
    """A verdict with what the listeners need: the header lines and the action."""

    verdict: Verdict
    user: str | None
    action: str
    evidence: list[TokenScore]
    quarantine: bool

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
        return {
            "is_skipped": False,
            "score": _clip(v.logit),
            "required_score": _clip(v.threshold),
            "action": self.action,
            "symbols": symbols,
            "streamnb": {"label": v.label, "spamicity": v.score, "threshold": self.threshold, "tokens": v.n_tokens,
                         "user": self.user, "header": f"X-Spam: {self.header}"},
        }  # fmt: skip


def _p(logit: float) -> float:
    if logit > 700:
        return 1.0
    if logit < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


def _clip(logit: float) -> float:
    return round(max(-100.0, min(100.0, logit)), 3)


class MailService:
    """The models and the decisions of ``streamnb mail serve`` (see :mod:`streamnb.mailserve`)."""

    def __init__(self, config: ServeConfig, writer: LearnForwarder | None = None) -> None:
        self.config = config
        self.writer = writer
        self.filters = MailFilters(config.model, takeover=config.takeover, max_resident=config.max_resident,
                                   learn_shared=config.learn_shared, user_max_tokens=config.user_max_tokens,
                                   max_bytes=config.max_bytes, ledger_size=config.ledger_size,
                                   max_ham_rate=config.max_ham_rate, replica=writer is not None,
                                   user_min_learns=config.user_min_learns,
                                   pins=(config.spam_cutoff, config.ham_cutoff, config.reject_cutoff))  # fmt: skip
        self.metrics = Metrics()
        self.metrics.users.set(self.filters.users.n_resident())
        self._snapshot_lock = asyncio.Lock()
        self._last_snapshot = time.monotonic()

    # -- verdicts --------------------------------------------------------------------------
    def check(self, raw: bytes, user: str | None) -> Check:
        start = time.perf_counter()
        tokens = self.filters.tokens(raw)
        verdict, evidence = self.filters.check(tokens, user)
        cfg = self.config
        if verdict.reject or (cfg.reject_above is not None and verdict.label == "spam"
                              and verdict.score >= cfg.reject_above):  # fmt: skip
            action = REJECT
        else:
            action = ADD_HEADER if verdict.label == "spam" else NO_ACTION
        quarantine = (cfg.quarantine_above is not None and verdict.label == "spam"
                      and verdict.score >= cfg.quarantine_above)  # fmt: skip
        metrics = self.metrics
        metrics.checked[verdict.label].inc()
        metrics.check_seconds.observe(time.perf_counter() - start)
        metrics.users.set(self.filters.users.n_resident())
        return Check(verdict, user, action, evidence, quarantine)

    # -- learning --------------------------------------------------------------------------
    async def learn(self, raw: bytes, user: str | None, label: str) -> Learned:
        """Learn a message as ``label`` for ``user``; returns once it is durable (a check
        worker hands it to the writing process, then reads it back from the journal)."""
        start = time.perf_counter()
        if self.writer is not None:
            learned = await self.writer.learn(raw, user, label)  # the writer counts it
            self.filters.catch_up()
            self.metrics.users.set(self.filters.users.n_resident())
            return learned
        learned, record = self.filters.learn(self.filters.tokens(raw), user, label)
        if record is not None:
            await self.filters.append(record)
            self.metrics.learns.labels(label).inc()
        self.metrics.learn_seconds.observe(time.perf_counter() - start)
        self.metrics.users.set(self.filters.users.n_resident())
        if self.filters.learns_since_snapshot >= self.config.snapshot_every:
            await self.snapshot()
        return learned

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
        if self.writer is None and self.filters.learns_since_snapshot:
            await self.snapshot()
        await self.filters.close()
        if self.writer is not None:
            await self.writer.close()
