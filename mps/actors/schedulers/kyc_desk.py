"""The identity-verification desk: carries out the operator's reviews and clears away uploads
that no document row names.

An operator reviews from the command line (`run.py kyc review`), which may run anywhere the
database is reachable, so the request is a row (`operator_requests`) rather than a call into a
process. Each node takes the requests of the companies it owns and has the company's actor
decide; the request is marked done in the same unit as the decision, so a request is carried
out exactly once however often it is seen (a crash, a shard that moved). A request refused by
the rules (nothing to review, a rejection without a reason) is marked done with the reason.

An upload's bytes are stored before its row is committed. A refused upload removes them at
once; a crash between the two leaves bytes no row names, which the sweep removes once they are
older than any upload could take (an hour), looking only at the companies this node owns.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mps.actors.company import DecideKyc
from mps.actors.context import ActorContext
from mps.actors.schedulers.periodic import ShardPass
from mps.actors.shards import ShardElsewhere, ShardRouter
from mps.adapters.storage import ObjectStore
from mps.domain import kyc as rules
from mps.domain.audit import AuditContext
from mps.domain.clock import Clock, iso
from mps.errors import ServiceError, StaleWrite
from mps.persistence import kyc_store as store
from mps.persistence.queries import kyc as q

__all__ = ["KycDesk"]

logger = logging.getLogger(__name__)
ORPHAN_AGE = timedelta(hours=1)
SWEEP_EVERY = 3600.0
SWEEP_BATCH = 500


@dataclass
class DeskState:
    last_pass: float | None = None  # loop time
    waiting: int = 0  # open requests seen by the last pass
    swept: int = 0


class KycDesk(ShardPass):
    def __init__(
        self,
        context: ActorContext,
        shards: ShardRouter,
        objects: ObjectStore,
        clock: Clock,
        interval: float,
        *,
        sweep_every: float = SWEEP_EVERY,
        orphan_age: timedelta = ORPHAN_AGE,
    ) -> None:
        super().__init__(shards, interval)
        self._context = context
        self._objects = objects
        self._clock = clock
        self._sweep_every = sweep_every
        self._orphan_age = orphan_age
        self._last_sweep: float | None = None
        self.state = DeskState()

    async def tick(self) -> bool:
        more = await self.review_requests()
        now = asyncio.get_running_loop().time()
        if self._last_sweep is None or now - self._last_sweep >= self._sweep_every:
            self._last_sweep = now
            await self.sweep()
        return more

    async def review_requests(self) -> bool:
        """Carry out the open requests of the companies this node owns; True if more wait."""
        owned = self.owned()
        requests = await q.open_requests(self._context.database, owned)
        for request in requests:
            if self._shards.owns(request.company_id):
                await self._carry_out(request)
        self.state.last_pass = asyncio.get_running_loop().time()
        self.state.waiting = len(requests)
        return len(requests) == 100

    async def _carry_out(self, request: q.OperatorRequest) -> None:
        now = iso(self._clock())
        payload = request.payload
        outcome: dict[str, Any]
        try:
            documents = await q.count_documents(
                self._context.database, request.company_id, payload["mode"]
            )
            review = rules.review(
                payload["mode"],
                payload["decision"],
                payload.get("reason"),
                f"operator:{request.requested_by}",
                documents,
            )
            done = store.operator_request_done(request.id, {"ok": True}, now)
            await self._shards.ask_company(
                request.company_id,
                DecideKyc(
                    review,
                    AuditContext("operator", request.requested_by),
                    extra=(done,),
                ),
            )
            logger.info(
                "operator request %s: %s %s is %s",
                request.id,
                request.company_id,
                review.mode,
                review.status,
            )
            return
        except ShardElsewhere:
            return  # the shard moved: its new owner carries it out
        except StaleWrite:
            return  # carried out already (by this node before, or another)
        except (ServiceError, ValueError, KeyError) as exc:
            outcome = {"ok": False, "error": str(exc)}
        try:
            await self._context.commit(store.operator_request_done(request.id, outcome, now))
        except StaleWrite:
            return
        logger.warning("operator request %s refused: %s", request.id, outcome["error"])

    async def sweep(self) -> int:
        """Remove stored uploads older than the orphan age that no document row names."""
        cutoff = datetime.now(UTC) - self._orphan_age
        candidates: list[str] = []
        removed = 0
        async for info in self._objects.list("kyc/"):
            parts = info.key.split("/")
            if len(parts) < 2 or info.modified_at > cutoff or not self._shards.owns(parts[1]):
                continue
            candidates.append(info.key)
            if len(candidates) >= SWEEP_BATCH:
                removed += await self._remove_unnamed(candidates)
                candidates = []
        removed += await self._remove_unnamed(candidates)
        self.state.swept += removed
        return removed

    async def _remove_unnamed(self, keys: list[str]) -> int:
        named = await q.known_keys(self._context.database, keys)
        unnamed = [key for key in keys if key not in named]
        for key in unnamed:
            logger.warning("removing stored upload %s: no document names it", key)
            await self._objects.delete(key)
        return len(unnamed)

    async def probe(self) -> dict[str, Any]:
        """identityVerification on /health: the desk runs, and no review waits for long."""
        state = self.state
        if state.last_pass is None:
            await self.review_requests()
        assert state.last_pass is not None
        age = asyncio.get_running_loop().time() - state.last_pass
        if age > max(10 * self.interval, 30):
            return {"status": "degraded", "detail": f"the last review pass ran {age:.0f}s ago"}
        waiting = (
            f"{state.waiting} operator reviews waiting" if state.waiting else "no review waiting"
        )
        return {"status": "up", "detail": f"{waiting}; last pass {age:.0f}s ago"}
