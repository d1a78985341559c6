"""One declaration per route: path, credential, scope, schemas, limits.

Request validation, authorisation, rate limiting and the OpenAPI document all read the same
`Route`, so they cannot disagree.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from mps.auth.principals import ApiKeyPrincipal, Principal, SessionPrincipal
from mps.domain.audit import AuditContext
from mps.errors import NotFound, Unauthenticated
from mps.http.replies import Reply
from mps.http.schema import Obj, Schema
from mps.http.uploads import Upload
from mps.limits import Limit

if TYPE_CHECKING:
    from mps.http.idempotency import Claim
    from mps.services import Services

__all__ = ["API_PREFIX", "Auth", "Call", "Handler", "LimitRule", "Route", "RouteFamily"]

API_PREFIX = "/api/v1"

_P = TypeVar("_P", bound=Principal)


class Auth(enum.Enum):
    PUBLIC = "public"
    # Public, but a valid dashboard session, when sent, is recognised (and any other
    # credential ignored): the versions route then names the company's pinned version.
    OPTIONAL_SESSION = "optional_session"
    SESSION = "session"
    API_KEY = "api_key"


@dataclass
class Call:
    """Everything a handler gets: the validated input and who is asking."""

    request: web.Request
    services: Services
    route: Route
    request_id: str
    principal: Principal | None
    body: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    # Set while the request runs under an Idempotency-Key (mps.http.idempotency).
    idempotency: Claim | None = None
    # What a multipart route's upload step stored (mps.http.uploads).
    upload: Upload | None = None

    def idempotent(self, present: Callable[[Any], Reply]) -> Claim | None:
        """The claim to hand to the command that commits this request's change, told how the
        command's result is presented to the client; None when the request has no key."""
        if self.idempotency is not None:
            self.idempotency.present = present
        return self.idempotency

    def _principal_as(self, kind: type[_P], message: str, code: str) -> _P:
        """The principal when it is a `kind`; 401 with `message` and `code` otherwise."""
        if not isinstance(self.principal, kind):
            raise Unauthenticated(message, code=code)
        return self.principal

    @property
    def session(self) -> SessionPrincipal:
        return self._principal_as(
            SessionPrincipal, "A dashboard session is required", "session_required"
        )

    @property
    def merchant(self) -> Principal:
        """Who acts for the company on a merchant route: the session, or a secret key on a
        route open to keys (the pipeline let no other key through)."""
        principal = self.principal
        if isinstance(principal, ApiKeyPrincipal) and self.route.key_access:
            return principal
        return self.session

    @property
    def api_key(self) -> ApiKeyPrincipal:
        return self._principal_as(ApiKeyPrincipal, "An API key is required", "api_key_required")

    def param(self, name: str) -> str:
        """A path parameter. Nothing stored holds a NUL character (PostgreSQL text cannot), so a
        value with one names nothing: 404 before it reaches a query."""
        value = self.request.match_info[name]
        if "\x00" in value:
            raise NotFound(f"No such {name}")
        return value

    @property
    def ip(self) -> str:
        return self.request.remote or "unknown"

    @property
    def origin(self) -> tuple[str, str]:
        """Where the request came from, for the audit trail of a session it opens or changes:
        the client's address and the request's id."""
        return (self.ip, self.request_id)

    def audit(self) -> AuditContext:
        """Who makes this request's change, from where, for the audit trail."""
        principal = self.principal
        actor: tuple[str, str | None]
        if isinstance(principal, SessionPrincipal):
            actor = ("user", principal.user_id)
        elif isinstance(principal, ApiKeyPrincipal):
            actor = ("api_key", principal.key_id)
        else:
            actor = ("anonymous", None)
        return AuditContext(actor[0], actor[1], self.ip, self.request_id)


Handler = Callable[[Call], Awaitable[Reply | web.StreamResponse]]
# For routes without a principal (checkout): the company that serializes the key, the namespace
# the key lives in, and the mode that is part of the request.
IdempotencyScope = Callable[[Call], Awaitable[tuple[str, str, str]]]
_IDEMPOTENT_PREFIXES = ("/merchant/", "/team/", "/developer/sandbox/")


@dataclass(frozen=True)
class LimitRule:
    """A route-specific limit; `key` picks what is counted (an IP, a loginId, a user)."""

    limit: Limit
    key: Callable[[Call], str | None]

    @classmethod
    def per_user(cls, limit: Limit) -> LimitRule:
        """Counted per signed-in user, on a session-only route."""
        return cls(limit, lambda call: call.session.user_id)

    @classmethod
    def per_actor(cls, limit: Limit) -> LimitRule:
        """Counted per whoever acts for the company: the user, or the key on a route open to
        keys (`call.merchant`)."""
        return cls(limit, lambda call: call.merchant.actor_id)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    auth: Auth = Auth.SESSION
    # The one scope the route needs; None on a session route means any signed-in member.
    scope: str | None = None
    # A session route a secret key may call too, once its company turns on apiKeyAccess for
    # the key's mode (decisions 2, "Server-to-server keys"); handlers read `call.merchant`.
    key_access: bool = False
    body: Obj | None = None
    query: Obj | None = None
    response: Schema | None = None
    status: int = 200
    # Other success answers the route may give, by status (a payout above its approval
    # threshold: 202 with the approval request made instead).
    also: tuple[tuple[int, Schema], ...] = ()
    limits: tuple[LimitRule, ...] = ()
    owner_only: bool = False
    # JSON routes live under /api/v1; pages for people (checkout, invitations) do not.
    api: bool = True
    # Routes the OpenAPI document leaves out (the dev mailbox, the explorer).
    internal: bool = False
    development_only: bool = False
    idempotency_scope: IdempotencyScope | None = None
    # The route's only effect is the unit its command commits, with the key's record in it (no
    # call to a processor, no mail, before that commit). Such a route runs a keyed request
    # without looking for a stored response first: a duplicate is refused by the key's row at
    # commit and replays what is stored, and a failed run looks before answering its error.
    # Saves a read per keyed request, and carries the key's claim inside its command (one hop
    # to its actor); wrong for a route with effects before its commit.
    commits_key: bool = False
    # A multipart route (decisions 12): streams the request's parts to storage before the
    # handler runs and returns what arrived (mps.http.uploads); `form` describes the parts.
    upload: Callable[[Call], Awaitable[Upload]] | None = None
    form: Obj | None = None
    # The media type of a success that is not JSON (a file download).
    produces: str | None = None
    # Idempotency-Key is not honoured: a public route whose answer to a repeat is already the
    # same (accepting an invitation twice is a 409 the second time) and that has no company or
    # credential to keep keys under.
    keyless: bool = False

    @property
    def idempotent(self) -> bool:
        """Whether the route honours Idempotency-Key (decisions 16)."""
        if self.keyless:
            return False
        if self.idempotency_scope is not None:
            return True
        return self.method == "POST" and self.path.startswith(_IDEMPOTENT_PREFIXES)

    @property
    def full_path(self) -> str:
        return f"{API_PREFIX}{self.path}" if self.api else self.path


@dataclass(frozen=True)
class RouteFamily:
    """The routes of one resource, declared under its OpenAPI tag. Reading it (GET) needs the
    `read` scope and changing it the `write` scope, unless a route names its own `scope`."""

    tag: str
    read: str | None = None
    write: str | None = None

    def route(
        self, method: str, path: str, handler: Handler, summary: str, **options: Any
    ) -> Route:
        """A `Route` of this family; `options` are the `Route` fields after `tag`."""
        options.setdefault("scope", self.read if method == "GET" else self.write)
        return Route(method, path, handler, summary, self.tag, **options)

    def get(self, path: str, handler: Handler, summary: str, **options: Any) -> Route:
        return self.route("GET", path, handler, summary, **options)

    def post(self, path: str, handler: Handler, summary: str, **options: Any) -> Route:
        return self.route("POST", path, handler, summary, **options)

    def patch(self, path: str, handler: Handler, summary: str, **options: Any) -> Route:
        return self.route("PATCH", path, handler, summary, **options)

    def put(self, path: str, handler: Handler, summary: str, **options: Any) -> Route:
        return self.route("PUT", path, handler, summary, **options)

    def delete(self, path: str, handler: Handler, summary: str, **options: Any) -> Route:
        return self.route("DELETE", path, handler, summary, **options)
