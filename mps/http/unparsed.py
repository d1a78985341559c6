"""The answer to a request aiohttp cannot even parse (an unknown method, a broken request line).

aiohttp answers such a request itself, in `RequestHandler.handle_error`, before any application,
middleware or `on_response_prepare` signal can see it: a `text/plain` body that echoes the bad
request line, and a `Server` header naming Python's and aiohttp's versions. aiohttp offers no
setting or hook for it, so `install()` replaces that one method, once per process, with one that
keeps aiohttp's logging and connection handling and answers in the contract's error envelope
with the same headers every other response carries (mps.http.security). It is called by the app
factory, never at import time.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web, web_protocol

from mps.domain.ids import request_id
from mps.errors import ServiceError
from mps.http.render import error_body
from mps.http.security import answer_headers
from mps.http.statuses import ProtocolError

__all__ = ["install"]

_MARK = "_mps_envelope"


def install() -> None:
    handler_class: Any = web_protocol.RequestHandler
    original = handler_class.handle_error
    if getattr(original, _MARK, False):
        return

    def handle_error(
        self: web_protocol.RequestHandler,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # aiohttp's own first: it logs, and refuses when part of a response was already sent.
        original(self, request, status, exc, message)
        error: ServiceError
        if 400 <= status < 500:
            unread = "The request could not be read as HTTP"
            error = ProtocolError(status, unread, code="bad_request")
        else:
            error = ServiceError("Something went wrong on our side; quote the requestId to support")
        rid = request_id()
        response = web.Response(
            status=status,
            body=orjson.dumps(error_body(error, rid)),
            content_type="application/json",
            headers={"X-Request-Id": rid, **answer_headers()},
        )
        response.force_close()
        return response

    setattr(handle_error, _MARK, True)
    handler_class.handle_error = handle_error
