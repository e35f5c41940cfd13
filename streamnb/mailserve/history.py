"""What the daemon decided lately, for the admin's page: the last verdicts in a bounded ring
(never a message body), verdicts and check latency per minute over the last hours, and the
spamicities of recent mail by verdict (the operating point's picture).

Everything is bounded: ``size`` verdicts, ``minutes`` buckets; recording one costs the same
whatever came before.

>>> h = History(size=2, minutes=3)
>>> for i, label in enumerate(["spam", "ham", "unsure"]):
...     h.record(Entry(60.0 * i, f"<{i}>", None, label, 0.5, "no action", [], 0.001))
>>> [e.message_id for e in h.entries()]  # the newest first, two kept
['<2>', '<1>']
>>> [(m["minute"], m["spam"], m["ham"], m["unsure"]) for m in h.minutes()]
[(0, 1, 0, 0), (60, 0, 1, 0), (120, 0, 0, 1)]
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Entry", "History", "LABELS"]

LABELS = ("spam", "unsure", "ham")


@dataclass(frozen=True)
class Entry:
    """One verdict: when (Unix time), the message's ``Message-ID``, whose filter, the label,
    spamicity, action, the tokens that pushed hardest (``[(token, log-odds)]``) and the seconds
    the check took."""

    time: float
    message_id: str | None
    user: str | None
    label: str
    spamicity: float
    action: str
    tokens: list[tuple[str, float]]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["tokens"] = [[t, round(v, 3)] for t, v in self.tokens]
        out["spamicity"] = round(self.spamicity, 6)
        out["seconds"] = round(self.seconds, 6)
        return out


class History:
    """The last ``size`` verdicts and ``minutes`` minutes of counts (of this process)."""

    def __init__(self, size: int = 200, minutes: int = 180) -> None:
        if size < 1 or minutes < 1:
            raise ValueError("size and minutes must be at least 1")
        self._ring: deque[Entry] = deque(maxlen=size)
        self._minutes: deque[dict[str, Any]] = deque(maxlen=minutes)

    def record(self, entry: Entry) -> None:
        self._ring.append(entry)
        minute = int(entry.time // 60) * 60
        if not self._minutes or self._minutes[-1]["minute"] < minute:
            self._minutes.append({"minute": minute, "spam": 0, "unsure": 0, "ham": 0, "seconds": 0.0, "max_seconds": 0.0})
        bucket = self._minutes[-1]  # (a clock stepping back counts in the newest minute)
        bucket[entry.label if entry.label in LABELS else "unsure"] += 1
        bucket["seconds"] += entry.seconds
        bucket["max_seconds"] = max(bucket["max_seconds"], entry.seconds)

    def entries(self) -> list[Entry]:
        """The verdicts kept, newest first."""
        return list(reversed(self._ring))

    def minutes(self) -> list[dict[str, Any]]:
        """Per minute (its start, Unix time) with a verdict: counts by label, mean and largest
        check latency in seconds; oldest first."""
        out = []
        for b in self._minutes:
            n = b["spam"] + b["unsure"] + b["ham"]
            out.append({"minute": b["minute"], "spam": b["spam"], "unsure": b["unsure"], "ham": b["ham"],
                        "mean_seconds": round(b["seconds"] / n, 6) if n else 0.0,
                        "max_seconds": round(b["max_seconds"], 6)})  # fmt: skip
        return out

    def scores(self, bins: int = 20) -> dict[str, list[int]]:
        """Histograms of the spamicities of the verdicts kept, by label, ``bins`` equal bins on [0, 1]."""
        out = {label: [0] * bins for label in LABELS}
        for e in self._ring:
            i = min(bins - 1, max(0, int(e.spamicity * bins)))
            out[e.label if e.label in LABELS else "unsure"][i] += 1
        return out
