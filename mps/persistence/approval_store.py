"""Approval policies, requests and votes as rows: the statements the company actor (and, for an
approved action, the actor that runs it) commits, and what the company actor loads.

A request's status changes are guarded by the status they expect: a second execution of an
approved action, a vote on a decided request, finds no row and rolls its whole unit back.

The person behind a request an API key made (`ApprovalRequest.requested_by_user`) is the key's
creator. It is not a column: a key's creator never changes and key rows are never deleted (a
revoked key keeps its row), so every read takes it from the key's row (`_SELECT`). Requests made
before this rule existed name their person too, without a backfill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from mps.domain.approvals import ApprovalRequest, Policy, Vote
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.queries.paging import PageRequest, Where, fetch_page
from mps.persistence.rows import from_row
from mps.persistence.statements import Row, Statement, insert, placeholders

__all__ = [
    "NotApproved",
    "Voter",
    "VotesShort",
    "approved_by_votes",
    "event",
    "finished",
    "get_request",
    "key_creator",
    "list_requests",
    "load_open",
    "load_policies",
    "open_due",
    "policy_from_row",
    "policy_upsert",
    "request_from_rows",
    "request_insert",
    "status_change",
    "vote_insert",
]


class NotApproved(StaleWrite):
    """The request was not APPROVED when its action's unit committed: it ran already (or was
    never approved). The unit, the action included, rolled back."""


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def policy_upsert(company_id: str, policy: Policy, now: str) -> Statement:
    return Statement(
        "INSERT INTO approval_policies "
        "(company_id, action, enabled, thresholds, required_approvals, updated_at) "
        "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (company_id, action) DO UPDATE SET "
        "enabled = excluded.enabled, thresholds = excluded.thresholds, "
        "required_approvals = excluded.required_approvals, updated_at = excluded.updated_at",
        (
            company_id,
            policy.action,
            int(policy.enabled),
            _json({k: str(v) for k, v in policy.thresholds.items()}),
            policy.required_approvals,
            now,
        ),
    )


def policy_from_row(row: Row) -> Policy:
    return Policy(
        row["action"],
        bool(row["enabled"]),
        {k: int(v) for k, v in orjson.loads(row["thresholds"]).items()},
        int(row["required_approvals"]),
    )


async def load_policies(db: Database, company_id: str) -> dict[str, Policy]:
    rows = await db.fetch("SELECT * FROM approval_policies WHERE company_id = $1", company_id)
    return {r["action"]: policy_from_row(r) for r in rows}


def request_insert(request: ApprovalRequest) -> Statement:
    return insert(
        "approval_requests",
        {
            "id": request.id,
            "company_id": request.company_id,
            "mode": request.mode,
            "action": request.action,
            "status": request.status,
            "requested_by": request.requested_by,
            "payload": _json(request.payload),
            "required_approvals": request.required_approvals,
            "result": None,
            "error": None,
            "created_at": request.created_at,
            "expires_at": request.expires_at,
            "decided_at": None,
        },
    )


def vote_insert(request_id: str, vote: Vote) -> Statement:
    return insert(
        "approval_votes",
        {
            "request_id": request_id,
            "user_id": vote.user_id,
            "decision": vote.decision,
            "comment": vote.comment,
            "at": vote.at,
        },
    )


def status_change(company_id: str, request_id: str, before: str, after: str, now: str) -> Statement:
    return Statement(
        "UPDATE approval_requests SET status = $1, decided_at = $2 "
        "WHERE id = $3 AND company_id = $4 AND status = $5",
        (after, now, request_id, company_id, before),
        expect_rows=1,
    )


class VotesShort(StaleWrite):
    """The request was to be approved, but storage holds fewer approving votes than it needs
    (a vote counted in memory was refused): the unit rolls back whole."""


def approved_by_votes(company_id: str, request_id: str, now: str, required: int) -> Statement:
    """PENDING -> APPROVED, only if the stored approving votes (this unit's included) reach
    `required`; the unit fails with VotesShort otherwise."""
    return Statement(
        "UPDATE approval_requests SET status = 'APPROVED', decided_at = $1 "
        "WHERE id = $2 AND company_id = $3 AND status = 'PENDING' AND (SELECT COUNT(*) FROM "
        "approval_votes WHERE request_id = $2 AND decision = 'approve') >= $4",
        (now, request_id, company_id, required),
        expect_rows=1,
        stale_error=VotesShort,
    )


def finished(
    company_id: str,
    request_id: str,
    now: str,
    *,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> Statement:
    """APPROVED -> EXECUTED with the action's result (in the action's own unit), or FAILED with
    its error; the unit fails with NotApproved when the request is not APPROVED any more."""
    status = "EXECUTED" if error is None else "FAILED"
    return Statement(
        "UPDATE approval_requests SET status = $1, result = $2, error = $3, decided_at = $4 "
        "WHERE id = $5 AND company_id = $6 AND status = 'APPROVED'",
        (status, _json(result), _json(error), now, request_id, company_id),
        expect_rows=1,
        stale_error=NotApproved,
    )


def event(request: ApprovalRequest, event_type: str, now: str, obj: dict[str, Any]) -> Statement:
    """The outbox insert of the request's event, carrying `obj` (the request as the API shows
    it, rendered by the caller)."""
    row = event_row(
        company_id=request.company_id,
        mode=request.mode,
        event_type=event_type,
        created_at=now,
        obj=obj,
    )
    return event_insert(row)


# A request's row and its requester person: the creator of the key that asked, else the member.
_SELECT = (
    "SELECT *, COALESCE((SELECT k.created_by FROM api_keys k "
    "WHERE k.id = approval_requests.requested_by "
    "AND k.company_id = approval_requests.company_id), requested_by) AS requested_by_user "
    "FROM approval_requests"
)


async def key_creator(db: Database, company_id: str, key_id: str) -> str | None:
    """The member who created the company's API key `key_id`; None when it has no such key."""
    found = await db.fetchval(
        "SELECT created_by FROM api_keys WHERE id = $1 AND company_id = $2", key_id, company_id
    )
    return None if found is None else str(found)


def request_from_rows(row: Row, votes: list[Row]) -> ApprovalRequest:
    """A request from its row (with `requested_by_user`) and its votes' rows, in vote order."""
    return from_row(
        ApprovalRequest,
        row,
        payload=orjson.loads(row["payload"]),
        required_approvals=int(row["required_approvals"]),
        votes=tuple(Vote(v["user_id"], v["decision"], v["at"], v["comment"]) for v in votes),
        result=orjson.loads(row["result"]) if row["result"] else None,
        error=orjson.loads(row["error"]) if row["error"] else None,
    )


async def _with_votes(db: Database, rows: list[Row]) -> list[ApprovalRequest]:
    if not rows:
        return []
    marks = placeholders(len(rows))
    votes = await db.fetch(
        f"SELECT * FROM approval_votes WHERE request_id IN ({marks}) ORDER BY at, user_id",
        *(r["id"] for r in rows),
    )
    by_request: dict[str, list[Row]] = {}
    for v in votes:
        by_request.setdefault(v["request_id"], []).append(v)
    return [request_from_rows(r, by_request.get(r["id"], [])) for r in rows]


async def load_open(db: Database, company_id: str) -> dict[str, ApprovalRequest]:
    """The company's PENDING and APPROVED requests, for its actor's activation."""
    rows = await db.fetch(
        f"{_SELECT} WHERE company_id = $1 AND status IN ('PENDING', 'APPROVED')",
        company_id,
    )
    return {r.id: r for r in await _with_votes(db, rows)}


async def get_request(
    db: Database, company_id: str, mode: str, request_id: str
) -> ApprovalRequest | None:
    rows = await db.fetch(
        f"{_SELECT} WHERE id = $1 AND company_id = $2 AND mode = $3",
        request_id,
        company_id,
        mode,
    )
    found = await _with_votes(db, rows)
    return found[0] if found else None


@dataclass(frozen=True)
class Voter:
    """A member asking for the requests waiting for their vote: who they are, and the actions
    their scopes let them vote on (`ACTIONS` names each one's write scope)."""

    user_id: str
    actions: frozenset[str]


def _awaiting(where: Where, voter: Voter) -> Where:
    """The rules `mps.domain.approvals.vote` decides by, as conditions: PENDING, not asked by
    the voter (in person or through their key), not voted on by them, an action they may vote
    on. A request past its expiry that the scheduler has not closed yet is still PENDING here,
    as on its own read; a vote on it answers 409."""
    where.compare("status", "PENDING")
    if not voter.actions:
        # No action this member may vote on: nothing waits for them.
        where.conditions.append("FALSE")
        return where
    where.params.append(voter.user_id)
    me = f"${len(where.params)}"
    where.conditions.append(f"requested_by <> {me}")
    where.conditions.append(
        "NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = approval_requests.requested_by "
        f"AND k.company_id = approval_requests.company_id AND k.created_by = {me})"
    )
    where.conditions.append(
        "NOT EXISTS (SELECT 1 FROM approval_votes v "
        f"WHERE v.request_id = approval_requests.id AND v.user_id = {me})"
    )
    marks = []
    for action in sorted(voter.actions):
        where.params.append(action)
        marks.append(f"${len(where.params)}")
    where.conditions.append(f"action IN ({', '.join(marks)})")
    return where


async def list_requests(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    status: str | None = None,
    awaiting: Voter | None = None,
) -> tuple[list[ApprovalRequest], str | None]:
    """The company's requests in `mode`, newest first; with `awaiting`, only those waiting for
    that member's vote."""
    where = Where.in_mode(company_id, mode).compare("status", status)
    if awaiting is not None:
        _awaiting(where, awaiting)
    rows, cursor = await fetch_page(db, _SELECT, where, page)
    return await _with_votes(db, rows), cursor


async def open_due(db: Database, now: str, limit: int, scope: str) -> list[Row]:
    """PENDING requests past their expiry, and APPROVED ones (an action that a crash kept from
    running), for the scheduler; `scope` limits them to the shards this node owns."""
    return await db.fetch(
        "SELECT id, company_id, mode, status FROM approval_requests "
        f"WHERE ((status = 'PENDING' AND expires_at <= $1) OR status = 'APPROVED') {scope} "
        "ORDER BY expires_at LIMIT $2",
        now,
        limit,
    )
