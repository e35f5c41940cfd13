"""The daemon's Prometheus metrics, one set for all its processes.

With ``--workers N`` the kernel hands each connection, ``GET /metrics`` included, to any of the
processes, so each process's own counters would make a scrape answer a different process every
time. The processes therefore keep their values in files of one directory
(``prometheus_client``'s multiprocess mode: a memory-mapped file per process) and every process
answers ``/metrics`` with the sums over all of them:

- counters and histograms are summed over processes, those of a restarted worker included;
- ``streamnb_mail_users_resident`` has one sample per live process (label ``pid``): each
  process holds its own copy of the users it serves;
- a learn a worker hands to the writer is counted once, by the writer, which learns it (its
  time there excludes the hop from the worker).

A single process keeps its values in memory, as any ``prometheus_client`` registry.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client import multiprocess

__all__ = ["Metrics", "process_gone", "share_between_processes"]

#: Where the processes of one daemon keep their values (set by :func:`share_between_processes`).
DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"


def share_between_processes(directory: str) -> None:
    """Keep this process's metric values in ``directory``, with those of the daemon's other
    processes (started with this environment, they do the same). Call before any
    :class:`Metrics` is made; a process does this once."""
    os.environ[DIRECTORY] = directory
    values.ValueClass = values.MultiProcessValue()


def process_gone(pid: int) -> None:
    """Forget a process's live gauges (a worker that exited); its counters stay in the sums."""
    if os.environ.get(DIRECTORY):
        multiprocess.mark_process_dead(pid)


class Metrics:
    """Checks by verdict, learns by class, errors by kind, latency by request, users in memory,
    failed accepts and connections turned away."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.checks = Counter("streamnb_mail_checks", "Messages checked, by verdict", ["label"], registry=reg)
        self.learns = Counter("streamnb_mail_learns", "Messages learned, by class", ["label"], registry=reg)
        self.errors = Counter("streamnb_mail_errors", "Requests answered with an error, by kind", ["kind"],
                              registry=reg)  # fmt: skip
        self.latency = Histogram("streamnb_mail_seconds", "Time to answer, by request", ["request"],
                                 buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0),
                                 registry=reg)  # fmt: skip
        self.users = Gauge("streamnb_mail_users_resident", "Users' filters in memory (per process)",
                           registry=reg, multiprocess_mode="liveall")  # fmt: skip
        self.accept_errors = Counter("streamnb_mail_accept_errors", "Failed accepts (e.g. EMFILE), by listener and error",
                                     ["listener", "error"], registry=reg)  # fmt: skip
        self.refused = Counter("streamnb_mail_connections_refused",
                               "Connections closed at once for want of a slot, by listener", ["listener"],
                               registry=reg)  # fmt: skip
        self.follow_lag_learns = Gauge("streamnb_mail_follow_lag_learns",
                                       "Learns in the cluster's learn log not yet applied here (--state)",
                                       registry=reg, multiprocess_mode="liveall")  # fmt: skip
        self.follow_lag_seconds = Gauge("streamnb_mail_follow_lag_seconds",
                                        "Seconds since this daemon last had every learn of the log (--state)",
                                        registry=reg, multiprocess_mode="liveall")  # fmt: skip
        self.check_seconds = self.latency.labels("check")
        self.learn_seconds = self.latency.labels("learn")
        self.checked = {label: self.checks.labels(label) for label in ("ham", "unsure", "spam")}

    def exposition(self) -> bytes:
        """The Prometheus text of every process of the daemon (of this one if it runs alone)."""
        path = os.environ.get(DIRECTORY)
        if not path:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path)
        return generate_latest(merged)
