"""The cluster's names on the broker and the kinds of its messages (mps.cluster.node).

Each shard has one durable queue (`shard_queue`); heartbeats go through the cluster's topic
exchange (`cluster_exchange`); a shard message's AMQP type says what it asks of the owner, and a
reply's type says how a passed request is going.
"""

from __future__ import annotations

import aio_pika
import aio_pika.abc
import aio_pika.exceptions

from mps.adapters.broker import DELAY_LEVELS_MS, delay_queue_name
from mps.domain.shards import SHARD_COUNT
from mps.webhooks.topology import Topology

HEARTBEAT_KEY = "heartbeat"
PROBE = "probe"
HTTP = "http"


def shard_queue(cluster: str, index: int) -> str:
    return f"{cluster}.shard.{index}"


def cluster_exchange(cluster: str) -> str:
    return f"{cluster}.cluster"


async def delete_cluster(url: str, cluster: str) -> None:
    """Remove a cluster's durable queues and exchange from the broker, for a cluster gone for
    good (its nodes stopped): a benchmark's or a test's."""
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        for index in range(SHARD_COUNT):
            await channel.queue_delete(shard_queue(cluster, index))
        await channel.exchange_delete(cluster_exchange(cluster))
        topology = Topology(cluster)
        for queue in topology.queues:
            await channel.queue_delete(queue)
        for level in DELAY_LEVELS_MS:
            await channel.queue_delete(delay_queue_name(topology.attempts, level))
    finally:
        await connection.close()


STARTED = "started"
# The owner took a passed request but could not run it: the asker answers 503 now, rather than
# at its deadline.
FAILED = "failed"
