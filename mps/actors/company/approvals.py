"""Approvals: the company's policies, and its open requests with their votes.

The company actor decides every vote against the requests it holds (loaded at activation), so
two members voting at once are counted one after the other. A request that reaches its
approvals becomes APPROVED; its action then runs outside this actor (mps.actors.approvals),
through the same command as a direct call, with one more statement in its unit: APPROVED ->
EXECUTED, guarded by the status, so the action commits at most once.
"""

from __future__ import annotations

from dataclasses import replace

from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.messages import (
    CancelApproval,
    ExpireApproval,
    FailApproval,
    ForgetApproval,
    RequestApproval,
    SetPolicy,
    VoteOnApproval,
)
from mps.actors.company.state import CompanyState
from mps.domain import approvals as rules
from mps.domain.approvals import APPROVAL_TTL, ApprovalRequest, Policy, Vote
from mps.domain.audit import SYSTEM
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.errors import Conflict, Forbidden, NotFound
from mps.persistence import approval_store as store
from mps.persistence.statements import Statement

__all__ = [
    "cancel_approval",
    "expire_approval",
    "fail_approval",
    "forget_approval",
    "request_approval",
    "set_policy",
    "vote_on_approval",
]


async def set_policy(state: CompanyState, command: SetPolicy) -> Policy:
    state.require()
    require_fresh(state)
    policy = command.policy
    now = iso(state.context.clock())
    audit = entry(
        state, command.audit, "approval_policy.updated", ("approval_policy", policy.action),
        enabled=policy.enabled, requiredApprovals=policy.required_approvals,
        thresholds={k: str(v) for k, v in policy.thresholds.items()},
    )  # fmt: skip
    await commit_audited(state, [store.policy_upsert(state.company_id, policy, now)], [audit])
    state.policies[policy.action] = policy
    return policy


async def request_approval(state: CompanyState, command: RequestApproval) -> ApprovalRequest | None:
    state.require()
    require_fresh(state)
    if not rules.needs_approval(
        state.policies, command.action, command.currency, command.amount_minor
    ):
        return None
    policy = state.policies[command.action]
    requester = await _requester(state, command.requested_by)
    now = state.context.clock()
    request = ApprovalRequest(
        id=new_id("apr"),
        company_id=state.company_id,
        mode=command.mode,
        action=command.action,
        status="PENDING",
        requested_by=command.requested_by,
        payload=command.payload,
        required_approvals=policy.required_approvals,
        created_at=iso(now),
        expires_at=iso(now + APPROVAL_TTL),
        requested_by_user=requester,
    )
    statements: list[Statement] = [
        store.request_insert(request),
        store.event(request, "approval.requested", request.created_at),
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
    above its policy's threshold (rare, and a commit follows anyway). Payouts and cards run
    this detached, outside the turn; a refund's RequestApproval runs it in the turn.
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


async def vote_on_approval(state: CompanyState, command: VoteOnApproval) -> ApprovalRequest:
    state.require()
    require_fresh(state)
    before = _open(state, command.mode, command.request_id)
    now = iso(state.context.clock())
    cast = Vote(command.voter, command.decision, now, command.comment)
    after = rules.vote(before, cast, command.voter_scopes, now)
    statements = [store.vote_insert(before.id, cast)]
    if after.status != before.status:
        statements.append(
            store.status_change(state.company_id, before.id, "PENDING", after.status, now)
        )
    if after.status == "REJECTED":
        statements.append(store.event(after, "approval.rejected", now))
    if command.idempotency is not None and after.status != "APPROVED":
        # An approving vote's response is the request as its action leaves it, stored in the
        # action's own unit (mps.actors.approvals.ApprovalGuard).
        statements += command.idempotency.statements(after)
    action = "approval.approved" if command.decision == "approve" else "approval.rejected"
    audit = entry(
        state, command.audit, action, ("approval_request", before.id),
        comment=command.comment, status=after.status,
    )  # fmt: skip
    await commit_audited(state, statements, [audit])
    if after.status == "REJECTED":
        del state.approvals[before.id]
    else:
        state.approvals[before.id] = after
    return after


async def cancel_approval(state: CompanyState, command: CancelApproval) -> ApprovalRequest:
    require_fresh(state)
    state.require()
    before = _open(state, command.mode, command.request_id)
    now = iso(state.context.clock())
    after = rules.cancel(before, command.user_id, now)
    statements = [store.status_change(state.company_id, before.id, "PENDING", "CANCELLED", now)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(state, command.audit, "approval.cancelled", ("approval_request", before.id))
    await commit_audited(state, statements, [audit])
    del state.approvals[before.id]
    return after


async def expire_approval(state: CompanyState, command: ExpireApproval) -> ApprovalRequest | None:
    require_fresh(state)
    state.require()
    request = state.approvals.get(command.request_id)
    now = iso(state.context.clock())
    if request is None or request.status != "PENDING" or request.expires_at > now:
        return None
    after = replace(request, status="EXPIRED", decided_at=now)
    audit = entry(state, SYSTEM, "approval.expired", ("approval_request", request.id))
    await commit_audited(
        state,
        [store.status_change(state.company_id, request.id, "PENDING", "EXPIRED", now)],
        [audit],
    )
    del state.approvals[request.id]
    return after


async def fail_approval(state: CompanyState, command: FailApproval) -> ApprovalRequest:
    require_fresh(state)
    state.require()
    request = _open(state, None, command.request_id)
    now = iso(state.context.clock())
    after = replace(request, status="FAILED", error=command.error, decided_at=now)
    statements = [
        store.finished(state.company_id, request.id, now, error=command.error),
        store.event(after, "approval.executed", now),
    ]
    if command.idempotency is not None:
        statements += command.idempotency.statements(after)
    audit = entry(
        state, SYSTEM, "approval.failed", ("approval_request", request.id), error=command.error
    )
    try:
        await commit_audited(state, statements, [audit])
    except store.NotApproved as exc:
        # Another run of the action committed first: this request is decided already.
        state.approvals.pop(request.id, None)
        raise Conflict("The approval request was decided already", code="invalid_state") from exc
    del state.approvals[request.id]
    return after


def forget_approval(state: CompanyState, command: ForgetApproval) -> None:
    state.approvals.pop(command.request_id, None)
