"""Where webhook work travels on the broker, and the messages it is made of.

Three routing keys per deployment (prefixed with the cluster's name, so two deployments on one
RabbitMQ never take each other's work):

- `events`: one message per batch of committed events, published by the outbox relay of their
  shard owner; consumed by every node, which makes the events' deliveries and their first
  attempts (fan-out);
- `attempts`: one message per attempt due that the fan-out did not make itself: a retry
  (through a delay queue, so the wait survives a restart), a replay, an attempt of a full lane;
  consumed by every node;
- `dead`: a delivery that ran out of attempts, parked; nobody consumes it (operators read it,
  and the delivery row says DEAD).

Every message is JSON, small, and names ids only: the consumer reads what it needs, so a message
redelivered much later acts on the current state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["AttemptJob", "Committed", "EventBatch", "Topology"]


@dataclass(frozen=True)
class Topology:
    prefix: str

    @property
    def events(self) -> str:
        return f"{self.prefix}.webhooks.events"

    @property
    def attempts(self) -> str:
        return f"{self.prefix}.webhooks.attempts"

    @property
    def dead(self) -> str:
        return f"{self.prefix}.webhooks.dead"

    @property
    def queues(self) -> tuple[str, ...]:
        """The durable queues (each named as its routing key), delay queues aside."""
        return (self.events, self.attempts, self.dead)


@dataclass(frozen=True, slots=True)
class Committed:
    """One committed event, as the relay names it."""

    event_id: str
    company_id: str
    mode: str


@dataclass(frozen=True, slots=True)
class EventBatch:
    """Make the deliveries of these events (and their first attempts): one message per pass of
    the relay (up to BATCH events), not one per event, so the broker's work does not grow with
    the rate of events."""

    items: tuple[Committed, ...]

    def encode(self) -> bytes:
        return orjson.dumps({"events": [[i.event_id, i.company_id, i.mode] for i in self.items]})

    @classmethod
    def decode(cls, body: bytes) -> EventBatch:
        data: dict[str, Any] = orjson.loads(body)
        return cls(tuple(Committed(str(e), str(c), str(m)) for e, c, m in data["events"]))


@dataclass(frozen=True, slots=True)
class AttemptJob:
    """Make attempt number `attempt` of a delivery, not before `due` (unix ms). `lane` is the
    endpoint's id (or the origin of a payment's own URL): attempts of one lane share its slots."""

    delivery_id: str
    attempt: int
    due_ms: int
    lane: str

    def encode(self) -> bytes:
        return orjson.dumps(
            {"d": self.delivery_id, "a": self.attempt, "due": self.due_ms, "l": self.lane}
        )

    @classmethod
    def decode(cls, body: bytes) -> AttemptJob:
        data: dict[str, Any] = orjson.loads(body)
        return cls(str(data["d"]), int(data["a"]), int(data["due"]), str(data["l"]))
