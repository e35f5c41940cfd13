"""Service metrics: Prometheus (on 127.0.0.1 by default) and a live progress line."""

from __future__ import annotations

import sys
import time
from collections import deque
from itertools import islice
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Health", "Metrics", "Progress", "RollingAccuracy"]


class RollingAccuracy:
    """Accuracy over the last ``window`` labelled predictions.

    >>> acc = RollingAccuracy(window=2)
    >>> for ok in (False, True, True):
    ...     acc.update(ok)
    >>> acc.get(), acc.n_total, acc.n_correct
    (1.0, 3, 2)
    """

    def __init__(self, window: int = 1000) -> None:
        self._hits: deque[bool] = deque(maxlen=window)
        self._sum = 0
        self.n_total = 0
        self.n_correct = 0

    def update(self, correct: bool) -> None:
        if len(self._hits) == self._hits.maxlen:
            self._sum -= self._hits[0]
        self._hits.append(correct)
        self._sum += correct
        self.n_total += 1
        self.n_correct += correct

    def update_many(self, hits: list[bool]) -> None:
        """``update`` for each of ``hits``, in order.

        >>> a, b = RollingAccuracy(window=3), RollingAccuracy(window=3)
        >>> hits = [True, False, True, True, False]
        >>> for h in hits:
        ...     a.update(h)
        >>> b.update_many(hits[:2]); b.update_many(hits[2:])
        >>> (a.get(), a.n_total, a.n_correct) == (b.get(), b.n_total, b.n_correct)
        True
        """
        if not hits:
            return
        n, correct = len(hits), sum(hits)
        self.n_total += n
        self.n_correct += correct
        window = self._hits.maxlen or 0
        if n >= window:
            self._hits = deque(hits[n - window:], maxlen=window)
            self._sum = sum(self._hits)
            return
        drop = len(self._hits) + n - window
        if drop > 0:
            self._sum -= sum(islice(self._hits, drop))
        self._hits.extend(hits)
        self._sum += correct

    def get(self) -> float | None:
        return self._sum / len(self._hits) if self._hits else None


class Health:
    """Whether the service is consuming: the poll loop calls :meth:`beat` on every pass (it
    polls at least every 200 ms, records or not); healthy while the last beat is younger than
    ``max_age`` seconds. A loop that is stuck (a blocked plug-in, a hung call) or gone (a
    crash, a shutdown) turns unhealthy; a process that merely serves ``/metrics`` does not count.

    >>> h = Health(max_age=60.0)
    >>> h.status()
    (False, 'not consuming yet')
    >>> h.beat(); h.status()[0]
    True
    >>> h.stop(); h.status()
    (False, 'stopped')
    """

    def __init__(self, max_age: float = 60.0) -> None:
        self.max_age = max_age
        self._last: float | None = None
        self._stopped = False

    def beat(self) -> None:
        self._last = time.monotonic()

    def stop(self) -> None:
        self._stopped = True

    def status(self) -> tuple[bool, str]:
        """``(healthy, reason)``."""
        if self._stopped:
            return False, "stopped"
        if self._last is None:
            return False, "not consuming yet"
        age = time.monotonic() - self._last
        if age > self.max_age:
            return False, f"poll loop stalled: last pass {age:.1f} s ago (limit {self.max_age:g} s)"
        return True, f"consuming: last pass {age:.1f} s ago"


class Metrics:
    """Prometheus metrics of one service, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.events = Counter("streamnb_events", "Input messages handled, by outcome", ["outcome"], registry=r)
        self.dead_letters = Counter("streamnb_dead_letters", "Messages sent to the dead-letter topic",
                                    ["reason"], registry=r)
        self.checkpoints = Counter("streamnb_checkpoints", "Checkpoints written", registry=r)
        self.checkpoint_failures = Counter("streamnb_checkpoint_failures", "Checkpoints skipped or failed",
                                           registry=r)
        self.checkpoint_seconds = Histogram("streamnb_checkpoint_seconds", "Time to write a checkpoint",
                                            registry=r)
        self.commit_failures = Counter("streamnb_commit_failures", "Offset commits that failed", registry=r)
        self.producer_recreated = Counter("streamnb_producer_recreated", "Producers recreated after errors",
                                          registry=r)
        self.lag = Gauge("streamnb_lag", "Messages behind the log end, over owned partitions", registry=r)
        self.accuracy = Gauge("streamnb_rolling_accuracy", "Accuracy of the last labelled predictions",
                              registry=r)
        self.n_seen = Gauge("streamnb_model_n_seen", "Weight of the events the model has learned", registry=r)
        self.partitions = Gauge("streamnb_partitions", "Partitions owned", registry=r)
        # label children looked up once (labels() costs a lock and a dict lookup per call)
        self.learned = self.events.labels("learned")
        self.predicted = self.events.labels("predicted")
        self.ignored = self.events.labels("ignored")
        self.dead_lettered = self.events.labels("dead_letter")
        self._reasons: dict[str, Any] = {}
        self._server: Any = None

    def dead_letter(self, reason: str) -> None:
        """Count one dead letter for ``reason``."""
        child = self._reasons.get(reason)
        if child is None:
            child = self._reasons[reason] = self.dead_letters.labels(reason)
        child.inc()
        self.dead_lettered.inc()

    def serve(self, port: int, host: str = "127.0.0.1", health: Health | None = None) -> int:
        """Serve ``/metrics`` (Prometheus text) and ``/healthz`` (200 while ``health`` says the
        service is consuming, else 503; always 503 without ``health``); returns the port
        (``port=0`` picks a free one)."""
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        registry = self.registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    ok, reason = health.status() if health is not None else (False, "no health check")
                    self._send(200 if ok else 503, "text/plain; charset=utf-8", (reason + "\n").encode())
                elif path in ("/metrics", "/"):
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics or /healthz\n")

            def _send(self, code: int, ctype: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # no access log on stderr
                pass

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="streamnb-metrics", daemon=True).start()
        self._server = server
        return server.server_port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class Progress:
    """A live status line (events/s, lag, rolling accuracy): refreshed in place on a terminal,
    one line per ``interval`` (at least 1 s) otherwise."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.5, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval if self.tty else max(interval, 1.0)
        self.enabled = self.tty if enabled is None else enabled
        self._last = 0.0
        self._last_n = 0
        self._start = time.monotonic()
        self._rate = 0.0
        self._shown = False

    def update(self, n_events: int, lag: int | None, accuracy: float | None, dead: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        if self._last:
            self._rate = (n_events - self._last_n) / max(now - self._last, 1e-9)
        else:
            self._rate = n_events / max(now - self._start, 1e-9)
        self._last, self._last_n = now, n_events
        if not self.enabled:
            return
        acc = "  -  " if accuracy is None else f"{accuracy:6.2%}"
        lag_s = "?" if lag is None else f"{lag:,}"
        line = (f"{n_events:>9,} events  {self._rate:>8,.0f} ev/s  lag {lag_s:>7}  "
                f"accuracy(last 1000) {acc}  dead letters {dead:,}   ")
        if self.tty:
            self.stream.write("\r" + line)
            self._shown = True
        else:
            self.stream.write(line.rstrip() + "\n")
        self.stream.flush()

    @property
    def rate(self) -> float:
        return self._rate

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
