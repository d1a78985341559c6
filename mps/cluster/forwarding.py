"""A request passed to the node that owns its company's shard, and the answer passed back.

The node that received the request sends it whole (method, path, headers, body, the client's
address and the request id) to the owner: straight to its peer listener (mps.cluster.peers), or
through the shard's queue when the owner is not known or did not run it (mps.cluster.node). The
owner runs it through its own HTTP stack exactly as if the client had asked it, and sends the
answer back whole (status, headers, body). The client therefore gets the owner's answer byte for
byte.

Through the broker both travel as one binary frame: a 4-byte length, a small JSON head, then the
body as is. The head's `"v"` is the frame's peer protocol version (mps.cluster.versions; a head
without one is version 1, as the release before versions wrote it); an answer is written in the
version of the request it answers. The owner trusts the forwarded client address and request id
only from a request that arrived on its peer listener signed with the cluster's secret
(`mps.http.forwarded`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import hdrs

from mps.cluster.versions import CURRENT, VERSION, frame_version

__all__ = [
    "FORWARDED_FOR",
    "FORWARDED_REQUEST_ID",
    "NOT_RUN",
    "PEER_ANSWER",
    "PEER_SIGNATURE",
    "Answer",
    "Passed",
]

# Headers of a request passed to an owner's peer listener (mps.cluster.peers).
PEER_SIGNATURE = "X-Mps-Peer"
FORWARDED_FOR = "X-Mps-Forwarded-For"
FORWARDED_REQUEST_ID = "X-Mps-Request-Id"
# When the asking node gives up on the request (Unix time, whole milliseconds): the owner does
# not start it after that (mps.http.forwarded).
DEADLINE = "X-Mps-Deadline"
# Headers of the owner's answer: its proof, and why it did not run the request.
PEER_ANSWER = "X-Mps-Peer-Answer"
NOT_RUN = "X-Mps-Not-Run"

# Said of a request given up on after it was sent: its outcome is unknown, and only a retry that
# the owner can recognise (the same key) is safe.
MAY_HAVE_RUN = (
    "it may have taken effect: retry with the same Idempotency-Key, which answers its outcome "
    "(a retry without one may run it twice)"
)

# Hop-by-hop or recomputed: never copied from one connection to the next.
_NOT_COPIED = frozenset(
    h.lower()
    for h in (
        hdrs.CONNECTION,
        hdrs.KEEP_ALIVE,
        hdrs.TRANSFER_ENCODING,
        hdrs.CONTENT_LENGTH,
        hdrs.TE,
        hdrs.TRAILER,
        hdrs.UPGRADE,
        hdrs.PROXY_AUTHORIZATION,
        hdrs.DATE,
        PEER_SIGNATURE,
        FORWARDED_FOR,
        FORWARDED_REQUEST_ID,
        DEADLINE,
        PEER_ANSWER,
        NOT_RUN,
        VERSION,
    )
)
_LENGTH = struct.Struct(">I")


def _frame(head: dict[str, Any], body: bytes) -> bytes:
    encoded = orjson.dumps(head)
    return _LENGTH.pack(len(encoded)) + encoded + body


def _unframe(data: bytes) -> tuple[dict[str, Any], bytes]:
    (length,) = _LENGTH.unpack_from(data)
    start = _LENGTH.size
    head = orjson.loads(data[start : start + length])
    if not isinstance(head, dict):
        msg = "a frame's head must be an object"
        raise ValueError(msg)
    return head, data[start + length :]


def copied(raw: Any) -> list[tuple[str, str]]:
    """The end-to-end headers of a request or response, from its raw header pairs: in order,
    repeats kept, names spelled as they were sent."""
    pairs = ((k.decode("latin-1"), v.decode("latin-1")) for k, v in raw)
    return [(k, v) for k, v in pairs if k.lower() not in _NOT_COPIED]


@dataclass(frozen=True)
class Passed:
    """A client's request, as the owner needs it."""

    method: str
    path: str  # with its query string, as the client sent it (encoded)
    headers: list[tuple[str, str]]
    body: bytes
    client: str | None
    request_id: str
    # When the asking node gives up on it (Unix time, whole milliseconds); None: no deadline.
    deadline_ms: int | None = None

    def encode(self, version: int = CURRENT) -> bytes:
        head = {
            "v": version,
            "m": self.method,
            "p": self.path,
            "h": self.headers,
            "c": self.client,
            "r": self.request_id,
            "d": self.deadline_ms,
        }
        return _frame(head, self.body)

    @classmethod
    def decode(cls, data: bytes) -> Passed:
        return cls.read(data)[0]

    @classmethod
    def read(cls, data: bytes) -> tuple[Passed, int | None]:
        """The request a frame holds, and the version it is written in (None: the head names
        something that is not a version). Every version so far lays the head out alike, so the
        request is read whatever the version; the caller refuses one it does not speak."""
        head, body = _unframe(data)
        passed = cls(
            method=str(head["m"]),
            path=str(head["p"]),
            headers=[(str(k), str(v)) for k, v in head["h"]],
            body=body,
            client=head.get("c"),
            request_id=str(head["r"]),
            deadline_ms=int(head["d"]) if isinstance(head.get("d"), int) else None,
        )
        return passed, frame_version(head)


@dataclass(frozen=True)
class Answer:
    """The owner's response, as the client gets it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def encode(self, version: int = CURRENT) -> bytes:
        return _frame({"v": version, "s": self.status, "h": self.headers}, self.body)

    @classmethod
    def decode(cls, data: bytes) -> Answer:
        head, body = _unframe(data)
        return cls(int(head["s"]), [(str(k), str(v)) for k, v in head["h"]], body)
