"""Success bodies and the error envelope (decisions 0), rendered with orjson."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from mps.domain.clock import iso, utcnow
from mps.errors import (
    RETRY_AFTER,
    MethodNotAllowed,
    RateLimited,
    ServiceError,
    Unavailable,
    ValidationFailed,
)
from mps.http.replies import Aggregate, Page, Reply, Resource
from mps.http.statuses import UNAVAILABLE, status_of
from mps.http.versions import apply_transforms, version_headers

__all__ = ["error_body", "error_response", "json_response", "reply_body"]

JSON_TYPE = "application/json"


def reply_body(reply: Reply, request_id: str) -> tuple[int, dict[str, Any]]:
    head: dict[str, Any] = {"ok": True, "requestId": request_id}
    if isinstance(reply, Resource):
        return reply.status, {**head, **reply.fields}
    if isinstance(reply, Page):
        more = reply.next_cursor is not None
        return 200, {**head, "data": reply.items, "nextCursor": reply.next_cursor, "hasMore": more}
    if isinstance(reply, Aggregate):
        return 200, {**head, "data": reply.data}
    raise TypeError(type(reply).__name__)


def error_body(error: ServiceError, request_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "ok": False,
        "statusCode": status_of(error),
        "message": error.message,
        "requestId": request_id,
        "timestamp": iso(utcnow()),
        "code": error.code,
    }
    if isinstance(error, ValidationFailed):
        body["errors"] = [{"field": e.field, "message": e.message} for e in error.errors]
    return body


def json_response(
    status: int,
    body: dict[str, Any],
    request_id: str,
    version: str,
    *,
    retry_after: int = RETRY_AFTER,
) -> web.Response:
    """`body` as JSON. A 503 always carries Retry-After (`retry_after` seconds): whoever built
    it, an error or a health check, cannot leave the client without a time to retry."""
    headers = {"X-Request-Id": request_id, **version_headers(version)}
    if status == UNAVAILABLE:
        headers["Retry-After"] = str(max(1, retry_after))
    return web.Response(
        status=status,
        body=orjson.dumps(apply_transforms(body, version)),
        content_type=JSON_TYPE,
        headers=headers,
    )


def error_response(error: ServiceError, request_id: str, version: str) -> web.Response:
    # By status, not by class: a 503 from aiohttp's own exceptions (a ProtocolError) gets
    # the header too.
    wait = error.retry_after if isinstance(error, RateLimited | Unavailable) else RETRY_AFTER
    body = error_body(error, request_id)
    response = json_response(status_of(error), body, request_id, version, retry_after=wait)
    if isinstance(error, RateLimited):
        response.headers["Retry-After"] = str(error.retry_after)
    if isinstance(error, MethodNotAllowed) and error.allowed:
        response.headers["Allow"] = ", ".join(sorted(error.allowed))
    return response
