"""The client's address behind a balancer (`MPS_TRUSTED_PROXIES`, `MPS_PROXY_HEADER`).

A request that reaches the service through a balancer comes from the balancer's address; the
client's is in a header the balancer adds, `X-Forwarded-For` (HAProxy's `option forwardfor`,
nginx's `$proxy_add_x_forwarded_for`) or `Forwarded: for=` (RFC 7239). Anyone can send those
headers, so they are believed only when the connection comes from a proxy named in
`MPS_TRUSTED_PROXIES`, and only as far as trusted proxies vouch for them: a proxy appends the
address it received the request from to whatever the client sent, so the list is read from the
right, and the client is the first address that is not a trusted proxy. An entry left of it was
written by the client (or by proxies we know nothing of) and could say anything. When every hop
is trusted, the left-most is the client; an entry that is not an address ends the walk at the
trusted proxy that wrote it.

Only one header is read, the one `MPS_PROXY_HEADER` names: a balancer rewrites or appends to the
header it is configured for and passes the other one on from the client untouched, so reading
both would let a client write its own address.

`client_address_middleware` runs early in the chain (mps.http.app), after the passing of
requests between nodes (a passed request carries the address its first node resolved, and the
client's own headers, which must not be read a second time) and before everything that reads
the address: the route limits, the audit trail, the key log and the passing itself all read
`request.remote` from the clone it hands on (aiohttp's way to change `remote`, as in
mps.http.forwarded). The access log reads the request aiohttp made, so it reads the address
through `client_address`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler

from mps.config import Network
from mps.http.forwarded import passed_client
from mps.http.keys import PASSED, SERVICES

__all__ = ["client_address", "client_address_middleware", "resolve_client"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The client address a trusted proxy named for this request.
_CLIENT = web.RequestKey("client_address", str)


@web.middleware
async def client_address_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    services = request.app.get(SERVICES)
    trusted = services.settings.trusted_proxies if services is not None else ()
    # Off by default, and a passed request's address was resolved by the node it reached first.
    if not trusted or request.get(PASSED):
        return await handler(request)
    header = services.settings.proxy_header if services is not None else ""
    if header == "forwarded":
        hops = [hop.get("for", "") for hop in request.forwarded]
    else:
        hops = _split(request.headers.getall(hdrs.X_FORWARDED_FOR, ()))
    client = resolve_client(request.remote, hops, trusted)
    if client is None or client == request.remote:
        return await handler(request)
    # Set before cloning: the clone copies it, and the access log reads the original.
    request[_CLIENT] = client
    resolved = request.clone(remote=client)
    try:
        return await handler(resolved)
    finally:
        # What the app set on the clone (the request id, a page's nonce) is read from the
        # original too: aiohttp prepares the response and logs the request with the one it made.
        request.update(resolved)


def resolve_client(peer: str | None, hops: Iterable[str], trusted: Iterable[Network]) -> str | None:
    """The client's address: `peer` unless it is a trusted proxy, else the right-most of
    `hops` (the header's entries, left to right) that is not one. None when `peer` is not an
    address (a Unix socket)."""
    networks = tuple(trusted)
    client = _address(peer or "")
    if client is None or not _is_trusted(client, networks):
        return peer
    for hop in reversed(list(hops)):
        address = _address(hop)
        if address is None:
            # Garbage (or "unknown", or an obfuscated name) where a trusted proxy should have
            # written an address: believe nothing left of it; the client is the proxy that wrote it.
            break
        client = address
        if not _is_trusted(address, networks):
            break
    return str(client)


def client_address(request: web.BaseRequest) -> str | None:
    """The client's address for a request as aiohttp made it (the access log's): the one its
    first node saw for a passed request, the one a trusted proxy named, else the peer."""
    return passed_client(request) or request.get(_CLIENT) or request.remote


def _split(values: Iterable[str]) -> list[str]:
    # Several X-Forwarded-For headers are one list, in order (RFC 9110, section 5.3).
    return [item.strip() for value in values for item in value.split(",")]


def _address(text: str) -> Address | None:
    """An address as proxies write it: bare, or with a port (`192.0.2.1:4711`,
    `[2001:db8::1]:4711`), possibly quoted."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # An IPv4 peer on a dual-stack socket shows as ::ffff:10.0.0.1.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_trusted(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address in network for network in networks)
