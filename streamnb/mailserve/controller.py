"""The read-only requests of rspamd's controller, in the layouts rspamd 3.4 writes them
(``src/controller.c``, ``symcache::counters``), from one :class:`~streamnb.mailserve.service.MailService`.

=================  ==========================================================================
``GET /auth``      ``rspamc uptime`` asks this: ``version``, ``uptime`` (seconds), the checks by
                   action (``clean``, ``probable``, ``reject``; ``greylist`` and ``soft_reject``
                   are always 0), ``scanned``, ``learned`` (the shared filter's messages) and
                   ``read_only`` (whether this listener refuses every learn)
``GET /counters``  ``rspamc counters``: one entry per symbol: ``symbol``, ``weight``,
                   ``frequency`` (hits per second since start), ``hits``, ``time`` (the mean
                   milliseconds of a check)
``GET /symbols``   rspamd's web interface's list: one group, ``streamnb``, whose ``rules`` give
                   each symbol's ``weight``, ``description`` and counters
``GET /actions``   the actions with a threshold: ``add header`` at the spam cut-off and
                   ``reject`` at the reject cut-off (when there is one), on the reply's score scale
=================  ==========================================================================

Every symbol's weight is 1: its score in a reply is the message's own (the logit of its
spamicity, or the tokens' summed log-odds), not a weight times a hit. The counts are those of the
process that answered. Unlike rspamd, which asks for its read password here, these are open to
whoever reaches the listener, as ``/stat`` is.

>>> from streamnb.mailserve.service import MailService, ServeConfig
>>> import os, tempfile
>>> service = MailService(ServeConfig(os.path.join(tempfile.mkdtemp(), "m.snb")))
>>> [(c["symbol"], c["weight"], c["hits"]) for c in counters(service)][:2]
[('STREAMNB_SPAM', 1.0, 0), ('STREAMNB_HAM', 1.0, 0)]
>>> [a["action"] for a in actions(service)]
['add header']
"""

from __future__ import annotations

import math
import time
from typing import Any

import streamnb
from streamnb.mailserve.service import ADD_HEADER, NO_ACTION, REJECT, SYMBOLS, MailService

__all__ = ["actions", "auth", "counters", "symbols"]

#: The one group of symbols.
GROUP = "streamnb"


def _floor(x: float, digits: int = 3) -> float:
    """Rounded down to ``digits`` decimals, as rspamd rounds its counters."""
    power = 10.0**digits
    return math.floor(x * power) / power


def _uptime(service: MailService) -> float:
    return max(time.monotonic() - service.started, 1e-9)


def counters(service: MailService) -> list[dict[str, Any]]:
    """``/counters``: every symbol of :data:`~streamnb.mailserve.service.SYMBOLS` with its hits."""
    scanned = sum(service.scanned.values())
    ms = _floor(1000.0 * service.check_seconds / scanned) if scanned else 0.0
    seconds = _uptime(service)
    return [{"symbol": name, "weight": 1.0, "frequency": _floor(service.hits.get(name, 0) / seconds),
             "hits": service.hits.get(name, 0), "time": ms} for name in SYMBOLS]  # fmt: skip


def symbols(service: MailService) -> list[dict[str, Any]]:
    """``/symbols``: the group of the daemon's symbols, each with its description and counters."""
    rules = []
    for counted in counters(service):
        rules.append({"symbol": counted["symbol"], "weight": counted["weight"],
                      "description": SYMBOLS[counted["symbol"]], "frequency": counted["frequency"],
                      "frequency_stddev": 0.0, "time": counted["time"]})  # fmt: skip
    return [{"group": GROUP, "rules": rules}]


def actions(service: MailService) -> list[dict[str, Any]]:
    """``/actions``: :meth:`~streamnb.mailserve.service.MailService.action_thresholds` as
    rspamd lists them."""
    return [{"action": name, "value": value} for name, value in service.action_thresholds().items()]


def auth(service: MailService, read_only: bool) -> dict[str, Any]:
    """``/auth``, what ``rspamc uptime`` prints (``uptime`` and ``version``)."""
    scanned = service.scanned
    return {"auth": "ok", "version": streamnb.__version__, "uptime": int(_uptime(service)),
            "clean": scanned.get(NO_ACTION, 0), "probable": scanned.get(ADD_HEADER, 0), "greylist": 0,
            "reject": scanned.get(REJECT, 0), "soft_reject": 0, "scanned": sum(scanned.values()),
            "learned": int(sum(service.filters.stat(None)["learned"].values())),
            "read_only": read_only}  # fmt: skip

