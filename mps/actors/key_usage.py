"""The API-key uses this node has served and not yet written: request-log rows and each key's
latest use, kept in memory and written in batches rather than with every request.

A request made with an API key used to cost two writes (its log row and the key's
`last_used_at`). Here `record` only appends to a buffer, on the event loop, without awaiting
anything; the buffer is flushed as one `Commit` holding every buffered log row (one SQL, so one
`executemany`) and one `last_used_at` update per key used since the last flush (its latest
use):

* every `interval` seconds (1 s by default), so a key's log and `lastUsedAt` show a request
  within about that long of its answer;
* at once when `max_rows` rows are waiting, so a burst never builds one huge transaction;
* on shutdown (`close`), after the server stopped taking requests and before the writer stops.

Reads do not flush first: the log is read from storage like any other resource, and in a cluster
the request may have been served by another node anyway. A caller that must see everything
recorded so far (a test) awaits `flush()`, which returns once the rows are durable.

Cluster behaviour: each node keeps its own buffer and flushes it on its own; `last_used_at`
only ever moves forward, so nodes flushing in any order leave the latest use.

Bounded: while a flush is in flight (a slow or unavailable database), at most `capacity` rows
wait; further requests are still served but their log rows are dropped and counted (`dropped`,
and a warning at the next flush), since holding them would let an outage grow memory without
bound. A flush the writer refuses (Unavailable) is logged and its rows are dropped, as a told
write's were: the request log records use, not money.
"""

from __future__ import annotations

import asyncio
import logging

from mps.actors.background import BackgroundLoop, woken_or_after
from mps.actors.context import ActorContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.persistence.key_usage_store import KeyLogRow, key_last_used, key_log_insert
from mps.persistence.statements import Statement

__all__ = ["KeyUsage"]

logger = logging.getLogger(__name__)

FLUSH_INTERVAL = 1.0
MAX_ROWS = 1000
CAPACITY = 50_000


class KeyUsage(BackgroundLoop):
    """Owned by the composition root: `start` after the writer is up, `close` before it stops.
    Every method runs on the event loop; `record` never awaits."""

    def __init__(
        self,
        context: ActorContext,
        interval: float = FLUSH_INTERVAL,
        *,
        max_rows: int = MAX_ROWS,
        capacity: int = CAPACITY,
    ) -> None:
        self._context = context
        self.interval = interval
        self.max_rows = max_rows
        self.capacity = max(capacity, max_rows)
        self._rows: list[KeyLogRow] = []
        self._last_used: dict[str, str] = {}  # key id -> latest use not yet written
        self._full = asyncio.Event()
        self.dropped = 0
        self._dropped_reported = 0

    def record(
        self,
        *,
        key_id: str,
        company_id: str,
        method: str,
        path: str,
        status_code: int,
        ip: str | None,
        request_id: str,
    ) -> None:
        """Remember one request made with the key; written at the next flush."""
        at = iso(self._context.clock())
        latest = self._last_used.get(key_id)
        if latest is None or at > latest:
            self._last_used[key_id] = at
        if len(self._rows) >= self.capacity:
            self.dropped += 1
            return
        self._rows.append(
            KeyLogRow(
                new_id("log"), key_id, company_id, at, method, path, status_code, ip, request_id
            )
        )
        if len(self._rows) >= self.max_rows:
            self._full.set()

    def __len__(self) -> int:
        """Log rows waiting to be written."""
        return len(self._rows)

    async def flush(self) -> None:
        """Write what is buffered now, `max_rows` log rows per commit (one commit unless a
        previous flush was held up); returns once it is durable. Raises what the writer
        answered (Unavailable) after dropping the rows of the failed commit."""
        rows, self._rows = self._rows, []
        last_used, self._last_used = self._last_used, {}
        if self.dropped > self._dropped_reported:
            logger.warning(
                "%d API-key request log rows were dropped: the buffer was full",
                self.dropped - self._dropped_reported,
            )
            self._dropped_reported = self.dropped
        if not rows and not last_used:
            return
        chunks = [rows[i : i + self.max_rows] for i in range(0, len(rows), self.max_rows)] or [[]]
        for number, chunk in enumerate(chunks, start=1):
            statements: list[Statement] = [key_log_insert(row) for row in chunk]
            if number == len(chunks):
                statements += [key_last_used(key, at) for key, at in last_used.items()]
            try:
                await self._context.commit(*statements)
            except Exception:
                lost = sum(len(c) for c in chunks[number - 1 :])
                # Unknown whether a commit past its deadline landed; retrying could write twice.
                logger.warning("%d API-key request log rows may not have been written", lost)
                raise

    async def close(self) -> None:
        """Stop the loop and write what is left. A flush cut short by the cancel still lands:
        its commit is queued at the writer, which finishes its queue before it stops."""
        await super().close()
        try:
            await self.flush()
        except Exception:
            logger.exception("the last API-key usage flush failed")

    async def _run(self) -> None:
        while True:
            # Woken early when `max_rows` rows are waiting; otherwise once per interval.
            await woken_or_after(self._full, self.interval)
            try:
                await self.flush()
            except Exception:
                logger.exception("API-key usage flush failed; the next one follows")
