"""Which requests the nginx example (deploy/nginx.conf) sends to a second node after the first
took them and answered nothing: only a POST with an Idempotency-Key to a route that honours
the key (the service runs such a key once, so a second send is answered with the first
answer). Any other request, whatever headers it carries, gets nginx's 502: sign-up and sign-in
codes ignore a key, and sent twice they would run twice.

The rule is checked twice: the example's map against every route the service declares
(`Route.idempotent`), so the two cannot drift apart; and a real nginx running the example, in
front of two fake nodes (small asyncio servers) whose first request is read whole and its
connection closed without an answer, as a node closing an idle kept-alive connection does
when nginx sends on it just then. The example's third node is an address nothing listens on.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from mps.http.routes import all_routes
from mps.http.routing import Route
from tests.helpers import free_port
from tests.test_balancer import DEPLOY, Nginx, require_nginx

API = "/api/v1"
# A value for each path parameter when a route's path is turned into a request's.
PARAMETER = re.compile(r"\{[^}/]+\}")


# --- The map against the service's routes -------------------------------------------------------


def _keyable_map() -> list[tuple[re.Pattern[str], bool]]:
    """deploy/nginx.conf's `map "$request_method $uri" $mps_keyable`, as (expression, value)
    pairs in their order; nginx takes the first expression that matches."""
    text = (DEPLOY / "nginx.conf").read_text()
    block = re.search(r'(?ms)^\s*map "\$request_method \$uri" \$mps_keyable \{\n(.*?)^\s*\}', text)
    assert block is not None, "deploy/nginx.conf has no $mps_keyable map"
    entries = []
    for line in block.group(1).splitlines():
        found = re.fullmatch(r'\s*"~(.+)"\s+(\S+);', line)
        if found is not None:
            entries.append((re.compile(found.group(1)), found.group(2) == "1"))
        else:
            assert re.fullmatch(r'\s*default\s+"";', line), f"unexpected map line: {line!r}"
    return entries


def _keyable(entries: list[tuple[re.Pattern[str], bool]], method: str, uri: str) -> bool:
    for expression, value in entries:
        if expression.search(f"{method} {uri}"):
            return value
    return False


def _routes() -> dict[tuple[str, str], Route]:
    """Every route of either mode, by method and path."""
    routes = [*all_routes(development=False), *all_routes(development=True)]
    return {(route.method, route.full_path): route for route in routes}


def test_the_nginx_keyed_map_matches_exactly_the_routes_that_honour_idempotency_key() -> None:
    # given: the example's map and every route the service declares
    entries = _keyable_map()
    routes = _routes()
    assert any(route.idempotent for route in routes.values())

    # then: each route's request is sent again after a drop exactly when the service honours
    # a key on it (a method a path has no route for is answered 405, running nothing)
    wrong = [
        f"{method} {path}: service {route.idempotent}, nginx {not route.idempotent}"
        for (method, path), route in routes.items()
        if _keyable(entries, method, PARAMETER.sub("p1", path)) != route.idempotent
    ]
    assert wrong == []


def test_the_nginx_keyed_map_leaves_out_an_invitation_answered_by_its_token() -> None:
    # given: the two routes that take no key although they are POSTs under /team/
    keyless = [route for route in _routes().values() if route.keyless]
    assert sorted(route.full_path.rsplit("/", 1)[1] for route in keyless) == ["accept", "reject"]

    # then: nginx does not send them twice, whatever the token looks like
    entries = _keyable_map()
    for route in keyless:
        for token in ("p1", "merchant", "a-b_c"):
            assert not _keyable(entries, "POST", route.full_path.replace("{token}", token))


# --- A real nginx in front of nodes that drop a request -----------------------------------------


@dataclass
class DroppingNodes:
    """Two fake nodes sharing one rule: the first `drops` requests either is sent are read
    whole and their connection closed with no answer; every later one is answered 201.
    `received` holds each request as (node, request line, its Idempotency-Key)."""

    drops: int
    received: list[tuple[int, str, str | None]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    _servers: list[asyncio.Server] = field(default_factory=list)

    async def start(self) -> None:
        for node in range(2):
            port = free_port()
            server = await asyncio.start_server(
                functools.partial(self._serve, node), "127.0.0.1", port
            )
            self._servers.append(server)
            self.ports.append(port)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()

    async def _serve(
        self, node: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:])
                if name
            }
            await reader.readexactly(int(headers.get("content-length", "0")))
            self.received.append((node, head.split("\r\n")[0], headers.get("idempotency-key")))
            if self.drops > 0:
                self.drops -= 1
                return
            body = b'{"id":"pay_1"}'
            writer.write(
                b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


@pytest.fixture
async def dropping(tmp_path: Path) -> AsyncIterator[tuple[DroppingNodes, str]]:
    """The fake nodes, dropping the first request, behind a fresh nginx (none of its nodes
    marked failed yet); nginx's URL."""
    require_nginx()
    nodes = DroppingNodes(drops=1)
    await nodes.start()
    try:
        # deploy/nginx.conf, unchanged but for its addresses, in front of the two fake nodes,
        # its third node an address nothing listens on
        addresses = [f"127.0.0.1:{port}" for port in (*nodes.ports, free_port())]
        with Nginx(tmp_path, addresses, []) as nginx:
            yield nodes, nginx.url
    finally:
        await nodes.stop()


async def _post(url: str, method: str = "POST", **headers: str) -> int:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.request(method, url, json={"amountMinor": "1250"}, headers=headers) as response,
    ):
        return response.status


HONOURED = [
    "/merchant/payments",
    "/team/invitations",
    "/developer/sandbox/payment",
    "/checkout/ref_1/pay",
]
IGNORED = [
    ("POST", "/auth/signup"),
    ("POST", "/auth/otp/request"),
    ("POST", "/auth/otp/verify"),
    ("POST", "/team/invitations/token/tok_1/accept"),
    ("PATCH", "/merchant/settings"),
]


@pytest.mark.parametrize("path", HONOURED)
async def test_nginx_sends_a_keyed_post_again_to_the_next_node_when_the_first_dropped_it(
    dropping: tuple[DroppingNodes, str], path: str
) -> None:
    nodes, url = dropping

    # when: a POST with a key, which the first node that takes it drops
    status = await _post(f"{url}{API}{path}", **{"Idempotency-Key": "order-1"})

    # then: the other node got the same request and its answer reached the client
    assert status == 201
    assert [(line, key) for _, line, key in nodes.received] == [
        (f"POST {API}{path} HTTP/1.1", "order-1")
    ] * 2
    assert sorted(node for node, _, _ in nodes.received) == [0, 1]


async def test_nginx_answers_an_unkeyed_post_dropped_by_a_node_502_without_sending_it_again(
    dropping: tuple[DroppingNodes, str],
) -> None:
    nodes, url = dropping

    # when: a create without a key, which the node drops
    status = await _post(f"{url}{API}/merchant/payments")

    # then: nginx did not send it twice
    assert status == 502
    assert len(nodes.received) == 1


@pytest.mark.parametrize(("method", "path"), IGNORED)
async def test_nginx_does_not_send_a_keyed_request_again_where_the_service_ignores_the_key(
    dropping: tuple[DroppingNodes, str], method: str, path: str
) -> None:
    nodes, url = dropping

    # when: a request carrying a key on a route that does not honour it, dropped by the node
    status = await _post(f"{url}{API}{path}", method, **{"Idempotency-Key": "signup-1"})

    # then: nginx answered 502 rather than run it a second time
    assert status == 502
    assert [key for _, _, key in nodes.received] == ["signup-1"]
