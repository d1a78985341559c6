"""Who is in the cluster, as this node sees it: the nodes whose heartbeats arrived recently.

Every node broadcasts a heartbeat each second naming the shards it owns and whether it is
draining. From them a node knows how many nodes share the shards (its fair share), and which
shards nobody claims (an owner died, or a shard was just handed over): those it probes, so that
whichever node the broker made the shard's active consumer learns it owns it.

A heartbeat also names the node's peer listener ("host:port"), where other nodes pass it the
requests of the shards it owns (mps.cluster.peers). Membership decides nothing about ownership
itself (the broker does); a wrong view only delays balancing, sends a needless probe, or sends a
request to a node that no longer owns its shard, which does not run it (the asker then passes it
through the broker).

A heartbeat also says which peer protocol versions its node speaks (mps.cluster.versions): a
node passes requests to another at the highest version both speak, read from here, and to none
that shares no version with it. The heartbeat's own fields (node, owned, draining, peer) keep
their meaning in every version, so that nodes of any two releases still see each other's shards
and balance them.

A node that stops beating for `timeout` is taken for gone (`departures` reports it once, with
its last heartbeat: its peer listener and the shards it claimed), and one heard again after that
for back (`saw` says so): the node logs both (mps.cluster.heartbeats), at WARNING unless the node
said it was draining, which is how a clean shutdown ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from mps.cluster.versions import V1, Versions

__all__ = ["Heartbeat", "Membership"]


@dataclass(frozen=True)
class Heartbeat:
    node: str
    owned: frozenset[int]
    draining: bool = False
    seen_at: float = 0.0
    # Where the node's peer listener is ("host:port"); None until it listens.
    peer: str | None = None
    # The peer protocol versions the node speaks; a heartbeat without them is version 1's.
    protocol: Versions = V1

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "owned": sorted(self.owned),
            "draining": self.draining,
            "peer": self.peer,
            "protocol": self.protocol.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, object], seen_at: float) -> Heartbeat:
        owned = data.get("owned")
        return cls(
            node=str(data["node"]),
            owned=frozenset(int(i) for i in owned) if isinstance(owned, list) else frozenset(),
            draining=bool(data.get("draining")),
            seen_at=seen_at,
            peer=str(data["peer"]) if data.get("peer") else None,
            protocol=Versions.from_json(data.get("protocol")),
        )


@dataclass
class Membership:
    node: str
    shard_count: int
    # A node whose last heartbeat is older than this is taken for gone.
    timeout: float = 3.5
    _seen: dict[str, Heartbeat] = field(default_factory=dict)
    # Nodes taken for gone, with their last heartbeat; forgotten once heard again.
    _departed: dict[str, Heartbeat] = field(default_factory=dict)
    # Departures not reported yet by `departures`.
    _unreported: list[Heartbeat] = field(default_factory=list)

    def saw(self, heartbeat: Heartbeat) -> Heartbeat | None:
        """Note `heartbeat`. When its node had been taken for gone, its last heartbeat from
        before (the node is back); None otherwise."""
        if heartbeat.node == self.node:
            return None
        self._seen[heartbeat.node] = heartbeat
        return self._departed.pop(heartbeat.node, None)

    def others(self, now: float) -> list[Heartbeat]:
        """The other nodes heard from within `timeout`, by name."""
        for name in [n for n, h in self._seen.items() if now - h.seen_at > self.timeout]:
            gone = self._departed[name] = self._seen.pop(name)
            self._unreported.append(gone)
        # A node gone for an hour is not remembered for ever.
        for name in [n for n, h in self._departed.items() if now - h.seen_at > 3600]:
            del self._departed[name]
        return sorted(self._seen.values(), key=lambda h: h.node)

    def heard_within(self, now: float) -> int:
        """How many other nodes were heard from within `timeout`, changing nothing (for a
        metrics scrape, which must not be what takes a node for gone)."""
        return sum(1 for h in self._seen.values() if now - h.seen_at <= self.timeout)

    def departures(self, now: float) -> list[Heartbeat]:
        """The nodes taken for gone since the last call, each with its last heartbeat."""
        self.others(now)
        gone, self._unreported = self._unreported, []
        return gone

    def former_owner(self, index: int, now: float) -> Heartbeat | None:
        """The last heartbeat of a node that claimed shard `index` without draining and is not
        heard from any more (this node is taking the shard from a lost node); the claim is
        forgotten, so the shard is reported taken from it once."""
        self.others(now)
        for name, heartbeat in self._departed.items():
            if index in heartbeat.owned and not heartbeat.draining:
                self._departed[name] = replace(heartbeat, owned=heartbeat.owned - {index})
                return heartbeat
        return None

    def peer_of(self, index: int, now: float) -> str | None:
        """The peer listener of the node whose recent heartbeat claims shard `index`, when it is
        not draining (it is handing its shards over); None when no such node is known."""
        owner = self.owner_of(index, now)
        return owner.peer if owner is not None else None

    def owner_of(self, index: int, now: float) -> Heartbeat | None:
        """The recent heartbeat of the node claiming shard `index` with a peer listener, when it
        is not draining; None when no such node is known."""
        for heartbeat in self._seen.values():
            if (
                index in heartbeat.owned
                and heartbeat.peer is not None
                and not heartbeat.draining
                and now - heartbeat.seen_at <= self.timeout
            ):
                return heartbeat
        return None

    def common_version(self, mine: Versions, now: float) -> int | None:
        """The highest version this node (speaking `mine`) and every other node heard from
        within `timeout` speak: what a frame whose reader is not known in advance (one sent
        through a shard's queue) is written in. None when there is none."""
        low, high = mine.low, mine.high
        for heartbeat in self.others(now):
            low, high = max(low, heartbeat.protocol.low), min(high, heartbeat.protocol.high)
        return high if high >= low else None

    def claimed_by_another(self, index: int, node: str, now: float) -> bool:
        """Whether a node other than `node`, heard from within `timeout` and not draining,
        claims shard `index`. A node claims a shard once it has taken it, its epoch raised in
        storage, so from then on whatever `node` still commits for the shard is refused."""
        return any(
            h.node != node
            and index in h.owned
            and not h.draining
            and now - h.seen_at <= self.timeout
            for h in self._seen.values()
        )

    def heard_at(self, node: str) -> float | None:
        """When `node`'s last heartbeat arrived (monotonic), heard from still or gone; None for
        a node never heard from, or forgotten."""
        heartbeat = self._seen.get(node) or self._departed.get(node)
        return heartbeat.seen_at if heartbeat is not None else None

    def departed(self, now: float) -> set[str]:
        """The nodes that were heard from and no longer are."""
        self.others(now)
        return set(self._departed)

    def share(self, now: float, *, draining: bool = False) -> int:
        """How many shards this node should hold: an even split over the nodes not draining
        (rounded up, so the shares always cover every shard); 0 while this node drains."""
        if draining:
            return 0
        serving = 1 + sum(1 for h in self.others(now) if not h.draining)
        return math.ceil(self.shard_count / serving)

    def unclaimed(self, now: float, mine: set[int] | frozenset[int]) -> set[int]:
        """Shards that neither this node nor any node heard from claims."""
        claimed = set(mine)
        for heartbeat in self.others(now):
            claimed |= heartbeat.owned
        return set(range(self.shard_count)) - claimed
