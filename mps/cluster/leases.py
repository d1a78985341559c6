"""The per-user standard limit's authority in a cluster (mps.limits.shared): the owner of the
shard the user's key hashes to keeps the key's window, and the other nodes lease blocks of it
through the shard's queue, as they pass requests on.

When the owner cannot be asked (the broker is away, the shard is moving), a node still must not
let a user past the limit: it then grants from a ledger of its own, holding the key to its part
of the limit (the limit divided by the nodes it knows of), so the nodes together stay within it.

A lease's request and answer name their peer protocol version (`"v"`, mps.cluster.versions; none
is version 1). An owner that does not speak the request's version grants nothing and answers
nothing: the asker falls back to its own part, as when the owner cannot be asked.
"""

from __future__ import annotations

import time

import orjson

from mps.cluster.node import ClusterNode
from mps.cluster.versions import UnspokenVersion, frame_version
from mps.domain.shards import shard_of
from mps.errors import Unavailable
from mps.limits import Grant, Limit, QuotaLedger

__all__ = ["LEASE", "ClusterAuthority"]

LEASE = "lease"
# A lease is on the path of a request: past this the node falls back to its own part.
LEASE_WITHIN = 2.0


class ClusterAuthority:
    def __init__(self, node: ClusterNode, ledger: QuotaLedger | None = None) -> None:
        self._node = node
        self._ledger = ledger or QuotaLedger()
        # Windows granted here when the owner could not be asked: a part of each limit.
        self._fallback = QuotaLedger()
        node.services[LEASE] = self._serve

    def _nodes(self) -> int:
        return 1 + len(self._node.membership.others(time.monotonic()))

    async def __call__(self, limit: Limit, key: str, want: int) -> Grant:
        index = shard_of(key, self._node.router.shard_count)
        if self._node.router.owns_shard(index):
            return self._ledger.grant(limit, key, want, self._nodes())
        now = time.monotonic()
        version = self._node.membership.common_version(self._node.protocol, now)
        request = orjson.dumps(
            {
                "v": version or self._node.protocol.high,
                "limit": {"name": limit.name, "limit": limit.limit, "period": limit.period},
                "key": key,
                "want": want,
            }
        )
        try:
            answer = orjson.loads(await self._node.ask(index, LEASE, request, LEASE_WITHIN))
        except (TimeoutError, Unavailable):
            nodes = self._nodes()
            part = Limit(limit.name, max(1, limit.limit // nodes), limit.period)
            return self._fallback.grant(part, key, want, 1)
        return Grant(
            granted=int(answer["granted"]),
            remaining=int(answer["remaining"]),
            reset_in=float(answer["reset_in"]),
            retry_after=answer.get("retry_after"),
        )

    async def _serve(self, body: bytes) -> bytes:
        request = orjson.loads(body)
        version = frame_version(request)
        if not self._node.protocol.accepts(version):
            self._node.warn_unreadable(version)
            msg = f"a lease request in peer protocol version {version}, which this node cannot read"
            raise UnspokenVersion(msg)
        spec = request["limit"]
        limit = Limit(str(spec["name"]), int(spec["limit"]), float(spec["period"]))
        grant = self._ledger.grant(limit, str(request["key"]), int(request["want"]), self._nodes())
        return orjson.dumps(
            {
                "v": version,
                "granted": grant.granted,
                "remaining": grant.remaining,
                "reset_in": grant.reset_in,
                "retry_after": grant.retry_after,
            }
        )
