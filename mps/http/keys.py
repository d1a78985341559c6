"""Typed keys for what the application and each request carry."""

from __future__ import annotations

from aiohttp import web

from mps.http.routing import Route
from mps.services import Services

__all__ = [
    "API_VERSION",
    "CSP_NONCE",
    "EXPLICIT_VERSION",
    "PASSED",
    "RELAYED",
    "REQUEST_ID",
    "ROUTE_TABLE",
    "SERVICES",
]

SERVICES = web.AppKey("services", Services)

# The route table the app was built from, for the OpenAPI document.
ROUTE_TABLE: web.AppKey[list[Route]] = web.AppKey("route_table")

# Per request, set by the envelope middleware before anything else runs.
REQUEST_ID = web.RequestKey("request_id", str)
# The version the response is rendered for, and the one the client named (None if it named none).
API_VERSION = web.RequestKey("api_version", str)
EXPLICIT_VERSION: web.RequestKey[str | None] = web.RequestKey("explicit_version")
# The Content Security Policy nonce of the page being rendered; made on first use, see
# `mps.http.security.csp_nonce`.
CSP_NONCE = web.RequestKey("csp_nonce", str)
# A request another node passed to this one, the owner of its shard (mps.http.forwarded).
PASSED = web.RequestKey("passed", bool)
# A response relayed whole from the owning node: its headers are already the final ones.
RELAYED = web.ResponseKey("relayed", bool)
