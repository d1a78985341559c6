"""API key management (decisions 2): create (shown once), list, revoke, request log."""

from __future__ import annotations

from typing import Any

from mps.actors.company import CreateApiKey, RevokeApiKey
from mps.errors import NotFound
from mps.http.idempotency import presented
from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import (
    API_KEY,
    API_KEY_FIELDS,
    API_KEY_LOG,
    KEY_TYPE,
    MODE,
    SCOPE,
    page,
    resource,
)
from mps.http.routing import Call, LimitRule, RouteFamily
from mps.http.schema import Array, Obj, Str
from mps.limits import Limit
from mps.persistence.queries import api_keys as q
from mps.representations.columns import json_array

__all__ = ["ROUTES"]


def key_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "mode": row["mode"],
        "livemode": row["mode"] == "live",
        "scopes": json_array(row["scopes"]),
        "prefix": row["prefix"],
        "last4": row["last4"],
        # An addition to the contract's list: the member the key acts for (SECURITY.md).
        "createdBy": row["created_by"],
        "createdAt": row["created_at"],
        "lastUsedAt": row["last_used_at"],
        "revokedAt": row["revoked_at"],
    }


def _created(result: tuple[dict[str, Any], str]) -> Resource:
    row, key = result
    return Resource({**key_view(row), "key": key}, 201)


async def create_key(call: Call) -> Resource:
    session, body = call.session, call.body
    key_type, mode = body.get("type", "secret"), body.get("mode", session.mode)
    idem = call.idempotent(_created)
    result = await call.services.shards.ask_company(
        session.company_id,
        CreateApiKey(
            created_by=session.user_id,
            creator_scopes=session.scopes,
            name=body["name"],
            type=key_type,
            mode=mode,
            scopes=tuple(body["scopes"]),
            idempotency=idem,
            audit=call.audit(),
        ),
    )
    return presented(idem, result, _created)


async def list_keys(call: Call) -> Page:
    page = page_request(call.query)
    items, cursor = await q.list_keys(
        call.services.database, call.session.company_id, call.query.get("mode"), page
    )
    return Page([key_view(r) for r in items], cursor)


def _revoked(row: dict[str, Any]) -> Resource:
    return Resource(key_view(row))


async def revoke_key(call: Call) -> Resource:
    session, services = call.session, call.services
    # Read before asking, so the company actor's turn holds no read.
    key = await q.key_row(services.database, session.company_id, call.param("id"))
    if key is None:
        raise NotFound("No such API key")
    idem = call.idempotent(_revoked)
    row = await services.shards.ask_company(
        session.company_id, RevokeApiKey(key, call.audit(), idempotency=idem)
    )
    await services.credentials.forget_key(row["id"])
    return presented(idem, row, _revoked)


async def key_logs(call: Call) -> Page:
    page = page_request(call.query)
    db, company_id, key_id = call.services.database, call.session.company_id, call.param("id")
    if not await q.key_exists(db, company_id, key_id):
        raise NotFound("No such API key")
    items, cursor = await q.key_logs(db, company_id, key_id, page)
    return Page(
        [
            {
                "id": r["id"],
                "at": r["at"],
                "method": r["method"],
                "path": r["path"],
                "statusCode": r["status_code"],
                "ip": r["ip"],
                "requestId": r["request_id"],
            }
            for r in items
        ],
        cursor,
    )


_api_keys = RouteFamily("api-keys", read="settings:read", write="settings:write")

ROUTES = [
    _api_keys.post(
        "/merchant/api-keys",
        create_key,
        "Create an API key; the key is shown once",
        status=201,
        limits=(LimitRule.per_user(Limit("api-key-create", 10, 60)),),
        response=resource({**API_KEY_FIELDS, "key": Str()}),
        body=Obj(
            {
                "name": Str(min_length=1, max_length=100),
                "type": KEY_TYPE,
                "mode": MODE,
                "scopes": Array(SCOPE, min_items=1, unique=True),
            },
            required=["name", "scopes"],
        ),
        commits_key=True,
    ),
    _api_keys.get(
        "/merchant/api-keys",
        list_keys,
        "List API keys",
        query=Obj({**PAGE_FIELDS, "mode": MODE}),
        response=page(API_KEY),
    ),
    _api_keys.post(
        "/merchant/api-keys/{id}/revoke",
        revoke_key,
        "Revoke an API key at once",
        response=resource(API_KEY),
        commits_key=True,
    ),
    _api_keys.get(
        "/merchant/api-keys/{id}/logs",
        key_logs,
        "The key's request log",
        query=PAGE_QUERY,
        response=page(API_KEY_LOG),
    ),
]
