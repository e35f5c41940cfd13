"""Reports: learns that contradict the verdict the filter gave, rate-limited per user, listed
for the admin and undone on request.

A learn is a *report* when the message's class is the opposite of the verdict the user's
filter gives it just before it is learned: ham learned for a message the filter calls spam, or
spam for one it calls ham (an unsure verdict contradicts neither). Most reports are the
corrections a filter needs; a wrong one (spam reported as ham) teaches the filter that such
spam is ham. So the daemon

- **limits** each user (``None``, the learns with no user, is one) to ``per_hour`` reports in
  any hour (:class:`RateLimit`; ``streamnb mail serve --report-rate``): a report over the limit
  is refused, and the error says in how many seconds the next one is taken; learns that agree
  with the verdict are never limited;
- **keeps** the last :data:`KEPT` reports (:class:`Reports`), in its journal and its snapshots:
  who, when, the message's ``Message-ID`` and digest, the class learned, the verdict it
  contradicted, and the message's tokens, so that
- an admin can **undo** one (``streamnb mail undo``, ``POST /undo``): the report is unlearned
  exactly (a message moved by it goes back to its class before), as a journaled record of its
  own, and the report is kept, marked undone.

In a cluster (``mail serve --state``) the journal is the learn log: every daemon decides whether a
learn is a report where the learn stands in the log (the time is the appending daemon's, carried
in the record), counts the limit from the reports it applied, and applies an undo where it stands
in the log (:class:`~streamnb.mailserve.filters.MailFilters`), so every daemon keeps the same
reports.

>>> limit = RateLimit(per_hour=2)
>>> limit.wait("ann", now=0.0), limit.take("ann", now=0.0), limit.take("ann", now=10.0)
(None, None, None)
>>> limit.wait("ann", now=20.0)  # two in the last hour: the first leaves the window at 3600
3580.0
>>> limit.wait("bob", now=20.0) is None, limit.wait("ann", now=3600.0) is None
(True, True)
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from typing import Any

from streamnb.exceptions import InvalidEventError, StateError

__all__ = ["KEPT", "HOUR", "RateLimit", "Reports", "TooManyReports", "UndoRefused", "contradicts"]

#: Reports kept for the admin (the most recent), with their tokens for an undo.
KEPT = 1000
HOUR = 3600.0


def contradicts(verdict: str, label: str) -> bool:
    """Whether learning ``label`` contradicts a ``verdict`` (``spam``, ``unsure`` or ``ham``)."""
    return verdict in ("spam", "ham") and verdict != label


class TooManyReports(InvalidEventError):
    """A report over the user's limit: nothing learned; ``retry_after`` seconds until one is taken."""

    def __init__(self, user: str | None, per_hour: int, retry_after: float) -> None:
        self.retry_after = max(1, math.ceil(retry_after))
        who = "learns with no user" if user is None else f"user {user!r}"
        super().__init__(f"too many reports: {who} reported {per_hour} messages against the filter's verdict in "
                         f"the last hour (--report-rate); retry in {self.retry_after} s")  # fmt: skip


class UndoRefused(InvalidEventError):
    """An undo that cannot be done (nothing changed): an unknown report, one undone already, or
    a message learned again since."""


class RateLimit:
    """At most ``per_hour`` reports per user in any window of an hour (0: no limit). Keeps the
    times of each user's reports within the last hour, at most ``per_hour`` of them; users with
    none are dropped as others report, so the memory is that of the last hour's reporters."""

    def __init__(self, per_hour: int) -> None:
        if per_hour < 0:
            raise ValueError(f"per_hour must be >= 0, got {per_hour}")
        self.per_hour = per_hour
        self._times: OrderedDict[str | None, deque[float]] = OrderedDict()  # by the time of the last report

    def wait(self, user: str | None, now: float) -> float | None:
        """Seconds until ``user`` may report again (None: now)."""
        times = self._times.get(user)
        if not self.per_hour or times is None or len(times) < self.per_hour:
            return None
        oldest = times[0]
        return None if now - oldest >= HOUR else oldest + HOUR - now

    def take(self, user: str | None, now: float) -> None:
        """Count a report of ``user`` at ``now``; :class:`TooManyReports` (counting nothing)
        over the limit."""
        if not self.per_hour:
            return
        wait = self.wait(user, now)
        if wait is not None:
            raise TooManyReports(user, self.per_hour, wait)
        self.record(user, now)

    def record(self, user: str | None, when: float) -> None:
        """Count a report of ``user`` at ``when`` whatever the limit (one read back)."""
        if not self.per_hour:
            return
        times = self._times.pop(user, None) or deque(maxlen=self.per_hour)
        times.append(when)
        self._times[user] = times
        while self._times:  # users whose last report is over an hour old: nothing to remember
            first = next(iter(self._times))
            if first == user or when - self._times[first][-1] < HOUR:
                break
            del self._times[first]

    def give_back(self, user: str | None, when: float) -> None:
        """Forget a report counted at ``when`` that was not learned after all."""
        times = self._times.get(user)
        if times and times[-1] == when:
            times.pop()

    # -- in a snapshot (a cluster's: every daemon must count alike) -------------------------
    def to_extra(self) -> list[list[Any]]:
        return [[user, list(times)] for user, times in self._times.items()]

    def load_extra(self, saved: Any) -> None:
        if not isinstance(saved, list) or not all(
                isinstance(e, list) and len(e) == 2 and (e[0] is None or isinstance(e[0], str))
                and isinstance(e[1], list) and all(isinstance(t, (int, float)) for t in e[1]) for e in saved):
            raise StateError("invalid report counts in the snapshot")
        self._times = OrderedDict((user, deque((float(t) for t in times), maxlen=self.per_hour or None))
                                  for user, times in saved)  # fmt: skip


class Reports:
    """The last ``size`` reports by their journal number (see the module)."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[int, dict[str, Any]] = OrderedDict()

    def add(self, seq: int, record: dict[str, Any]) -> None:
        """Keep the report learned by the journal record ``record`` (number ``seq``)."""
        info = record["report"]
        self._kept[seq] = {"id": seq, "time": info["time"], "user": record["user"], "class": record["label"],
                           "moved_from": record["moved_from"], "verdict": info["verdict"],
                           "spamicity": info["spamicity"], "message_id": info.get("message_id"),
                           "digest": record["key"].rpartition("\x00")[2], "shared": info.get("shared", False),
                           "key": record["key"], "tokens": record["tokens"], "undone": None}  # fmt: skip
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)

    def get(self, seq: int) -> dict[str, Any]:
        """The report ``seq``; :class:`UndoRefused` if it is not among those kept."""
        try:
            return self._kept[seq]
        except KeyError:
            raise UndoRefused(f"no report {seq} among the last {self.size} kept") from None

    def undone(self, seq: int, by: int, when: float, applied: bool = True) -> None:
        """Mark report ``seq`` undone by the journal record ``by`` (``applied`` False: the
        filter had forgotten its tokens, nothing could be unlearned)."""
        report = self._kept.get(seq)
        if report is not None:
            report["undone"] = {"id": by, "time": when, "applied": applied}

    def listing(self, user: str | None = None, every_user: bool = True, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` reports (of ``user`` unless ``every_user``), without their tokens."""
        out: list[dict[str, Any]] = []
        if limit < 1:
            return out
        for report in reversed(self._kept.values()):
            if every_user or report["user"] == user:
                out.append({k: v for k, v in report.items() if k not in ("tokens", "key")})
                if len(out) >= limit:
                    break
        return out

    def __iter__(self) -> Any:
        return iter(self._kept.values())

    def __len__(self) -> int:
        return len(self._kept)

    # -- in a snapshot ---------------------------------------------------------------------
    def to_extra(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._kept.values()]

    def load_extra(self, saved: Any) -> None:
        if not isinstance(saved, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), int) for r in saved):
            raise StateError("invalid list of reports in the snapshot")
        self._kept = OrderedDict((r["id"], dict(r)) for r in saved[-self.size:])
