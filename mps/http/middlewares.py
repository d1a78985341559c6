"""The outermost middleware: request id, version negotiation, and the envelope for every error
raised outside a route's own pipeline (aiohttp's 404, 405 and 413, and anything unexpected).
Security headers are not set here but in `mps.http.security`, for every response."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from mps.domain.ids import request_id
from mps.errors import BadRequest
from mps.http.forwarded import passed_request_id
from mps.http.keys import API_VERSION, EXPLICIT_VERSION, REQUEST_ID
from mps.http.pipeline import to_service_error
from mps.http.render import error_response
from mps.http.versions import CURRENT, parse_version, version_headers

__all__ = ["envelope_middleware"]


@web.middleware
async def envelope_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rid = passed_request_id(request) or request_id()
    request[REQUEST_ID] = rid
    try:
        explicit = parse_version(request.headers.get("X-Api-Version"))
    except BadRequest as exc:
        request[EXPLICIT_VERSION] = None
        request[API_VERSION] = CURRENT
        return _finish(error_response(exc, rid, CURRENT), rid, CURRENT)
    request[EXPLICIT_VERSION] = explicit
    request[API_VERSION] = explicit or CURRENT
    try:
        response = await handler(request)
    except Exception as exc:
        response = error_response(to_service_error(exc, request), rid, request[API_VERSION])
    return _finish(response, rid, request[API_VERSION])


def _finish(response: web.StreamResponse, rid: str, version: str) -> web.StreamResponse:
    response.headers.setdefault("X-Request-Id", rid)
    for name, value in version_headers(version).items():
        response.headers.setdefault(name, value)
    return response
