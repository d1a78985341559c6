"""The aiohttp application: middlewares and the route table. No I/O happens here; resources are
opened by the cleanup context that `mps.bootstrap` attaches."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware

from mps.http import unparsed
from mps.http.admission import ADMISSION, Admission
from mps.http.client_address import client_address_middleware
from mps.http.forwarded import passed_middleware
from mps.http.metrics_listener import scrape_handler
from mps.http.middlewares import envelope_middleware
from mps.http.pipeline import MAX_BODY, endpoint
from mps.http.request_metrics import request_metrics
from mps.http.routing import Route
from mps.http.security import secure_response
from mps.http.shutdown import SHUTDOWN, Shutdown, close_when_stopping
from mps.metrics import Metrics

__all__ = ["create_app", "is_loopback_request"]

# A Host header: a name or IPv4 address, or a bracketed IPv6 address, then an optional port.
_HOST = re.compile(r"(?P<name>\[[^\[\]]+\]|[^:\[\]]+)(?::[0-9]{1,5})?")

# Served on this listener in development only, to loopback (mps.http.metrics_listener).
METRICS_PATH = "/metrics"


def create_app(
    routes: Iterable[Route],
    *,
    development: bool,
    metrics: Metrics | None = None,
    max_in_flight: int = 0,
) -> web.Application:
    """The app serving `routes`; with `metrics`, every request is counted into it, and in
    development `GET /metrics` answers loopback requests. Beyond `max_in_flight` requests at
    once (0: no bound) the next is answered 503 overloaded (mps.http.admission)."""
    chosen = [route for route in routes if development or not route.development_only]
    gated = frozenset(route.full_path for route in chosen if route.development_only)
    scrape = scrape_handler(metrics) if development and metrics is not None else None
    if scrape is not None:
        gated |= {METRICS_PATH}
    # Outermost, so the count includes the envelope's answers and aiohttp's own 404 and 405.
    middlewares: list[Middleware] = [request_metrics(metrics)] if metrics is not None else []
    # Before the envelope and the routes: a request another node passed here becomes the
    # client's own (its address and request id, limits counted once), and all of them read
    # those (mps.http.forwarded). The metrics read neither.
    middlewares.append(passed_middleware)
    # Then the client's address behind a trusted balancer, for the same readers (a passed
    # request's was resolved by its first node; mps.http.client_address).
    middlewares.append(client_address_middleware)
    middlewares.append(envelope_middleware)
    # Inside the envelope (the refusal's request id and version) and the passing (a passed
    # request was admitted by its first node); before the rest, so a refusal does no more work.
    exempt = frozenset(route.full_path for route in chosen if route.tag == "health")
    admission = Admission(max_in_flight, exempt | {METRICS_PATH})
    middlewares.append(admission.middleware())
    if gated:
        middlewares.append(_loopback_only(gated))
    # Requests aiohttp cannot parse are answered before the app sees them: in the envelope too.
    unparsed.install()
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY)
    app[ADMISSION] = admission
    # Set on SIGTERM (mps.serve); /health/ready answers 503 from then on.
    app[SHUTDOWN] = Shutdown()
    # Security headers on every response the app prepares (mps.http.security says why a signal).
    app.on_response_prepare.append(secure_response)
    app.on_response_prepare.append(close_when_stopping)
    for route in chosen:
        app.router.add_route(route.method, route.full_path, endpoint(route))
    if scrape is not None:
        app.router.add_get(METRICS_PATH, scrape)
    return app


def _loopback_only(paths: frozenset[str]) -> Middleware:
    """Development-only routes (the dev mailbox, the explorer) answer only requests that are
    loopback at both ends: the peer address and the Host header. A web page whose own name an
    attacker rebinds to 127.0.0.1 reaches us from loopback but still names its own host, so it
    gets 404. Anyone else gets the same 404 as for a route that does not exist, whatever the
    method, query or body: no 405 or 400 gives the route away. Runs inside the envelope
    middleware, which turns the 404 into the usual error body."""

    @web.middleware
    async def loopback_only(request: web.Request, handler: Handler) -> web.StreamResponse:
        resource = request.match_info.route.resource
        named = request.path in paths or (resource is not None and resource.canonical in paths)
        if named and not is_loopback_request(request):
            raise web.HTTPNotFound
        return await handler(request)

    return loopback_only


def is_loopback_request(request: web.Request) -> bool:
    """Whether the peer is a loopback address and the Host header names a loopback host
    (`localhost`, 127.0.0.0/8 or [::1], with or without a port)."""
    return _is_loopback_address(request.remote) and _is_loopback_host(
        request.headers.get(hdrs.HOST)
    )


def _is_loopback_address(text: str | None) -> bool:
    try:
        address = ipaddress.ip_address(text or "")
    except ValueError:
        return False
    # An IPv4 peer on a dual-stack socket shows as ::ffff:127.0.0.1.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _is_loopback_host(host: str | None) -> bool:
    match = _HOST.fullmatch(host or "")
    if match is None:
        return False
    name = match["name"]
    if name.lower() == "localhost":
        return True
    # Only literal addresses beyond that: a name (even one that resolves to 127.0.0.1) is what
    # a rebinding page sends.
    return _is_loopback_address(name.strip("[]"))
