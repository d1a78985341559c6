"""The OpenAPI 3.0.3 document, generated from the route table and its schemas (decisions 11)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mps.http.glossary import describe
from mps.http.routing import Auth, Route
from mps.http.schema import Refs

__all__ = ["build_openapi"]

_ERROR = {
    "type": "object",
    "required": ["ok", "statusCode", "message", "requestId", "timestamp"],
    "properties": {
        "ok": {"type": "boolean", "enum": [False]},
        "statusCode": {"type": "integer"},
        "message": {"type": "string"},
        "requestId": {"type": "string"},
        "timestamp": {"type": "string", "format": "date-time"},
        "code": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}
_SUCCESS = {
    "type": "object",
    "required": ["ok", "requestId"],
    "properties": {"ok": {"type": "boolean"}, "requestId": {"type": "string"}},
    "additionalProperties": True,
}


_ERROR_REF = {"$ref": "#/components/schemas/Error"}
# Request headers every API operation takes, and the one POSTs under /merchant, /team and the
# sandbox honour (decisions 16, 17).
_PARAMETERS = {
    "ApiVersion": {
        "name": "X-Api-Version",
        "in": "header",
        "required": False,
        "description": "The API version to answer in (v2, or v1 until its sunset); by default "
        "the company's pinned version for a session, else v2.",
        "schema": {"$ref": "#/components/schemas/ApiVersion"},
    },
    "IdempotencyKey": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "1 to 255 printable ASCII characters, kept 24 h per company: a repeat "
        "of the same request replays the first answer (Idempotent-Replayed: true); another "
        "request under the same key is 422 idempotency_key_reuse.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    },
}
_HEADERS = {
    "RequestId": {
        "description": "The answer's request id (req_…), as in its body.",
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": "What is left of the tightest limit counted: limit, remaining, reset.",
        "schema": {"type": "string"},
    },
    "RateLimitPolicy": {
        "description": "The tightest limit counted: its size and window.",
        "schema": {"type": "string"},
    },
    "RetryAfter": {"description": "Whole seconds to wait.", "schema": {"type": "integer"}},
}
_ERRORS = {
    "400": "Bad input (validation_error with the fields, invalid_json, invalid_cursor)",
    "401": "No valid credential, or the wrong kind (session_required, api_key_required)",
    "403": "The credential lacks a scope (insufficient_scope) or the account is not verified",
    "404": "No such resource, or another company's",
    "429": "Rate limited; Retry-After says when to try again",
    "503": "A fault (the database, the broker, an account moving between nodes); nothing is "
    "wrong with the request: retry after Retry-After",
}


def _headers(*names: str) -> dict[str, Any]:
    header_names = {
        "RequestId": "X-Request-Id",
        "RateLimit": "RateLimit",
        "RateLimitPolicy": "RateLimit-Policy",
        "RetryAfter": "Retry-After",
    }
    return {header_names[n]: {"$ref": f"#/components/headers/{n}"} for n in names}


def _operation_id(route: Route) -> str:
    words = re.sub(r"[^a-zA-Z0-9]+", "_", route.path).strip("_")
    return f"{route.method.lower()}_{words}"


def _operation(route: Route, refs: Refs) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": _operation_id(route),
        "summary": route.summary,
        "tags": [route.tag],
    }
    if route.auth is Auth.SESSION and route.key_access:
        op["security"] = [{"sessionToken": []}, {"apiKey": []}]
    elif route.auth is Auth.SESSION:
        op["security"] = [{"sessionToken": []}]
    elif route.auth is Auth.API_KEY:
        op["security"] = [{"apiKey": []}]
    elif route.auth is Auth.OPTIONAL_SESSION:
        op["security"] = [{}, {"sessionToken": []}]
    else:
        op["security"] = []
    if route.scope:
        op["description"] = f"Needs the `{route.scope}` scope."
    if route.key_access:
        op["description"] = (
            op.get("description", "") + " A secret key may call it too while the company's "
            "`apiKeyAccess` setting is on for the key's mode."
        ).strip()
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", route.path)
    ]
    if route.query is not None:
        for name, schema in route.query.fields.items():
            params.append(
                {
                    "name": name,
                    "in": "query",
                    "required": name in route.query.required,
                    "schema": schema.json_schema(refs),
                }
            )
    if route.api:
        params.append({"$ref": "#/components/parameters/ApiVersion"})
    if route.idempotent:
        params.append({"$ref": "#/components/parameters/IdempotencyKey"})
    if params:
        op["parameters"] = params
    if route.body is not None:
        op["requestBody"] = {
            "required": bool(route.body.required),
            "content": {"application/json": {"schema": route.body.json_schema(refs)}},
        }
    if route.form is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"multipart/form-data": {"schema": route.form.json_schema(refs)}},
        }
    success = route.response.json_schema(refs) if route.response is not None else _SUCCESS
    content = (
        {route.produces: {"schema": {"type": "string", "format": "binary"}}}
        if route.produces is not None
        else {"application/json": {"schema": success}}
    )
    limited = route.auth is not Auth.PUBLIC
    success_headers = _headers("RequestId", *(("RateLimit", "RateLimitPolicy") if limited else ()))
    error_content = {"application/json": {"schema": _ERROR_REF}}
    op["responses"] = {
        str(route.status): {
            "description": "Success",
            "headers": success_headers,
            "content": content,
        },
        **{
            str(status): {
                "description": "Accepted" if status == 202 else "Success",
                "headers": success_headers,
                "content": {"application/json": {"schema": schema.json_schema(refs)}},
            }
            for status, schema in route.also
        },
        **{
            status: {
                "description": text,
                "headers": _headers(
                    "RequestId", *(("RetryAfter",) if status in ("429", "503") else ())
                ),
                "content": error_content,
            }
            for status, text in _ERRORS.items()
            if status != "401" or route.auth is not Auth.PUBLIC
        },
        "default": {
            "description": "Error envelope",
            "headers": _headers("RequestId"),
            "content": error_content,
        },
    }
    if route.idempotent:
        op["responses"]["422"] = {
            "description": "The Idempotency-Key was used for another request",
            "headers": _headers("RequestId"),
            "content": error_content,
        }
    return op


def build_openapi(routes: Iterable[Route], server_url: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    refs = Refs()
    for route in routes:
        if route.internal or not route.api:
            continue
        paths.setdefault(route.full_path, {})[route.method.lower()] = _operation(route, refs)
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "Merchant Payments Service",
            "version": "v2",
            "description": "Payments, refunds, payouts, cards, invoices and webhooks.",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "sessionToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "apiKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "sk_test_…, sk_live_…, pk_test_… or pk_live_…. Secret keys "
                    "also call the payment, refund, balance, payout, bank-account, card, "
                    "customer, invoice and event routes while the company's apiKeyAccess "
                    "setting is on for their mode.",
                },
            },
            "schemas": {
                "Error": _ERROR,
                "ApiVersion": {"type": "string", "enum": ["v2", "v1", "2", "1"]},
                **dict(sorted(refs.schemas.items())),
            },
            "parameters": _PARAMETERS,
            "headers": _HEADERS,
        },
    }
    describe(document)
    return document
