"""The OpenAPI 3.0.3 document, generated from the route table and its schemas (decisions 11)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mps.http.routing import Auth, Route

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


def _operation_id(route: Route) -> str:
    words = re.sub(r"[^a-zA-Z0-9]+", "_", route.path).strip("_")
    return f"{route.method.lower()}_{words}"


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": _operation_id(route),
        "summary": route.summary,
        "tags": [route.tag],
    }
    if route.auth is Auth.SESSION:
        op["security"] = [{"sessionToken": []}]
    elif route.auth is Auth.API_KEY:
        op["security"] = [{"apiKey": []}]
    elif route.auth is Auth.OPTIONAL_SESSION:
        op["security"] = [{}, {"sessionToken": []}]
    else:
        op["security"] = []
    if route.scope:
        op["description"] = f"Needs the `{route.scope}` scope."
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
                    "schema": schema.json_schema(),
                }
            )
    if params:
        op["parameters"] = params
    if route.body is not None:
        op["requestBody"] = {
            "required": bool(route.body.required),
            "content": {"application/json": {"schema": route.body.json_schema()}},
        }
    if route.form is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"multipart/form-data": {"schema": route.form.json_schema()}},
        }
    success = route.response.json_schema() if route.response is not None else _SUCCESS
    content = (
        {route.produces: {"schema": {"type": "string", "format": "binary"}}}
        if route.produces is not None
        else {"application/json": {"schema": success}}
    )
    op["responses"] = {
        str(route.status): {"description": "Success", "content": content},
        **{
            str(status): {
                "description": "Accepted" if status == 202 else "Success",
                "content": {"application/json": {"schema": schema.json_schema()}},
            }
            for status, schema in route.also
        },
        "default": {
            "description": "Error envelope",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        },
    }
    return op


def build_openapi(routes: Iterable[Route], server_url: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if route.internal or not route.api:
            continue
        paths.setdefault(route.full_path, {})[route.method.lower()] = _operation(route)
    return {
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
                    "description": "sk_test_…, sk_live_…, pk_test_… or pk_live_…",
                },
            },
            "schemas": {"Error": _ERROR},
        },
    }
