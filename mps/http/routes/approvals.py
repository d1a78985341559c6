"""Maker-checker approvals (decisions 9): policies per action, and the requests an action above
its threshold makes instead of running; votes, cancel, and the action run once when approved."""

from __future__ import annotations

from typing import Any

from mps.actors.company import CancelApproval, SetPolicy, VoteOnApproval
from mps.domain.approvals import ACTIONS, ApprovalRequest, Policy
from mps.domain.money import parse_amount_minor
from mps.errors import Conflict, FieldError, NotFound, ValidationFailed
from mps.http.idempotency import presented
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Page, Resource
from mps.http.resources import APPROVAL, APPROVAL_STATUS, POLICY, page, resource
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routes.payments import CURRENCY
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Bool, Int, Map, Obj, Str
from mps.persistence import approval_store as store
from mps.representations.approvals import approval_json, policy_json

__all__ = ["HELD", "ROUTES", "approval_accepted"]


def approval_accepted(request: ApprovalRequest) -> Resource:
    """What an action above its threshold answers: 202 with the request made instead."""
    return Resource({"approvalRequest": approval_json(request)}, 202)


async def list_policies(call: Call) -> Page:
    policies = await store.load_policies(call.services.database, call.session.company_id)
    return Page([policy_json(policies.get(a) or Policy(a)) for a in ACTIONS], None)


def _thresholds(raw: dict[str, Any]) -> dict[str, int]:
    errors, found = [], {}
    for currency, amount in raw.items():
        value = parse_amount_minor(amount) if isinstance(amount, str) else None
        if len(currency) != 3 or not currency.isupper():
            errors.append(FieldError(f"thresholds.{currency}", "must be a currency code"))
        elif value is None:
            errors.append(FieldError(f"thresholds.{currency}", "must be an amount in minor units"))
        else:
            found[currency] = value
    if errors:
        raise ValidationFailed(errors)
    return found


async def set_policy(call: Call) -> Resource:
    action = call.param("action")
    if action not in ACTIONS:
        raise NotFound(f"No approval policy for {action!r}; actions: {', '.join(ACTIONS)}")
    body = call.body
    policy = Policy(
        action,
        bool(body["enabled"]),
        _thresholds(body.get("thresholds") or {}),
        body.get("requiredApprovals") or 1,
    )
    set_to: Policy = await call.services.shards.ask_company(
        call.session.company_id, SetPolicy(policy, call.audit())
    )
    return Resource(policy_json(set_to))


def _voter(call: Call) -> store.Voter | None:
    """The signed-in member as a voter when the query asks for what awaits their vote."""
    if not call.query.get("awaitingMyVote"):
        return None
    session = call.session
    actions = frozenset(a for a, scope in ACTIONS.items() if scope in session.scopes)
    return store.Voter(session.user_id, actions)


async def list_requests(call: Call) -> Page:
    return await page_in_mode(
        call,
        call.session,
        store.list_requests,
        approval_json,
        status=call.query.get("status"),
        awaiting=_voter(call),
    )


async def get_request(call: Call) -> Resource:
    found = await one_in_mode(call, call.session, store.get_request, "No such approval request")
    return Resource(approval_json(found))


def _shown(request: ApprovalRequest) -> Resource:
    return Resource(approval_json(request))


async def _decided(call: Call, exc: NotFound) -> Exception:
    """What a vote or cancel on a request the company actor does not hold answers: 409 naming
    its status when the request exists (decided, so no longer held), else the actor's 404.

    Read here, after the actor answered, so that no turn waits on storage; a request decided
    between the two steps reads as decided, which is what it is."""
    session = call.session
    found = await store.get_request(
        call.services.database, session.company_id, session.mode, call.param("id")
    )
    if found is None:
        return exc
    msg = f"The approval request is {found.status}; only a PENDING one can be decided"
    return Conflict(msg, code="invalid_state")


async def _decide(call: Call, command: VoteOnApproval | CancelApproval) -> ApprovalRequest:
    """The request after the company's actor has run `command` on it; 409 rather than 404 for
    one that exists and is no longer PENDING."""
    try:
        after: ApprovalRequest = await call.services.shards.ask_company(
            call.session.company_id, command
        )
    except NotFound as exc:
        raise await _decided(call, exc) from None
    return after


async def _vote(call: Call, decision: str) -> Resource:
    session = call.session
    idem = call.idempotent(_shown)
    after = await _decide(
        call,
        VoteOnApproval(
            session.mode, call.param("id"), session.user_id, session.scopes, decision,
            call.body.get("comment"), call.audit(), idempotency=idem,
        ),
    )  # fmt: skip
    if after.status == "APPROVED":
        after = await call.services.approvals.execute(after, idem)
    return _shown(after)


async def approve(call: Call) -> Resource:
    return await _vote(call, "approve")


async def reject(call: Call) -> Resource:
    return await _vote(call, "reject")


async def cancel(call: Call) -> Resource:
    session = call.session
    idem = call.idempotent(_shown)
    after = await _decide(
        call,
        CancelApproval(
            session.mode, call.param("id"), session.user_id, call.audit(), idempotency=idem
        ),
    )
    return presented(idem, after, _shown)


VOTE_BODY = Obj({"comment": Str(max_length=1000)})
# Query text: exactly `true` or `false`; false (or absent) filters nothing.
AWAITING = Bool(from_text=True)
# What an action above its approval policy's threshold answers instead of running.
HELD = ((202, resource({"approvalRequest": APPROVAL})),)

_team = RouteFamily("team", read="team:read")

ROUTES = [
    _team.get(
        "/team/approvals/policies",
        list_policies,
        "The approval policy of each action",
        response=page(POLICY),
    ),
    _team.put(
        "/team/approvals/policies/{action}",
        set_policy,
        "Set an action's approval policy",
        scope="team:write",
        body=Obj(
            {
                "enabled": Bool(),
                "thresholds": Map(
                    values=Str(),
                    keys=CURRENCY,
                    max_keys=50,
                    max_key_length=3,
                    description="Currency -> the amount above which approval is needed.",
                ),
                "requiredApprovals": Int(minimum=1, maximum=10),
            },
            required=["enabled"],
        ),
        response=resource(POLICY),
    ),
    _team.get(
        "/team/approvals/requests",
        list_requests,
        "Approval requests, newest first",
        query=Obj({**PAGE_FIELDS, "status": APPROVAL_STATUS, "awaitingMyVote": AWAITING}),
        response=page(APPROVAL),
    ),
    _team.get(
        "/team/approvals/requests/{id}",
        get_request,
        "Retrieve an approval request",
        response=resource(APPROVAL),
    ),
    # Voting needs the action's own write scope, checked by the company actor: no route scope.
    _team.post(
        "/team/approvals/requests/{id}/approve",
        approve,
        "Approve; the action runs once enough members have",
        body=VOTE_BODY,
        response=resource(APPROVAL),
    ),
    _team.post(
        "/team/approvals/requests/{id}/reject",
        reject,
        "Reject; one rejection rejects the request",
        body=VOTE_BODY,
        response=resource(APPROVAL),
    ),
    _team.post(
        "/team/approvals/requests/{id}/cancel",
        cancel,
        "Withdraw your own PENDING request (also one your API key made)",
        response=resource(APPROVAL),
        commits_key=True,
    ),
]
