"""Approval requests and policies as the API and its events show them (decisions 9)."""

from __future__ import annotations

from typing import Any

from mps.domain.approvals import ApprovalRequest, Policy

__all__ = ["approval_json", "policy_json"]


def approval_json(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "action": request.action,
        "status": request.status,
        "requestedBy": request.requested_by,
        # An addition to the contract's shape: the person who asked (the key's creator when
        # `requestedBy` is an API key), who can neither vote on it nor be outvoted by their key.
        "requestedByUserId": request.requested_by_user,
        "payload": request.payload,
        "votes": [
            {"userId": v.user_id, "decision": v.decision, "comment": v.comment, "at": v.at}
            for v in request.votes
        ],
        "requiredApprovals": request.required_approvals,
        "result": request.result,
        "error": request.error,
        "livemode": request.mode == "live",
        "createdAt": request.created_at,
        "expiresAt": request.expires_at,
        "decidedAt": request.decided_at,
    }


def policy_json(policy: Policy) -> dict[str, Any]:
    return {
        "action": policy.action,
        "enabled": policy.enabled,
        "thresholds": {k: str(v) for k, v in sorted(policy.thresholds.items())},
        "requiredApprovals": policy.required_approvals,
    }
