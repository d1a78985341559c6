"""How often a cluster node beats, balances and reconnects, and how long it waits
(mps.cluster.node)."""

from __future__ import annotations

from dataclasses import dataclass

from mps.config import Settings


@dataclass(frozen=True)
class ClusterTimings:
    # The three an operator may tune (MPS_HEARTBEAT_INTERVAL, MPS_NODE_TIMEOUT,
    # MPS_FORWARD_WITHIN) default to the settings' defaults, so a node made without settings
    # (tests, benchmarks) runs as production does; `from_settings` gives a node its own.
    heartbeat: float = Settings.heartbeat_interval
    # A node not heard from for this long is taken for gone: its shards are probed and the loss
    # is logged at WARNING. Three and a half heartbeats, so that a heartbeat or two delayed by
    # a busy event loop is not a loss. Requests waiting on it are not answered for that alone
    # (mps.cluster.asks): a stalled node that wakes still runs them.
    node_timeout: float = Settings.node_timeout
    balance_every: float = 1.0
    # After handing a shard over, consume its queue again as a standby after this long.
    standby_after: float = 3.0
    # Handing a shard over waits at most this long for its work in flight.
    drain_within: float = 10.0
    # A passed request is answered 503 if its owner has not answered within this long: well
    # inside a balancer's server timeout (30 s and more), so the client gets the 503 and its
    # Retry-After rather than the balancer's 504. The owner is told this deadline and does not
    # start the request past it; one it started may still complete, so the 503 says the outcome
    # is unknown and to retry with the same Idempotency-Key. Another node taking the shard ends
    # the wait sooner (its epoch refuses the owner's later commits).
    forward_within: float = Settings.forward_within
    # AMQP heartbeat, in seconds: the broker takes a node that answered none for two to three of
    # these (a SIGSTOP, a partition) for gone and gives its shards to others: with 3, a paused
    # owner's shard was owned again after 7.4-7.5 s (bench/paused_peer.py; 4.3-5.0 s with 2,
    # about 12 s with 5). The heartbeat is answered on the event loop, so a loop stalled for
    # two heartbeats or more (a long collection, a CPU hog) loses the broker and every shard
    # with it: with 2, a 5.5 s stall moved all 32 shards of a node; 3 rides out such a stall.
    # The broker URL's own `heartbeat=` query parameter wins over this.
    broker_heartbeat: int = 3
    # After losing the broker, try to connect again this often (aio-pika's default is 5 s, and
    # the node serves no shard until it is back).
    reconnect_every: float = 1.0

    @classmethod
    def from_settings(cls, settings: Settings) -> ClusterTimings:
        """The timings the settings give (load_settings checked their order); the rest as
        tuned here."""
        return cls(
            heartbeat=settings.heartbeat_interval,
            node_timeout=settings.node_timeout,
            forward_within=settings.forward_within,
        )
