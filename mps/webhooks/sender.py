"""One attempt of one delivery over HTTP: the signed POST and how the receiver answered.

One `aiohttp.ClientSession` serves every attempt of the process (its connection pool is shared);
in production its resolver refuses private, loopback and link-local addresses after DNS
resolution, at connection time, so a name that resolves elsewhere between registration and
delivery (DNS rebinding) reaches nothing inside (mps.webhooks.targets).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import aiohttp

from mps.domain.webhooks import Answer, retry_after_seconds
from mps.webhooks.signing import sign
from mps.webhooks.targets import GuardedResolver, UnsafeTarget

__all__ = ["ATTEMPT_TIMEOUT", "Sender", "Sent"]

# Decisions 10: an attempt that has no answer after 10 s failed.
ATTEMPT_TIMEOUT = 10.0
# What of a receiver's answer is kept with the attempt (it is the receiver's text, not ours).
_ERROR_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Sent:
    answer: Answer
    duration_ms: int


class Sender:
    def __init__(self, *, allow_private: bool, timeout: float = ATTEMPT_TIMEOUT) -> None:
        self._allow_private = allow_private
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(
            resolver=GuardedResolver(allow_private=self._allow_private),
            limit=0,  # the dispatcher bounds concurrency, per endpoint
            ttl_dns_cache=60,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            # The signed bytes are exactly the bytes sent; nothing may add a header we sign
            # nothing about, or follow a redirect (decisions 10).
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding",),
            # A receiver's cookies are never kept: one session serves every company, so a
            # cookie set by one merchant's receiver would ride on another's deliveries.
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self,
        url: str,
        body: bytes,
        secrets: Sequence[str],
        *,
        event_id: str,
        delivery_id: str,
        attempt: int,
        now: datetime,
    ) -> Sent:
        if self._session is None:
            msg = "the webhook sender is not started"
            raise RuntimeError(msg)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "mps-webhooks/1",
            "X-Service-Event-Id": event_id,
            "X-Service-Delivery-Id": delivery_id,
            "X-Service-Attempt": str(attempt),
            **sign(body, secrets, timestamp=int(now.timestamp()), message_id=event_id),
        }
        started = time.perf_counter()
        try:
            async with self._session.post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                # Read a little of the body so the connection can be reused; never all of it.
                await response.content.read(1024)
                answer = Answer(
                    response.status,
                    None if 200 <= response.status < 300 else f"HTTP {response.status}",
                    retry_after=retry_after_seconds(response.headers.get("Retry-After"), now),
                    abort=response.headers.get("webhook-delivery", "").lower() == "abort",
                )
        except UnsafeTarget as exc:
            answer = Answer(None, f"refused: {exc}"[:_ERROR_LIMIT])
        except aiohttp.ClientConnectorError as exc:
            cause = exc.os_error
            if isinstance(cause, UnsafeTarget):
                answer = Answer(None, f"refused: {cause}"[:_ERROR_LIMIT])
            else:
                answer = Answer(None, f"connection failed: {type(cause).__name__}")
        except TimeoutError:
            answer = Answer(None, f"no answer within {self._timeout:g} s")
        except (aiohttp.ClientError, asyncio.IncompleteReadError, OSError) as exc:
            answer = Answer(None, f"{type(exc).__name__}: {exc}"[:_ERROR_LIMIT])
        return Sent(answer, round((time.perf_counter() - started) * 1000))
