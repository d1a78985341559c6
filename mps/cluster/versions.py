"""The peer protocol's versions: which forms of the frames nodes exchange a node reads and writes.

What the nodes of a cluster exchange directly is the peer protocol: the heartbeat that names a
node's peer listener (mps.cluster.membership), a request passed to an owner and its answer, on
the peer listener (mps.cluster.peers) or through a shard's queue (mps.cluster.forwarding), and
the signatures that authenticate them. Each carries its version: a heartbeat the range its node
speaks (`"protocol": [MIN, CURRENT]`), a passed request the version it is written in (the
`X-Mps-Peer-Version` header on the peer listener, `"v"` in a queue frame's head), an answer the
version of the request it answers.

The rule, which lets two releases serve side by side during a rolling upgrade:

- a node speaks and accepts the versions from `MIN` to `CURRENT`;
- two nodes talk at the highest version both accept, read once from the other's heartbeat (no
  exchange per request, so a passed request costs what it did);
- a release may raise `CURRENT`, but keeps accepting the previous release's `CURRENT` for at
  least one release: release N and N+1 always share a version;
- with a peer that shares no version with it (two releases apart), a node passes it nothing:
  the requests for that peer's shards are answered 503 with Retry-After, and the node logs a
  WARNING naming the peer and its versions, once.

Version 1 is the form the nodes spoke before versions were written down, which carries no
version at all: a frame without one is version 1, so a node of that release and a node of this
one talk at version 1. Version 1 readers ignore fields and headers they do not know, which is
what lets the version travel beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CURRENT",
    "MIN",
    "SPOKEN",
    "V1",
    "VERSION",
    "UnspokenVersion",
    "Versions",
    "frame_version",
    "header_version",
]

# The oldest version this release still accepts, and the newest it speaks.
MIN = 1
CURRENT = 1
# The header that carries a passed request's version, and its answer's, on a peer listener.
VERSION = "X-Mps-Peer-Version"


class UnspokenVersion(ValueError):
    """A frame is in a version this node does not speak: it is not acted on."""


@dataclass(frozen=True)
class Versions:
    """A range of protocol versions a node speaks, `low` to `high` inclusive."""

    low: int
    high: int

    def accepts(self, version: int | None) -> bool:
        return version is not None and self.low <= version <= self.high

    def agree(self, other: Versions) -> int | None:
        """The highest version both ranges hold; None when they share none."""
        high = min(self.high, other.high)
        return high if high >= max(self.low, other.low) else None

    def __str__(self) -> str:
        if self.low > self.high:
            return "(unreadable)"
        return str(self.low) if self.low == self.high else f"{self.low} to {self.high}"

    def to_json(self) -> list[int]:
        return [self.low, self.high]

    @classmethod
    def from_json(cls, value: object) -> Versions:
        """A heartbeat's range: absent is version 1 alone (a node of the release before
        versions); anything malformed is a range no node speaks, so nothing is passed to it."""
        if value is None:
            return V1
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and 1 <= value[0] <= value[1]
        ):
            return cls(value[0], value[1])
        return UNREADABLE


# What this release speaks; version 1 alone (a node of the release before versions); nothing.
SPOKEN = Versions(MIN, CURRENT)
V1 = Versions(1, 1)
UNREADABLE = Versions(0, -1)


def header_version(headers: Mapping[str, str]) -> int | None:
    """The version a passed request or answer names in its headers: 1 when it names none, None
    when what it names is not a version."""
    value = headers.get(VERSION)
    if value is None:
        return 1
    return int(value) if value.isascii() and value.isdigit() and len(value) < 6 else None


def frame_version(head: Mapping[str, object]) -> int | None:
    """The version of a queue frame's head: 1 without one, None when it is not a version."""
    value = head.get("v", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
