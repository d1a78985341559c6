"""Passing a request straight to the node that owns its shard, over a persistent TCP connection.

Every node of a cluster listens on a second port, its peer listener (`MPS_PEER_PORT`), and says
where in its heartbeats (mps.cluster.membership). A node that must pass a request on looks up
the shard's owner there and sends the request whole, as HTTP on a kept-alive connection, to that
owner's peer listener; the owner runs it through its own HTTP stack and the answer comes back
on the same connection. One HTTP exchange per hop, no broker in between (the broker still
decides who owns what, and carries webhooks and events).

Both sides prove they hold the cluster's secret (`MPS_CLUSTER_SECRET`):

- the asker signs each request: `X-Mps-Peer: <unix seconds> <hex HMAC-SHA256>` over the time,
  the request id, the method, the raw path and query, and the client's address. The owner
  refuses (403, nothing run) any request on its peer listener whose signature is missing, wrong,
  older or newer than `SIGNED_WITHIN` seconds, or seen before (a replay);
- the owner signs its answer: `X-Mps-Peer-Answer` over the request's signature, the status and
  whether it ran the request. An answer without it is not believed (503 to the client).

Each request names the peer protocol version it is written in (`X-Mps-Peer-Version`, agreed
from the owner's heartbeat: mps.cluster.versions), and the answer the same; a request without
one is version 1, which a node of the release before versions sends. A node refuses (403, nothing
run) a request in a version it does not speak. Version 1's signatures do not cover the version:
a later version that needs them to says so in its own MAC.

The body and the other headers are not signed: whoever can change bytes between two nodes can
also read the sessions and cards they carry, which only a private network (or TLS under it)
protects. The signatures keep anyone who can merely connect to a peer listener from having a
request served as passed (its rate limits skipped, its client address and request id chosen).

What can happen to a request passed on, and what the asker does:

- the owner answers: its answer, byte for byte;
- the owner did not run it (the shard moved away; it refused our signature or our version; the
  connection could not be opened, so nothing was sent): `NotRun`, and the asker passes it
  through the broker instead (mps.cluster.node), which reaches whoever owns the shard now;
- the connection drops once the request is sent, or no answer comes in time: `Unavailable`
  (503, Retry-After). The request may or may not have run; an Idempotency-Key retry is answered
  once either way.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import Mapping

import aiohttp
import yarl

from mps.cluster.forwarding import (
    DEADLINE,
    FORWARDED_FOR,
    FORWARDED_REQUEST_ID,
    MAY_HAVE_RUN,
    NOT_RUN,
    PEER_ANSWER,
    PEER_SIGNATURE,
    Answer,
    Passed,
    copied,
)
from mps.cluster.versions import CURRENT, VERSION
from mps.errors import Unavailable

__all__ = [
    "EXPIRED",
    "REFUSED",
    "SHARD_MOVED",
    "SIGNED_WITHIN",
    "UNSPOKEN",
    "NotRun",
    "PeerClient",
    "PeerKey",
]

# A signed request is accepted this long either side of its time: the nodes' clocks must agree
# to within it (NTP), and a captured request can be replayed to nobody after it.
SIGNED_WITHIN = 30.0
# Values of NOT_RUN: the owner refused the request's signature, or its version; does not own
# its shard; or got it after the asking node's deadline.
REFUSED = "refused"
UNSPOKEN = "version"
SHARD_MOVED = "shard-moved"
EXPIRED = "expired"


class NotRun(Exception):
    """The peer did not run the request (or it was never sent): passing it on another way is
    safe."""


class PeerKey:
    """Signs and checks the requests and answers that travel between nodes; remembers the
    request signatures it accepted within `SIGNED_WITHIN`, to refuse a replay."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._seen: dict[str, float] = {}

    def _mac(self, *parts: str) -> str:
        message = "\n".join(parts).encode("utf-8", "surrogateescape")
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign_request(self, passed: Passed, at: int | None = None) -> str:
        """The `X-Mps-Peer` value for `passed`, signed now (or at `at`)."""
        stamp = str(int(time.time()) if at is None else at)
        mac = self._request_mac(
            stamp, passed.request_id, passed.method, passed.path, passed.client or ""
        )
        return f"{stamp} {mac}"

    def _request_mac(self, stamp: str, rid: str, method: str, path: str, client: str) -> str:
        return self._mac("request", stamp, rid, method, path, client)

    def admit(self, headers: Mapping[str, str], method: str, path: str) -> str | None:
        """The request's signature when `headers` carry a valid, fresh one never seen before;
        None otherwise (the request is refused)."""
        value = headers.get(PEER_SIGNATURE)
        if value is None:
            return None
        stamp, _, sent = value.partition(" ")
        try:
            at = int(stamp)
        except ValueError:
            return None
        now = time.time()
        if abs(now - at) > SIGNED_WITHIN:
            return None
        expected = self._request_mac(
            stamp,
            headers.get(FORWARDED_REQUEST_ID, ""),
            method,
            path,
            headers.get(FORWARDED_FOR, ""),
        )
        # As bytes: compare_digest refuses a str with non-ASCII characters, which anyone may send.
        if not hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), expected.encode()):
            return None
        if expected in self._seen:
            return None
        self._forget_before(now - 2 * SIGNED_WITHIN)
        self._seen[expected] = now
        return expected

    def _forget_before(self, cutoff: float) -> None:
        # Insertion order is arrival order: the oldest are first.
        while self._seen:
            oldest = next(iter(self._seen))
            if self._seen[oldest] >= cutoff:
                break
            del self._seen[oldest]

    def sign_answer(self, request_mac: str, status: int, not_run: str) -> str:
        return self._mac("answer", request_mac, str(status), not_run)

    def answer_ok(self, request_mac: str, status: int, not_run: str, sent: str) -> bool:
        expected = self.sign_answer(request_mac, status, not_run)
        return hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), expected.encode())


class PeerClient:
    """Sends passed requests to other nodes' peer listeners, on connections kept open between
    requests (one pool for all peers)."""

    def __init__(self, key: PeerKey) -> None:
        self.key = key
        # Requests sent to a peer listener, and those of them not answered yet.
        self.sent = 0
        self.in_flight = 0
        self._session: aiohttp.ClientSession | None = None

    async def run(
        self, address: str, passed: Passed, *, within: float, version: int = CURRENT
    ) -> Answer:
        """The answer of the node at `address` ("host:port") to `passed`, sent in peer protocol
        `version`. Raises `NotRun` when that node did not run it, `Unavailable` when it may
        have but no answer came."""
        answer, not_run = await self.exchange(address, passed, within=within, version=version)
        if not_run:
            msg = f"the node at {address} did not run the request ({not_run})"
            raise NotRun(msg)
        return answer

    async def exchange(
        self,
        address: str,
        passed: Passed,
        *,
        within: float,
        signature: str | None = None,
        version: int = CURRENT,
    ) -> tuple[Answer, str]:
        """The answer of the node at `address`, and why it did not run the request ("" when it
        did). `signature` replaces this node's own, "" sends none (for tests of the listener's
        refusals)."""
        sign = self.key.sign_request(passed) if signature is None else signature
        headers = [
            # A node of the release before versions passes the client's own version header on.
            *((name, value) for name, value in passed.headers if name.lower() != VERSION.lower()),
            (VERSION, str(version)),
            (FORWARDED_REQUEST_ID, passed.request_id),
        ]
        if sign:
            headers.append((PEER_SIGNATURE, sign))
        if passed.client is not None:
            headers.append((FORWARDED_FOR, passed.client))
        if passed.deadline_ms is not None:
            headers.append((DEADLINE, str(passed.deadline_ms)))
        # Encoded already: the path travels as the client sent it, which is what is signed.
        url = yarl.URL(f"http://{address}{passed.path}", encoded=True)
        self.sent += 1
        self.in_flight += 1
        try:
            async with (
                asyncio.timeout(within),
                self._client().request(
                    passed.method,
                    url,
                    headers=headers,
                    data=passed.body or None,
                    allow_redirects=False,
                    skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                ) as response,
            ):
                body = await response.read()
        except aiohttp.ClientConnectorError as exc:
            # No connection, so nothing was sent.
            raise NotRun(f"cannot reach the node at {address}: {exc}") from exc
        except TimeoutError:
            msg = f"the node that serves this account did not answer in time; {MAY_HAVE_RUN}"
            raise Unavailable(msg) from None
        except (aiohttp.ClientError, OSError) as exc:
            # Sent, then the connection dropped (the owner died, or closed it): it may have run.
            msg = f"the node that served this account stopped while running it; {MAY_HAVE_RUN}"
            raise Unavailable(msg) from exc
        finally:
            self.in_flight -= 1
        not_run = response.headers.get(NOT_RUN, "")
        proof = response.headers.get(PEER_ANSWER)
        mac = sign.partition(" ")[2]
        if proof is None or not self.key.answer_ok(mac, response.status, not_run, proof):
            if not_run in (REFUSED, UNSPOKEN):
                # The owner could not check our signature (another secret, a clock apart), or
                # does not speak our version, so it cannot sign its refusal for us either; it
                # ran nothing.
                return Answer(response.status, [], body), not_run
            msg = "the node that serves this account answered without proof; retry"
            raise Unavailable(msg)
        return Answer(response.status, copied(response.raw_headers), body), not_run

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                # Kept open well below the server's own keep-alive (75 s), so a connection is
                # seldom reused just as the owner closes it.
                connector=aiohttp.TCPConnector(limit=0, limit_per_host=256, keepalive_timeout=15),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
