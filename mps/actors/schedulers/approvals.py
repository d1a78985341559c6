"""Running approved actions exactly once, and expiring requests nobody decided.

An APPROVED request's action is sent as the very command a direct call sends (a payout to the
company actor, a refund to its payment's actor), with one more statement in its unit: the
request APPROVED -> EXECUTED, with the action's result, guarded by that status. The action and
the request's new status commit together or not at all, so however many times the action is
tried (the vote that approved it, then the scheduler after a crash, or two nodes after a
failover) it commits once; a second try rolls back whole and reads what the first stored. An
action refused for a reason of its own (the balance no longer covers it) leaves the request
FAILED with that error.

The scheduler runs on each node for the shards it owns: every few seconds it expires PENDING
requests past their 72 hours and runs APPROVED ones whose action has not committed (a crash
between the deciding vote and the action).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mps.actors.card import FundCard
from mps.actors.company import (
    CreatePayout,
    ExpireApproval,
    FailApproval,
    ForgetApproval,
    IssueCard,
)
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.payment import CreateRefund
from mps.actors.schedulers.periodic import StoredPass
from mps.actors.shards import ShardRouter
from mps.domain.approvals import ApprovalRequest
from mps.domain.audit import AuditContext
from mps.domain.clock import Clock, iso
from mps.domain.issuing import Controls
from mps.errors import Conflict, ServiceError, Unavailable
from mps.persistence import approval_store as store
from mps.persistence.database import Database
from mps.persistence.statements import Statement
from mps.representations.approvals import approval_json
from mps.representations.cards import card_json
from mps.representations.money import payout_json, refund_json

__all__ = ["ApprovalGuard", "Approvals"]

BATCH = 200


class ApprovalGuard:
    """The statements an approved action's unit carries (an IdempotencyRecord, as the commands
    take one): the request EXECUTED with the action's result, its approval.executed event, and
    the approving vote's Idempotency-Key with that request as its response, when it had one."""

    def __init__(
        self,
        request: ApprovalRequest,
        clock: Clock,
        idempotency: IdempotencyRecord | None = None,
    ) -> None:
        self.request = request
        self.clock = clock
        self.idempotency = idempotency
        self.executed: ApprovalRequest | None = None

    def statements(self, result: Any) -> list[Statement]:
        shown = _shown(self.request.action, result)
        now = iso(self.clock())
        after = replace(self.request, status="EXECUTED", result=shown, decided_at=now)
        self.executed = after
        statements = [
            store.finished(self.request.company_id, self.request.id, now, result=shown),
            store.event(after, "approval.executed", now, approval_json(after)),
        ]
        if self.idempotency is not None:
            statements += self.idempotency.statements(after)
        return statements

    def discard(self) -> None:
        self.executed = None
        if self.idempotency is not None:
            self.idempotency.discard()


def _shown(action: str, result: Any) -> dict[str, Any]:
    if action == "payout.create":
        return payout_json(result.payout)
    if action == "refund.create":
        return refund_json(result.refund)
    # card.issue (an IssuedCard) and card.fund (a CardOutcome)
    return card_json(result.card, result.balance)


class Approvals(StoredPass):
    """`status_of` is the HTTP layer's status for an error (mps.http.statuses), handed in by the
    composition root: a FAILED request shows the error its action would have answered with,
    and the actors cannot import the layer that maps it."""

    def __init__(
        self,
        database: Database,
        shards: ShardRouter,
        clock: Clock,
        interval: float,
        *,
        status_of: Callable[[ServiceError], int],
    ) -> None:
        super().__init__(database, shards, clock, interval)
        self._status_of = status_of

    async def execute(
        self, request: ApprovalRequest, idempotency: IdempotencyRecord | None = None
    ) -> ApprovalRequest:
        """Run an APPROVED request's action; the request as it ends (EXECUTED or FAILED).
        `idempotency` is the approving vote's key, stored with whichever unit ends the request;
        when another run ended it first, nothing of this one committed and the key is not
        stored here."""
        guard = ApprovalGuard(request, self._clock, idempotency)
        payload = request.payload
        # A secret key may ask too (decisions 2, "Server-to-server keys"); its id says so.
        kind = "api_key" if request.requested_by.startswith("key_") else "user"
        actor = AuditContext(kind, request.requested_by)
        try:
            if request.action == "payout.create":
                command: Any = CreatePayout(
                    request.mode,
                    int(payload["amountMinor"]),
                    payload["currency"],
                    payload["bankAccountId"],
                    payload.get("description"),
                    idempotency=guard,
                    audit=actor,
                )
                await self._shards.ask_company(request.company_id, command)
            elif request.action == "refund.create":
                command = CreateRefund(
                    request.mode,
                    int(payload["amountMinor"]),
                    payload.get("reason"),
                    idempotency=guard,
                )
                await self._shards.ask_payment(request.company_id, payload["paymentId"], command)
            elif request.action == "card.issue":
                command = IssueCard(
                    request.mode,
                    payload["type"],
                    payload["currency"],
                    Controls.from_json(payload["controls"]),
                    cardholder_name=payload.get("cardholderName"),
                    nickname=payload.get("nickname"),
                    member_id=payload.get("memberId"),
                    initial_funding_minor=int(payload["initialFundingMinor"]),
                    audit=actor,
                    idempotency=guard,
                )
                await self._shards.ask_company(request.company_id, command)
            else:
                command = FundCard(request.mode, int(payload["amountMinor"]), idempotency=guard)
                await self._shards.ask_card(request.company_id, payload["cardId"], command)
        except store.NotApproved:
            guard.discard()
            return await self._stored(request)
        except Unavailable:
            # Not the action's answer (a database fault, a shard moving): the request stays
            # APPROVED and the next pass runs it again.
            guard.discard()
            raise
        except ServiceError as refused:
            guard.discard()
            error = {
                "code": refused.code,
                "message": str(refused),
                "statusCode": self._status_of(refused),
            }
            try:
                failed: ApprovalRequest = await self._shards.ask_company(
                    request.company_id, FailApproval(request.id, error, idempotency=idempotency)
                )
            except (store.NotApproved, Conflict):
                if idempotency is not None:
                    idempotency.discard()
                return await self._stored(request)
            return failed
        await self._shards.ask_company(request.company_id, ForgetApproval(request.id))
        assert guard.executed is not None
        return guard.executed

    async def _stored(self, request: ApprovalRequest) -> ApprovalRequest:
        found = await store.get_request(
            self._database, request.company_id, request.mode, request.id
        )
        return found or request

    async def tick(self) -> bool:
        return await self.run_once() == BATCH

    async def run_once(self) -> int:
        scope = self.scope("company_id")
        if scope is None:
            return 0
        rows = await store.open_due(self._database, iso(self._clock()), BATCH, scope)
        await self.each(rows, self._settle, "approval request %s failed")
        return len(rows)

    async def _settle(self, row: Any) -> None:
        if row["status"] == "PENDING":
            await self._shards.ask_company(row["company_id"], ExpireApproval(row["id"]))
            return
        request = await store.get_request(self._database, row["company_id"], row["mode"], row["id"])
        if request is not None and request.status == "APPROVED":
            await self.execute(request)
