"""What ClusterNode's parts (mps.cluster.ownership, mps.cluster.heartbeats, mps.cluster.asks)
share: the node's state that more than one of them reads."""

from __future__ import annotations

import aio_pika.abc

from mps.actors.shards import ShardRouter
from mps.cluster.membership import Membership
from mps.cluster.timings import ClusterTimings
from mps.cluster.versions import Versions

__all__ = ["NodePart"]


class NodePart:
    """A base of ClusterNode's parts, which are mixins: ClusterNode's `__init__` sets the
    attributes declared here and in each part, and the methods a part declares under
    TYPE_CHECKING come from its other parts."""

    node_id: str
    name: str
    router: ShardRouter
    timings: ClusterTimings
    membership: Membership
    peer_address: str | None
    # The peer protocol versions this node speaks (mps.cluster.versions), and the peers and
    # frames (with the versions they spoke) already named in a WARNING for sharing none with it.
    protocol: Versions
    _unspoken: set[tuple[str, Versions]]
    draining: bool
    connected: bool
    _publishing: aio_pika.abc.AbstractChannel | None
