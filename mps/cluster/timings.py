"""How often a cluster node beats, balances and reconnects, and how long it waits
(mps.cluster.node)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterTimings:
    heartbeat: float = 1.0
    # A node not heard from for this long is taken for gone (its shards are probed).
    node_timeout: float = 3.5
    balance_every: float = 1.0
    # After handing a shard over, consume its queue again as a standby after this long.
    standby_after: float = 3.0
    # Handing a shard over waits at most this long for its work in flight.
    drain_within: float = 10.0
    # A passed request is answered 503 if its owner has not answered within this long.
    forward_within: float = 25.0
    # AMQP heartbeat: how soon the broker notices a node that stopped answering (SIGSTOP, a
    # network partition) and gives its shards to others; about twice this in practice.
    broker_heartbeat: int = 5
    # After losing the broker, try to connect again this often (aio-pika's default is 5 s, and
    # the node serves no shard until it is back).
    reconnect_every: float = 1.0
