"""What one run of the Kafka service did: counts of events, checkpoints and snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RunSummary"]


@dataclass
class RunSummary:
    """What one :meth:`~streamnb.kafka.service.Service.run` did."""

    events: int = 0
    learned: int = 0
    predicted: int = 0
    late_labels: int = 0
    dead_letters: dict = field(default_factory=dict)
    checkpoints: int = 0
    checkpoint_id: int = 0
    n_seen: float = 0.0
    seconds: float = 0.0
    accuracy: float | None = None
    reason: str = ""
    snapshots_published: int = 0
    snapshots_received: int = 0
    snapshots_ignored: int = 0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

