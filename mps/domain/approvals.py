"""Maker-checker approvals (decisions 9), as pure values and rules.

Vocabulary (request states):
    PENDING    made instead of running an action above its policy's threshold; collecting votes
    APPROVED   enough approvals: the action is about to run (a passing state, kept only until
               the action's unit commits; found again after a crash and run then)
    EXECUTED   the action ran; `result` is what it returned
    FAILED     the action ran and was refused; `error` says why
    REJECTED   a member voted no (one rejection is enough)
    CANCELLED  the requester withdrew it
    EXPIRED    72 hours passed without a decision

Rules: the requester cannot vote; each member votes once; a voter needs the action's own write
scope; reaching `requiredApprovals` approves; one rejection rejects.

The requester is a person. A member who asks from a session is the requester; a request an API
key makes is recorded as made by the key (`requested_by`, what the contract's `requestedBy`
shows) and the requester is the member who created the key (`requested_by_user`). So a member
cannot route an action through their own key and then approve it themselves; and the member
behind the key may cancel it, as they may cancel what they asked for in person. A key never
votes or cancels: the approval routes take a dashboard session only (decisions 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from mps.errors import Conflict, Forbidden

__all__ = [
    "ACTIONS",
    "APPROVAL_STATUSES",
    "APPROVAL_TTL",
    "ApprovalRequest",
    "Policy",
    "Vote",
    "cancel",
    "needs_approval",
    "vote",
]

APPROVAL_STATUSES = (
    "PENDING",
    "APPROVED",
    "EXECUTED",
    "FAILED",
    "REJECTED",
    "CANCELLED",
    "EXPIRED",
)
APPROVAL_TTL = timedelta(hours=72)
# action -> the write scope that voting on it needs (card actions join with the cards feature).
ACTIONS = {
    "payout.create": "payouts:write",
    "refund.create": "refunds:write",
    # Issuing: the threshold is on the larger of the largest spending limit and the initial
    # funding. Funding: every wallet-to-card funding route.
    "card.issue": "cards:write",
    "card.fund": "cards:write",
}


@dataclass(frozen=True)
class Policy:
    action: str
    enabled: bool = False
    # currency -> the amount above which the action needs approval; none: no approval there.
    thresholds: dict[str, int] = field(default_factory=dict)
    required_approvals: int = 1

    def applies(self, currency: str, amount: int) -> bool:
        threshold = self.thresholds.get(currency)
        return self.enabled and threshold is not None and amount > threshold


def needs_approval(policies: dict[str, Policy], action: str, currency: str, amount: int) -> bool:
    policy = policies.get(action)
    return policy is not None and policy.applies(currency, amount)


@dataclass(frozen=True)
class Vote:
    user_id: str
    decision: str  # approve | reject
    at: str
    comment: str | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    company_id: str
    mode: str
    action: str
    status: str
    requested_by: str
    payload: dict[str, Any]
    required_approvals: int
    created_at: str
    expires_at: str
    votes: tuple[Vote, ...] = ()
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    decided_at: str | None = None
    # The person who asked: `requested_by` when a member asked from a session, the key's
    # creator when an API key did (None only when that creator could not be found).
    requested_by_user: str | None = None

    @property
    def approvals(self) -> int:
        return sum(1 for v in self.votes if v.decision == "approve")

    def asked_by(self, user_id: str) -> bool:
        """Whether `user_id` is the requester: who asked in person, or through their own key."""
        return user_id in (self.requested_by, self.requested_by_user)


def _require_pending(request: ApprovalRequest, now: str) -> None:
    if request.status != "PENDING" or request.expires_at <= now:
        state = "EXPIRED" if request.status == "PENDING" else request.status
        msg = f"The approval request is {state}; only a PENDING one can be decided"
        raise Conflict(msg, code="invalid_state")


def vote(
    request: ApprovalRequest, cast: Vote, voter_scopes: frozenset[str], now: str
) -> ApprovalRequest:
    """The request after `cast`: still PENDING, APPROVED (enough approvals) or REJECTED."""
    _require_pending(request, now)
    if request.asked_by(cast.user_id):
        # Also when they asked through one of their API keys (the module's docstring).
        raise Forbidden("You cannot vote on your own request", code="requester_cannot_vote")
    needed = ACTIONS[request.action]
    if needed not in voter_scopes:
        raise Forbidden(f"Voting on {request.action} needs {needed}", code="insufficient_scope")
    if any(v.user_id == cast.user_id for v in request.votes):
        raise Conflict("You have voted on this request already", code="duplicate")
    after = replace(request, votes=(*request.votes, cast))
    if cast.decision == "reject":
        return replace(after, status="REJECTED", decided_at=now)
    if after.approvals >= request.required_approvals:
        return replace(after, status="APPROVED", decided_at=now)
    return after


def cancel(request: ApprovalRequest, user_id: str, now: str) -> ApprovalRequest:
    _require_pending(request, now)
    if not request.asked_by(user_id):
        raise Forbidden("Only the requester can cancel the request")
    return replace(request, status="CANCELLED", decided_at=now)
