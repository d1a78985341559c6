"""Team (decisions 3, 9): roles and scopes, members, the ownership transfer, the audit trail.

Every change goes to the company actor, which decides it against the members and roles it
holds and appends its audit entry in the same unit. Once a role or membership changes, every
cached credential of the company is verified again on its next use (on every node), so the
change takes effect on the next request: for the member's sessions, and for the API keys they
created, whose scopes are bounded by their creator's role (mps.auth.authenticate).
"""

from __future__ import annotations

import csv
import io
from typing import Any

import orjson
from aiohttp import web

from mps.actors.company import (
    ChangeMemberRole,
    CreateRole,
    DeleteRole,
    RemoveMember,
    TransferOwnership,
    UpdateRole,
)
from mps.domain import audit as chain
from mps.domain.scopes import ADMIN_ROLE, ALL_SCOPES, BUILTIN_ROLES, OWNER_ROLE, Role
from mps.domain.team import resolve_role
from mps.errors import NotFound
from mps.http.idempotency import presented
from mps.http.keys import API_VERSION
from mps.http.pagination import PAGE_FIELDS, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import (
    AUDIT_ENTRY,
    MEMBER,
    ROLE,
    ROLE_FIELDS,
    SCOPE,
    deleted,
    page,
    resource,
)
from mps.http.routes.payments import DATE_RANGE, range_filter
from mps.http.routing import Call, LimitRule, RouteFamily
from mps.http.schema import Array, Bool, Enum, Int, Obj, Str
from mps.http.versions import version_headers
from mps.limits import Limit
from mps.persistence.queries import team as q
from mps.persistence.team_store import load_roles
from mps.representations.team import audit_json, member_json, role_json

__all__ = ["ROUTES"]

SCOPES = Array(SCOPE, unique=True, max_items=len(ALL_SCOPES))


async def _roles(call: Call) -> dict[str, Role]:
    return await load_roles(call.services.database, call.session.company_id)


async def _forget(call: Call) -> None:
    """Roles or members changed: every credential of the company is verified again."""
    await call.services.credentials.forget_company(call.session.company_id)


async def list_roles(call: Call) -> Page:
    custom = await _roles(call)
    held: dict[str, int] = {}
    for row in await q.members(call.services.database, call.session.company_id):
        held[row["role_id"]] = held.get(row["role_id"], 0) + 1
    roles = [*BUILTIN_ROLES.values(), *sorted(custom.values(), key=lambda r: r.name)]
    return Page([role_json(r, held.get(r.id, 0)) for r in roles], None)


async def list_scopes(call: Call) -> Page:
    return Page([{"scope": scope} for scope in ALL_SCOPES], None)


def _role_created(role: Role) -> Resource:
    return Resource(role_json(role), 201)


async def create_role(call: Call) -> Resource:
    session, body = call.session, call.body
    idem = call.idempotent(_role_created)
    role: Role = await call.services.shards.ask_company(
        session.company_id,
        CreateRole(
            body["name"], frozenset(body["scopes"]), session.scopes, call.audit(), idempotency=idem
        ),
    )
    return presented(idem, role, _role_created)


async def update_role(call: Call) -> Resource:
    session, body = call.session, call.body
    scopes = body.get("scopes")
    role: Role = await call.services.shards.ask_company(
        session.company_id,
        UpdateRole(
            call.param("id"),
            body.get("name"),
            frozenset(scopes) if scopes is not None else None,
            session.scopes,
            call.audit(),
        ),
    )
    await _forget(call)
    return Resource(role_json(role))


async def delete_role(call: Call) -> Resource:
    role: Role = await call.services.shards.ask_company(
        call.session.company_id, DeleteRole(call.param("id"), call.audit())
    )
    return Resource({**role_json(role), "deleted": True})


async def _member(call: Call, user_id: str) -> dict[str, Any]:
    custom = await _roles(call)
    for row in await q.members(call.services.database, call.session.company_id):
        if row["user_id"] == user_id:
            role = resolve_role(row["role_id"], custom)
            return member_json(row["user_id"], row["email"], row["name"], role, row["created_at"])
    raise NotFound("No such member")


async def list_members(call: Call) -> Page:
    custom = await _roles(call)
    rows = await q.members(call.services.database, call.session.company_id)
    return Page(
        [
            member_json(
                r["user_id"],
                r["email"],
                r["name"],
                resolve_role(r["role_id"], custom),
                r["created_at"],
            )
            for r in rows
        ],
        None,
    )


async def change_member(call: Call) -> Resource:
    session = call.session
    user_id = call.param("id")
    command = ChangeMemberRole(
        user_id, call.body["roleId"], session.scopes, call.audit(), idempotency=None
    )
    await call.services.shards.ask_company(session.company_id, command)
    await _forget(call)
    return Resource(await _member(call, user_id))


async def remove_member(call: Call) -> Resource:
    session = call.session
    user_id = call.param("id")
    shown = await _member(call, user_id)
    await call.services.shards.ask_company(
        session.company_id, RemoveMember(user_id, call.audit(), session.scopes)
    )
    await _forget(call)
    return Resource({**shown, "removed": True})


async def transfer_ownership(call: Call) -> Resource:
    """The answer is read before the change and shown as it will be after it, so the request's
    Idempotency-Key record can commit in the same unit as the transfer."""
    session = call.session
    target = call.body["userId"]
    owner, previous = await _member(call, target), await _member(call, session.user_id)
    shown = Resource(
        {
            "owner": {**owner, "roleId": OWNER_ROLE, "roleName": "owner"},
            "previousOwner": {**previous, "roleId": ADMIN_ROLE, "roleName": "admin"},
        }
    )
    idem = call.idempotent(lambda _owner: shown)
    owner_id = await call.services.shards.ask_company(
        session.company_id,
        TransferOwnership(session.user_id, target, call.audit(), idempotency=idem),
    )
    await _forget(call)
    return presented(idem, owner_id, lambda _owner: shown)


async def list_audit(call: Call) -> Page:
    query = call.query
    start, end = range_filter(query)
    entries, cursor = await q.audit_page(
        call.services.database,
        call.session.company_id,
        page_request(query),
        actor_id=query.get("actorId"),
        action=query.get("action"),
        at_from=start,
        at_to=end,
    )
    return Page([audit_json(e) for e in entries], cursor)


async def verify_audit(call: Call) -> Resource:
    verdict = chain.Verdict()
    async for entries in q.audit_chain(call.services.database, call.session.company_id):
        verdict = chain.verify(entries, verdict)
        if not verdict.valid:
            break
    return Resource(
        {
            "valid": verdict.valid,
            "checked": verdict.checked,
            "firstBrokenId": verdict.first_broken_id,
        }
    )


_CSV_COLUMNS = (
    "id", "seq", "at", "actorType", "actorId", "action", "targetType", "targetId", "details",
    "ip", "requestId", "prevHash", "hash",
)  # fmt: skip


def _csv_line(values: list[Any]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)
    return out.getvalue().encode()


def _csv_row(entry: chain.AuditEntry) -> list[Any]:
    shown = audit_json(entry)
    details = orjson.dumps(shown["details"], option=orjson.OPT_SORT_KEYS).decode()
    return [
        shown["id"],
        shown["seq"],
        shown["at"],
        shown["actor"]["type"],
        shown["actor"]["id"],
        shown["action"],
        shown["target"]["type"],
        shown["target"]["id"],
        details,
        shown["ip"],
        shown["requestId"],
        shown["prevHash"],
        shown["hash"],
    ]


async def export_audit(call: Call) -> web.StreamResponse:
    """The whole trail in chain order, streamed a chunk at a time: memory stays constant
    however many entries there are."""
    kind = call.query.get("format") or "jsonl"
    media = "text/csv" if kind == "csv" else "application/x-ndjson"
    response = web.StreamResponse(
        headers={
            "Content-Type": f"{media}; charset=utf-8",
            "Content-Disposition": f'attachment; filename="audit.{kind}"',
            "X-Request-Id": call.request_id,
            **version_headers(call.request[API_VERSION]),
        }
    )
    await response.prepare(call.request)
    if kind == "csv":
        await response.write(_csv_line(list(_CSV_COLUMNS)))
    async for entries in q.audit_chain(call.services.database, call.session.company_id):
        if kind == "csv":
            chunk = b"".join(_csv_line(_csv_row(e)) for e in entries)
        else:
            chunk = b"".join(orjson.dumps(audit_json(e)) + b"\n" for e in entries)
        await response.write(chunk)
    await response.write_eof()
    return response


ROLE_BODY = Obj(
    {"name": Str(min_length=1, max_length=100), "scopes": SCOPES}, required=["name", "scopes"]
)

_team = RouteFamily("team", read="team:read", write="team:write")

ROUTES = [
    _team.get(
        "/team/roles", list_roles, "Roles: built-in and custom", query=Obj({}), response=page(ROLE)
    ),
    _team.get(
        "/team/roles/scopes",
        list_scopes,
        "Every scope a custom role can hold",
        response=page(Obj({"scope": SCOPE}, required=["scope"])),
    ),
    _team.post(
        "/team/roles",
        create_role,
        "Create a custom role",
        status=201,
        body=ROLE_BODY,
        response=resource(ROLE),
        commits_key=True,
    ),
    _team.patch(
        "/team/roles/{id}",
        update_role,
        "Rename a custom role or change its scopes",
        body=Obj({"name": Str(min_length=1, max_length=100), "scopes": SCOPES}),
        response=resource(ROLE),
    ),
    _team.delete(
        "/team/roles/{id}",
        delete_role,
        "Delete a custom role nobody holds",
        response=deleted(ROLE_FIELDS),
    ),
    _team.get("/team/members", list_members, "Members and their roles", response=page(MEMBER)),
    _team.patch(
        "/team/members/{id}",
        change_member,
        "Give a member another role",
        body=Obj({"roleId": Str(max_length=64)}, required=["roleId"]),
        response=resource(MEMBER),
    ),
    _team.delete(
        "/team/members/{id}",
        remove_member,
        "Remove a member; their sessions end",
        response=resource({**MEMBER.fields, "removed": Bool()}),
    ),
    _team.post(
        "/team/transfer-ownership",
        transfer_ownership,
        "Make another member the owner; the owner becomes admin",
        # The owner's alone, whatever scopes their role holds.
        scope=None,
        owner_only=True,
        body=Obj({"userId": Str(max_length=64)}, required=["userId"]),
        limits=(LimitRule.per_user(Limit("ownership-transfer", 5, 3600)),),
        response=resource({"owner": MEMBER, "previousOwner": MEMBER}),
        commits_key=True,
    ),
    _team.get(
        "/team/audit",
        list_audit,
        "The audit trail, newest first",
        scope="audit:read",
        query=Obj(
            {
                **PAGE_FIELDS,
                "actorId": Str(max_length=64),
                "action": Str(max_length=64),
                **DATE_RANGE,
            }
        ),
        response=page(AUDIT_ENTRY),
    ),
    _team.get(
        "/team/audit/verify",
        verify_audit,
        "Check the audit trail's hash chain",
        scope="audit:read",
        response=resource({"valid": Bool(), "checked": Int(), "firstBrokenId": Str(nullable=True)}),
    ),
    _team.get(
        "/team/audit/export",
        export_audit,
        "Download the audit trail (streamed)",
        scope="audit:read",
        query=Obj({"format": Enum(["csv", "jsonl"])}),
        limits=(LimitRule.per_user(Limit("audit-export", 10, 3600)),),
    ),
]
