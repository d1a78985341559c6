"""The steps every API request goes through, in order, driven by its `Route`:

    credential -> API version -> scope -> rate limits -> query and body validation
    -> handler -> response (versioned) -> API-key request log

A handler that asks an actor of a shard another node owns (`ShardElsewhere`) has done nothing
yet; the whole request is then passed to that node and its answer returned as it is
(mps.http.passing).

Errors at any step become the error envelope here, so the key log records the real status.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from mps.actors.shards import ShardElsewhere
from mps.auth.api_keys import looks_like_api_key
from mps.auth.authenticate import KeyRefused, bearer_token
from mps.auth.principals import ApiKeyPrincipal, Principal, SessionPrincipal
from mps.domain.scopes import OWNER_ROLE
from mps.errors import (
    BadRequest,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ServiceError,
    ShardMoved,
    Unauthenticated,
    Unavailable,
    UnsupportedMedia,
)
from mps.faults import is_infrastructure_fault
from mps.http.access_log import logged_path
from mps.http.idempotency import (
    Claim,
    fingerprint,
    new_claim,
    run_idempotent,
    stored_response,
    validate_key,
)
from mps.http.json_body import parse_body
from mps.http.keys import API_VERSION, EXPLICIT_VERSION, PASSED, REQUEST_ID, SERVICES
from mps.http.passing import pass_on
from mps.http.render import error_response, json_response, reply_body
from mps.http.replies import Aggregate, Page, Resource
from mps.http.routing import Auth, Call, Route
from mps.http.schema import validate
from mps.http.statuses import ProtocolError
from mps.limits import Limit, Verdict
from mps.services import Services

__all__ = ["endpoint", "to_service_error"]

logger = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
STANDARD_LIMIT = Limit("standard", 600, 60)
DEVELOPER_LIMIT = Limit("developer", 1200, 60)


def to_service_error(exc: BaseException, request: web.Request) -> ServiceError:
    """Translate aiohttp's and unexpected errors into the contract's vocabulary."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, web.HTTPException):
        if exc.status == 404:
            return NotFound(_no_route(request))
        if exc.status == 405:
            allowed = frozenset(getattr(exc, "allowed_methods", ()))
            return MethodNotAllowed(f"{request.method} is not allowed on {request.path}", allowed)
        if exc.status == 413:
            return PayloadTooLarge("The request body is larger than 1 MiB")
        reason = exc.reason or "Request failed"
        return ProtocolError(exc.status, reason, code=_generic_code(exc.status))
    # The last net, not the first: each adapter translates its own driver's connection errors
    # into Unavailable where it talks to the service. One that slips through is still a fault
    # of a service we depend on, not a bug of ours, so the client is told to retry rather than
    # given a 500; the warning names the request so the adapter that missed it can be found.
    serving = (request.method, logged_path(request.path), request.get(REQUEST_ID))
    if is_infrastructure_fault(exc):
        logger.warning(
            "a service this node depends on failed while serving %s %s [%s]; answered 503",
            *serving,
            exc_info=exc,
        )
        return Unavailable("A service this request depends on is unavailable; retry")
    logger.error("unexpected error serving %s %s [%s]", *serving, exc_info=exc)
    return ServiceError("Something went wrong on our side; quote the requestId to support")


# The first segments of API routes, which a client may send without the /api/v1 prefix.
_API_ROOTS = ("/merchant/", "/team/", "/auth/", "/developer/", "/checkout/", "/health")


def _no_route(request: web.Request) -> str:
    path = logged_path(request.path)
    message = f"No route for {request.method} {path}"
    if path.startswith(_API_ROOTS):
        message += f"; API routes start with /api/v1 (did you mean /api/v1{path}?)"
    return message


def _generic_code(status: int) -> str:
    return {400: "bad_request", 401: "unauthenticated", 403: "forbidden"}.get(status, "error")


async def _principal(route: Route, request: web.Request, services: Services) -> Principal | None:
    if route.auth is Auth.PUBLIC:
        return None
    if route.auth is Auth.OPTIONAL_SESSION:
        return await _optional_session(request, services)
    token = bearer_token(request.headers.get("Authorization"))
    if token is None:
        raise Unauthenticated("Authentication required: send Authorization: Bearer <token>")
    if route.auth is Auth.SESSION:
        if looks_like_api_key(token):
            if route.key_access:
                return await _merchant_key(token, services)
            raise Unauthenticated(
                "This route needs a dashboard session, not an API key", code="session_required"
            )
        return await services.credentials.session(token)
    if not looks_like_api_key(token):
        raise Unauthenticated("This route needs an API key", code="api_key_required")
    return await services.credentials.api_key(token)


async def _merchant_key(token: str, services: Services) -> ApiKeyPrincipal:
    """A key on a route keys may call: only a secret key, and only while its company has
    apiKeyAccess on for the key's mode; any other key is refused as today (decisions 2)."""
    try:
        key = await services.credentials.api_key(token)
    except KeyRefused as exc:
        raise _refused_key(exc) from exc
    if key.may_call_merchant_routes:
        return key
    if key.type != "secret":
        reason = "a publishable key cannot call it; use a secret key or a dashboard session"
    else:
        reason = (
            f"secret keys may call it once the company turns on apiKeyAccess for {key.mode} "
            "mode (PATCH /api/v1/merchant/settings); until then, use a dashboard session"
        )
    raise Unauthenticated(
        f"This route needs a dashboard session: {reason}", code="session_required"
    )


def _refused_key(exc: KeyRefused) -> Unauthenticated:
    """A key that is not (or no longer) valid on a merchant route. Where its company lets secret
    keys call the route, the key is what is wrong: 401 unauthenticated, as on the API-key
    routes. Elsewhere the contract's 401 session_required stands, and the message says which
    of the two is wrong; an unknown key has no company to ask, so it names both."""
    if exc.merchant_access:
        return Unauthenticated(
            "The API key has been revoked; use another secret key of this company "
            "(GET /api/v1/merchant/api-keys) or a dashboard session"
        )
    if exc.merchant_access is None:
        msg = (
            "This route needs a dashboard session, or a valid secret key of a company that "
            "turned on apiKeyAccess; this API key is not valid (unknown, or deleted)"
        )
    else:
        msg = (
            "This route needs a dashboard session: the company has not turned on apiKeyAccess "
            "for this key's mode, and this API key has been revoked besides"
        )
    return Unauthenticated(msg, code="session_required")


async def _optional_session(request: web.Request, services: Services) -> Principal | None:
    try:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None or looks_like_api_key(token):
            return None
        return await services.credentials.session(token)
    except Unauthenticated:
        return None


def _authorize(route: Route, principal: Principal | None) -> None:
    if route.owner_only:
        assert isinstance(principal, SessionPrincipal)
        if principal.role_id != OWNER_ROLE:
            raise Forbidden("Only the owner can do this")
    if route.scope is not None and principal is not None and route.scope not in principal.scopes:
        raise Forbidden(f"This needs the {route.scope} scope", code="insufficient_scope")


async def _apply_limits(call: Call) -> Verdict | None:
    """Count the request against every limit that applies; the tightest verdict is reported.

    The standard limit holds across the cluster (`mps.limits.shared`): it awaits only when this
    node has no allowance left for the user. The others are counted on this node
    (`mps.limits.local`)."""
    services, route, principal = call.services, call.route, call.principal
    limiter = services.limiter
    if not limiter.enabled:
        return None
    verdicts: list[Verdict | None] = []
    if isinstance(principal, SessionPrincipal):
        verdicts.append(await services.shared_limiter.hit(STANDARD_LIMIT, principal.rate_key))
    elif isinstance(principal, ApiKeyPrincipal):
        verdicts.append(limiter.hit(DEVELOPER_LIMIT, principal.rate_key))
    for rule in route.limits:
        key = rule.key(call)
        if key is not None:
            verdicts.append(limiter.hit(rule.limit, key))
    counted = [v for v in verdicts if v is not None]
    if not counted:
        return None
    return min(counted, key=lambda v: v.remaining / v.limit.limit)


async def _read_body(request: web.Request) -> Any:
    if not request.body_exists:
        return {}
    if request.content_type != "application/json":
        raise UnsupportedMedia("Request bodies must be JSON (Content-Type: application/json)")
    raw = await request.read()
    if not raw.strip():
        return {}
    return parse_body(raw)


def _empty(raw: bytes) -> bool:
    """No body, or `{}`: what clients send to a route that takes nothing (a cancel, a freeze)."""
    text = raw.strip()
    return not text or text.replace(b" ", b"").replace(b"\n", b"") == b"{}"


def _query_dict(request: web.Request) -> dict[str, str]:
    query: dict[str, str] = {}
    for name, value in request.query.items():
        if name in query:
            raise BadRequest(f"Query parameter {name} is given more than once")
        query[name] = value
    return query


def endpoint(route: Route) -> Any:
    """The aiohttp handler for `route`."""

    async def handle(request: web.Request) -> web.StreamResponse:
        services = request.app[SERVICES]
        request_id: str = request[REQUEST_ID]
        principal: Principal | None = None
        try:
            principal = await _principal(route, request, services)
            if principal is not None and request[EXPLICIT_VERSION] is None:
                request[API_VERSION] = principal.api_version
            _authorize(route, principal)
            call = Call(request, services, route, request_id, principal)
            # A request passed on by another node was counted there.
            verdict = None if request.get(PASSED) else await _apply_limits(call)
            call.query = validate(route.query, _query_dict(request)) if route.query else {}
            # Pages for people keep whatever a shared link carries (?utm_source=...).
            if route.query is None and request.query and route.api:
                raise BadRequest("This route takes no query parameters")
            raw_body = await _read_body(request) if route.body is not None else None
            if route.body is not None:
                call.body = validate(route.body, raw_body)
            elif route.upload is None and request.body_exists and not _empty(await request.read()):
                raise BadRequest("This route takes no request body")
            try:
                if route.upload is not None:
                    # Raises ShardElsewhere before reading anything when another node owns
                    # the company, so the body can still be passed on.
                    call.upload = await route.upload(call)
                    call.body = raw_body = call.upload.fields
                response = await _run(call, raw_body)
            except ShardElsewhere as elsewhere:
                if call.upload is not None:
                    # The shard moved after the body was read: nothing left to pass on.
                    raise ShardMoved from elsewhere
                limit = services.settings.kyc_max_upload_bytes if route.upload else None
                response = await pass_on(services, request, elsewhere.shard, max_body=limit)
            finally:
                if call.upload is not None:
                    await call.upload.release()
            if verdict is not None:
                response.headers["RateLimit-Policy"] = verdict.limit.policy_header
                response.headers["RateLimit"] = verdict.header
        except Exception as exc:
            error = to_service_error(exc, request)
            response = error_response(error, request_id, request[API_VERSION])
        if isinstance(principal, ApiKeyPrincipal) and not request.get(PASSED):
            _log_key_use(services, principal, request, response.status)
        return response

    handle.__name__ = route.handler.__name__
    return handle


async def _run(call: Call, raw_body: Any) -> web.StreamResponse:
    route, request, services = call.route, call.request, call.services
    key = request.headers.get("Idempotency-Key")
    if key is not None and route.idempotent:
        checked = validate_key(key)
        return await services.deadlines.run(lambda: _run_with_key(call, checked, raw_body))
    reply = await services.deadlines.run(lambda: route.handler(call))
    return _render(reply, route, request)


async def _run_with_key(call: Call, key: str, raw_body: Any) -> web.StreamResponse:
    route, request = call.route, call.request
    if route.idempotency_scope is not None:
        company_id, namespace, mode = await route.idempotency_scope(call)
    else:
        assert call.principal is not None
        company_id, namespace, mode = call.principal.company_id, "", call.principal.mode
    digest = fingerprint(request.method, request.path, mode, raw_body, call.services.keyring)
    claim = new_claim(
        call.services, company_id, namespace + key, digest, call.request_id, request[API_VERSION]
    )

    async def run(claim: Claim) -> web.StreamResponse:
        call.idempotency = claim
        reply = await route.handler(call)
        return stored_response(claim) or _render(reply, route, request)

    return await run_idempotent(call.services, company_id, claim, run, carried=route.commits_key)


def _render(reply: Any, route: Route, request: web.Request) -> web.StreamResponse:
    if isinstance(reply, web.StreamResponse):
        reply.headers.setdefault("X-Request-Id", request[REQUEST_ID])
        return reply
    if isinstance(reply, Resource) and reply.status == 200 and route.status != 200:
        reply = Resource(reply.fields, route.status)
    assert isinstance(reply, Resource | Page | Aggregate)
    status, body = reply_body(reply, request[REQUEST_ID])
    return json_response(status, body, request[REQUEST_ID], request[API_VERSION])


def _log_key_use(
    services: Services, key: ApiKeyPrincipal, request: web.Request, status: int
) -> None:
    """Record the request in the key's log [5.2] and as its last use: buffered in memory and
    written within a second (mps.actors.key_usage), so it never slows a reply."""
    services.key_usage.record(
        key_id=key.key_id,
        company_id=key.company_id,
        method=request.method,
        path=request.path,
        status_code=status,
        ip=request.remote,
        request_id=request[REQUEST_ID],
    )
