"""A request passed to the node that owns its company's shard, and the answer passed back.

The node that received the request sends it whole (method, path, headers, body, the client's
address and the request id) through the shard's queue; the owner runs it through its own HTTP
stack, over a private Unix socket, exactly as if the client had asked it, and sends the answer
back whole (status, headers, body). The client therefore gets the owner's answer byte for byte.

Both travel as one binary frame: a 4-byte length, a small JSON head, then the body as is.
The owner trusts the forwarded client address and request id only from a request that arrived
on its Unix socket carrying its own secret (`mps.http.forwarded`), which never leaves the process.
"""

from __future__ import annotations

import asyncio
import secrets
import struct
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import hdrs

__all__ = [
    "FORWARDED_FOR",
    "FORWARDED_REQUEST_ID",
    "FORWARDED_SECRET",
    "Answer",
    "LocalDispatch",
    "Passed",
]

# Headers of a request passed on through the owner's Unix socket.
FORWARDED_SECRET = "X-Mps-Forwarded"  # noqa: S105 - a header name
FORWARDED_FOR = "X-Mps-Forwarded-For"
FORWARDED_REQUEST_ID = "X-Mps-Request-Id"

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
        FORWARDED_SECRET,
        FORWARDED_FOR,
        FORWARDED_REQUEST_ID,
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
    path: str  # with its query string
    headers: list[tuple[str, str]]
    body: bytes
    client: str | None
    request_id: str

    def encode(self) -> bytes:
        head = {
            "m": self.method,
            "p": self.path,
            "h": self.headers,
            "c": self.client,
            "r": self.request_id,
        }
        return _frame(head, self.body)

    @classmethod
    def decode(cls, data: bytes) -> Passed:
        head, body = _unframe(data)
        return cls(
            method=str(head["m"]),
            path=str(head["p"]),
            headers=[(str(k), str(v)) for k, v in head["h"]],
            body=body,
            client=head.get("c"),
            request_id=str(head["r"]),
        )


@dataclass(frozen=True)
class Answer:
    """The owner's response, as the client gets it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def encode(self) -> bytes:
        return _frame({"s": self.status, "h": self.headers}, self.body)

    @classmethod
    def decode(cls, data: bytes) -> Answer:
        head, body = _unframe(data)
        return cls(int(head["s"]), [(str(k), str(v)) for k, v in head["h"]], body)


class LocalDispatch:
    """Runs passed requests through this node's own HTTP stack, over its private Unix socket."""

    def __init__(self) -> None:
        # Known only to this process: marks a request on the socket as one we passed ourselves.
        self.secret = secrets.token_urlsafe(32)
        self._path: str | None = None
        self._ready = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None

    def serve_at(self, path: str) -> None:
        """The socket is listening at `path`: passed requests can run from now on."""
        self._path = path
        self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def run(self, passed: Passed, *, within: float) -> Answer:
        async with asyncio.timeout(within):
            await self._ready.wait()
            session = self._client()
            headers = [
                *passed.headers,
                (FORWARDED_SECRET, self.secret),
                (FORWARDED_REQUEST_ID, passed.request_id),
            ]
            if passed.client is not None:
                headers.append((FORWARDED_FOR, passed.client))
            async with session.request(
                passed.method,
                f"http://node.internal{passed.path}",
                headers=headers,
                data=passed.body or None,
                allow_redirects=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            ) as response:
                body = await response.read()
                return Answer(response.status, copied(response.raw_headers), body)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            assert self._path is not None
            self._session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=self._path, limit=256),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
