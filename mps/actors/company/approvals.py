"""Approvals: the company's policies, and its open requests with their votes.

The company actor decides every vote against the requests it holds (loaded at activation), so
two members voting at once are counted one after the other. A request that reaches its
approvals becomes APPROVED; its action then runs outside this actor
(mps.actors.schedulers.approvals), through the same command as a direct call, with one more
statement in its unit: APPROVED -> EXECUTED, guarded by the status, so the action commits at
most once.

Every command decides in the turn and commits detached. A policy, and a request's new status,
are held from the turn on, so the next command is decided against them; should the commit
fail, they are put back (mps.actors.commits), or the actor reloads when a later decision was
already made on top of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mps.actors.company.audit import commit_audited, commit_held, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import approvals as rules
from mps.domain.approvals import APPROVAL_TTL, ApprovalRequest, Policy, Vote
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.ledger import balance_insufficient
from mps.errors import Conflict, Forbidden, NotFound, Unavailable
from mps.persistence import approval_store as store
from mps.persistence.statements import Statement
from mps.representations.approvals import approval_json

__all__ = [
    "CancelApproval",
    "ExpireApproval",
    "FailApproval",
    "ForgetApproval",
    "RequestApproval",
    "SetPolicy",
    "VoteOnApproval",
    "cancel_approval",
    "expire_approval",
    "fail_approval",
    "forget_approval",
    "request_approval",
    "set_policy",
    "vote_on_approval",
]


@dataclass(frozen=True)
class SetPolicy:
    """Reply: the Policy as set."""

    policy: Policy
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RequestApproval(IdempotentCommand):
    """Reply: the new PENDING ApprovalRequest when the action is above its policy's threshold
    (committed with its approval.requested event), else None: run the action now."""

    mode: str
    action: str
    currency: str
    amount_minor: int
    payload: dict[str, Any]
    requested_by: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class VoteOnApproval(IdempotentCommand):
    """Reply: the request after the vote (PENDING, APPROVED or REJECTED)."""

    mode: str
    request_id: str
    voter: str
    voter_scopes: frozenset[str]
    decision: str  # approve | reject
    comment: str | None = None
    audit: AuditContext = SYSTEM
    # Stored with the vote unless the vote approves: the response is then the request as the
    # action leaves it, stored in the action's unit (mps.actors.schedulers.approvals.ApprovalGuard).


@dataclass(frozen=True)
class CancelApproval(IdempotentCommand):
    """Reply: the CANCELLED request; only its requester may."""

    mode: str
    request_id: str
    user_id: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class ExpireApproval:
    """Reply: the EXPIRED request, or None when it is not PENDING past its expiry."""

    request_id: str


@dataclass(frozen=True)
class FailApproval(IdempotentCommand):
    """Reply: the FAILED request. The approved action ran and was refused with `error`."""

    request_id: str
    error: dict[str, Any]
    # The approving vote's key: its response is this FAILED request.


@dataclass(frozen=True)
class ForgetApproval:
    """Reply: None. The request's action committed (EXECUTED): it is no longer open."""

    request_id: str


def set_policy(state: CompanyState, command: SetPolicy) -> Detached:
    """Reply: the policy, once committed; held from the turn on, so the next payout or card is
    decided against it."""
    state.require()
    require_fresh(state)
    policy = command.policy
    now = iso(state.context.clock())
    audit = entry(
        state, command.audit, "approval_policy.updated", ("approval_policy", policy.action),
        enabled=policy.enabled, requiredApprovals=policy.required_approvals,
        thresholds={k: str(v) for k, v in policy.thresholds.items()},
    )  # fmt: skip
    before = state.policies.get(policy.action)
    state.policies[policy.action] = policy

    def undo() -> None:
        if state.policies.get(policy.action) is not policy:
            state.mark_stale()  # a later policy was decided on top of this one: reload
        elif before is None:
            del state.policies[policy.action]
        else:
            state.policies[policy.action] = before

    statement = store.policy_upsert(state.company_id, policy, now)

    return commit_held(state, [statement], [audit], policy, undo)


def request_approval(state: CompanyState, command: RequestApproval) -> Detached:
    """Reply: the PENDING request once committed, or None when no policy asks for one.

    Decided in the turn; the requester (a key's creator, read from storage) is found in the
    detached work, as nothing decided here depends on who it is. The request is held once
    committed: nobody can vote on it before its id is answered."""
    state.require()
    require_fresh(state)
    if not rules.needs_approval(
        state.policies, command.action, command.currency, command.amount_minor
    ):
        return Detached(_nothing())
    _refuse_what_could_only_fail(state, command)
    policy = state.policies[command.action]
    now = state.context.clock()
    return Detached(_request(state, command, policy.required_approvals, now))


# Actions whose whole amount leaves the available balance (a card issue's amount may be a
# spending limit, so its funding is checked where the card is issued).
_DRAWS_ON_AVAILABLE = {"payout.create": "payout", "card.fund": "card funding"}


def _refuse_what_could_only_fail(state: CompanyState, command: RequestApproval) -> None:
    """409 `balance_insufficient` now for an action the available balance cannot cover
    today: approved, it would only fail, so nobody is asked to vote on it. (A refund's own
    checks run in its payment's actor before it asks for a vote.)"""
    what = _DRAWS_ON_AVAILABLE.get(command.action)
    available = state.books.low((command.mode, command.currency)).available
    if what is not None and available < command.amount_minor:
        raise balance_insufficient(command.currency, what)


async def _nothing() -> None:
    return None


async def _request(
    state: CompanyState, command: RequestApproval, required: int, now: datetime
) -> ApprovalRequest:
    requester = await _requester(state, command.requested_by)
    request = ApprovalRequest(
        id=new_id("apr"),
        company_id=state.company_id,
        mode=command.mode,
        action=command.action,
        status="PENDING",
        requested_by=command.requested_by,
        payload=command.payload,
        required_approvals=required,
        created_at=iso(now),
        expires_at=iso(now + APPROVAL_TTL),
        requested_by_user=requester,
    )
    statements: list[Statement] = [
        store.request_insert(request),
        store.event(request, "approval.requested", request.created_at, approval_json(request)),
    ]
    if command.idempotency is not None:
        statements += command.idempotency.statements(request)
    audit = entry(
        state, command.audit, "approval.requested", ("approval_request", request.id),
        requestedAction=request.action,
    )  # fmt: skip
    await commit_audited(state, statements, [audit])
    state.approvals[request.id] = request
    return request


async def _requester(state: CompanyState, requested_by: str) -> str:
    """The person who asks: the member, or the member who created the asking API key, so that
    they cannot approve what they asked for through their key (mps.domain.approvals).

    A key's creator is read here: one read by primary key, only for an action a key asks for
    above its policy's threshold (rare, and a commit follows anyway), in detached work, never in
    the turn.
    A key that is not the company's cannot have authenticated; should its row be missing all
    the same, the request is refused rather than left without a person who may not vote."""
    if not requested_by.startswith("key_"):
        return requested_by
    creator = await store.key_creator(state.context.database, state.company_id, requested_by)
    if creator is None:
        raise Forbidden("The API key is not the company's", code="insufficient_scope")
    return creator


def _open(state: CompanyState, mode: str | None, request_id: str) -> ApprovalRequest:
    request = state.approvals.get(request_id)
    if request is None or (mode is not None and request.mode != mode):
        raise NotFound("No such open approval request")
    return request


def vote_on_approval(state: CompanyState, command: VoteOnApproval) -> Detached:
    """Reply: the request after the vote, once committed; held from the turn on, so a second
    vote is counted after this one."""
    state.require()
    require_fresh(state)
    before = _open(state, command.mode, command.request_id)
    now = iso(state.context.clock())
    cast = Vote(command.voter, command.decision, now, command.comment)
    after = rules.vote(before, cast, command.voter_scopes, now)
    statements = [store.vote_insert(before.id, cast)]
    if after.status == "APPROVED":
        # Votes are decided in memory before the ones ahead of them have landed: approving
        # is conditional on the approvals storage holds, so a vote that was refused after this
        # one counted it can never leave the request approved a vote short.
        statements.append(
            store.approved_by_votes(state.company_id, before.id, now, after.required_approvals)
        )
    elif after.status != before.status:
        statements.append(
            store.status_change(state.company_id, before.id, "PENDING", after.status, now)
        )
    if after.status == "REJECTED":
        statements.append(store.event(after, "approval.rejected", now, approval_json(after)))
    if command.idempotency is not None and after.status != "APPROVED":
        # An approving vote's response is the request as its action leaves it, stored in the
        # action's own unit (mps.actors.schedulers.approvals.ApprovalGuard).
        statements += command.idempotency.statements(after)
    action = "approval.approved" if command.decision == "approve" else "approval.rejected"
    audit = entry(
        state, command.audit, action, ("approval_request", before.id),
        comment=command.comment, status=after.status,
    )  # fmt: skip
    undo = _hold(state, before, None if after.status == "REJECTED" else after)
    committing = commit_held(state, statements, [audit], after, undo).work

    async def counted() -> ApprovalRequest:
        try:
            result: ApprovalRequest = await committing
        except store.VotesShort as exc:
            msg = "A vote counted with this one was not recorded; retry"
            raise Unavailable(msg, retry_after=1) from exc
        return result

    return Detached(counted())


def _hold(
    state: CompanyState, before: ApprovalRequest, after: ApprovalRequest | None
) -> Callable[[], None]:
    """Hold the request as `after` (None: closed) from now on; the undo for its commit. When a
    later decision was made on top of it, memory cannot be put back one step: reload."""
    if after is None:
        state.approvals.pop(before.id, None)
    else:
        state.approvals[before.id] = after

    def undo() -> None:
        if state.approvals.get(before.id) is not after:
            state.mark_stale()
        else:
            state.approvals[before.id] = before

    return undo


def cancel_approval(state: CompanyState, command: CancelApproval) -> Detached:
    require_fresh(state)
    state.require()
    before = _open(state, command.mode, command.request_id)
    now = iso(state.context.clock())
    after = rules.cancel(before, command.user_id, now)
    statements = [store.status_change(state.company_id, before.id, "PENDING", "CANCELLED", now)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(state, command.audit, "approval.cancelled", ("approval_request", before.id))
    return commit_held(state, statements, [audit], after, _hold(state, before, None))


def expire_approval(state: CompanyState, command: ExpireApproval) -> Detached:
    """Reply: the request as expired, once committed; None when it is not due (or not open)."""
    require_fresh(state)
    state.require()
    request = state.approvals.get(command.request_id)
    now = iso(state.context.clock())
    if request is None or request.status != "PENDING" or request.expires_at > now:
        return Detached(_nothing())
    after = replace(request, status="EXPIRED", decided_at=now)
    audit = entry(state, SYSTEM, "approval.expired", ("approval_request", request.id))
    statements = [store.status_change(state.company_id, request.id, "PENDING", "EXPIRED", now)]
    return commit_held(state, statements, [audit], after, _hold(state, request, None))


def fail_approval(state: CompanyState, command: FailApproval) -> Detached:
    require_fresh(state)
    state.require()
    request = _open(state, None, command.request_id)
    now = iso(state.context.clock())
    after = replace(request, status="FAILED", error=command.error, decided_at=now)
    statements = [
        store.finished(state.company_id, request.id, now, error=command.error),
        store.event(after, "approval.executed", now, approval_json(after)),
    ]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(
        state, SYSTEM, "approval.failed", ("approval_request", request.id), error=command.error
    )

    def decided_already(exc: Exception) -> Exception | None:
        if not isinstance(exc, store.NotApproved):
            return None
        # Another run of the action committed first: this request is decided already.
        state.approvals.pop(request.id, None)
        return Conflict("The approval request was decided already", code="invalid_state")

    undo = _hold(state, request, None)
    return commit_held(state, statements, [audit], after, undo, decided_already)


def forget_approval(state: CompanyState, command: ForgetApproval) -> None:
    state.approvals.pop(command.request_id, None)
