"""Creating topics explicitly (auto-created topics get the broker's default partition count)."""

from __future__ import annotations

import logging
import time

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from streamnb.kafka.errors import BrokerUnavailableError

__all__ = ["ensure_topics"]

log = logging.getLogger(__name__)


def ensure_topics(bootstrap: str, topics: dict[str, int], timeout: float = 30.0,
                  configs: dict[str, dict[str, str]] | None = None) -> list[str]:
    """Create the topics of ``{name: partitions}`` that do not exist; return those created.

    ``configs``: topic settings by name (e.g. ``{"models": {"cleanup.policy": "compact"}}``); a
    broker that refuses them gets the topic without them (logged).
    """
    configs = configs or {}
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
            break
        except KafkaError as exc:
            if time.monotonic() > deadline:
                raise BrokerUnavailableError(f"cannot reach a broker at {bootstrap}: {exc}") from exc
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(name, n, 1, topic_configs=configs.get(name, {})) for name, n in topics.items()
               if name not in existing]
        if new:
            try:
                admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
            except KafkaError as exc:
                if not any(t.topic_configs for t in new):
                    raise
                log.warning("broker refused topic configs %s (%s): creating the topics without them",
                            {t.name: t.topic_configs for t in new if t.topic_configs}, exc)
                try:
                    admin.create_topics([NewTopic(t.name, t.num_partitions, 1) for t in new])
                except TopicAlreadyExistsError:
                    pass
            log.info("created topics %s", [t.name for t in new])
        _wait_visible(admin, list(topics), deadline)
        return [t.name for t in new]
    finally:
        admin.close()


def _wait_visible(admin: KafkaAdminClient, names: list[str], deadline: float) -> None:
    while True:
        missing = set(names) - set(admin.list_topics())
        if not missing:
            return
        if time.monotonic() > deadline:
            raise BrokerUnavailableError(f"topics {sorted(missing)} did not appear")
        time.sleep(0.05)
