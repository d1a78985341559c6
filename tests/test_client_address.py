"""The client's address behind a trusted balancer (mps.http.client_address, MPS_TRUSTED_PROXIES).

The test client connects from 127.0.0.1, so that is the balancer: trusted when the settings name
it, and then the addresses it writes into X-Forwarded-For (or Forwarded) are the clients'.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from mps.config import ConfigError, load_settings
from mps.http.access_log import BatchedAccessLog
from mps.http.client_address import resolve_client
from mps.http.keys import SERVICES
from tests.helpers import Member, create_payment, sign_up

# The balancer, as the test client's connections come from it.
BALANCER = (ipaddress.ip_network("127.0.0.1/32"),)
PROXIES = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8"))
# The development checkout limit (600 a minute per address) times this: 12.
SCALE = 0.02
CHECKOUT_LIMIT = 12


# --- the rule, on its own ---------------------------------------------------------------------


def test_resolved_client_is_the_right_most_untrusted_hop_when_the_peer_is_trusted() -> None:
    hops = ["198.51.100.1", "203.0.113.7", "10.0.0.2"]

    assert resolve_client("127.0.0.1", hops, PROXIES) == "203.0.113.7"


def test_resolved_client_ignores_the_header_when_the_peer_is_not_trusted() -> None:
    assert resolve_client("192.0.2.50", ["203.0.113.7"], PROXIES) == "192.0.2.50"
    assert resolve_client("127.0.0.1", ["203.0.113.7"], ()) == "127.0.0.1"


def test_resolved_client_is_the_left_most_hop_when_every_hop_is_trusted() -> None:
    assert resolve_client("127.0.0.1", ["10.0.0.9", "10.0.0.2"], PROXIES) == "10.0.0.9"


def test_resolved_client_stops_at_the_proxy_that_wrote_an_entry_that_is_no_address() -> None:
    hops = ["203.0.113.7", "not-an-address", "10.0.0.2"]

    assert resolve_client("127.0.0.1", hops, PROXIES) == "10.0.0.2"
    assert resolve_client("127.0.0.1", ["unknown"], PROXIES) == "127.0.0.1"


def test_resolved_client_reads_addresses_with_ports_brackets_and_quotes() -> None:
    assert resolve_client("127.0.0.1", ["203.0.113.7:4711"], PROXIES) == "203.0.113.7"
    assert resolve_client("127.0.0.1", ['"[2001:db8::7]:4711"'], PROXIES) == "2001:db8::7"
    assert resolve_client("::ffff:127.0.0.1", ["2001:db8::8"], PROXIES) == "2001:db8::8"


def test_trusted_proxies_setting_takes_addresses_and_networks(tmp_path: Path) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path), "MPS_TRUSTED_PROXIES": " 10.0.0.5, fd00::/8 ,"}

    settings = load_settings([], env)

    assert settings.trusted_proxies == (
        ipaddress.ip_network("10.0.0.5/32"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert settings.proxy_header == "x-forwarded-for"
    assert load_settings([], {"MPS_DATA_DIR": str(tmp_path)}).trusted_proxies == ()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MPS_TRUSTED_PROXIES", "balancer.internal"),
        ("MPS_TRUSTED_PROXIES", "10.0.0.1/8"),
        ("MPS_PROXY_HEADER", "X-Real-IP"),
    ],
)
def test_proxy_settings_are_refused_when_malformed(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), name: value})


# --- through the app --------------------------------------------------------------------------


async def _checkouts(
    client: TestClient[Any, Any], reference: str, headers: list[dict[str, str]]
) -> list[int]:
    statuses = []
    for header in headers:
        response = await client.post(f"/api/v1/checkout/{reference}/pay", json={}, headers=header)
        statuses.append(response.status)
    return statuses


async def _payment_on_a_node(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], **settings: Any
) -> tuple[TestClient[Any, Any], dict[str, Any]]:
    """A node of `settings` whose checkout limit is CHECKOUT_LIMIT a minute per address, and a
    payment waiting for checkout on it."""
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(rate_limit_scale=SCALE, **settings)
    )
    return client, await create_payment(client, await sign_up(client))


async def test_per_ip_limits_count_each_forwarded_client_apart_when_the_balancer_is_trusted(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node behind a trusted balancer, a checkout limit of 12 a minute per address
    client, payment = await _payment_on_a_node(aiohttp_client, make_app, trusted_proxies=BALANCER)
    shoppers = [{"X-Forwarded-For": f"198.51.100.{n}"} for n in range(1, 101)]

    # when 100 shoppers check out through the balancer, then one of them again and again
    statuses = await _checkouts(client, payment["reference"], shoppers)
    again = await _checkouts(client, payment["reference"], [shoppers[0]] * CHECKOUT_LIMIT)

    # then each shopper has a limit of their own, which still holds
    assert 429 not in statuses, statuses
    assert again[-1] == 429 and 429 not in again[:-1], again


async def test_forwarded_for_is_ignored_when_the_peer_is_not_a_trusted_proxy(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node that trusts no proxy (the default)
    client, payment = await _payment_on_a_node(aiohttp_client, make_app)

    # when one client claims a new address with each checkout
    claims = [{"X-Forwarded-For": f"198.51.100.{n}"} for n in range(1, CHECKOUT_LIMIT + 2)]
    statuses = await _checkouts(client, payment["reference"], claims)

    # then they are all counted as the address it connects from
    assert statuses[-1] == 429 and 429 not in statuses[:-1], statuses


async def test_a_spoofed_left_most_entry_is_not_taken_for_the_client(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node behind a trusted balancer
    client, payment = await _payment_on_a_node(aiohttp_client, make_app, trusted_proxies=BALANCER)

    # when one shopper sends an X-Forwarded-For of its own, a new address each time, which the
    # balancer appends the shopper's real address to
    spoofed = [
        {"X-Forwarded-For": f"198.51.100.{n}, 203.0.113.7"} for n in range(1, CHECKOUT_LIMIT + 2)
    ]
    statuses = await _checkouts(client, payment["reference"], spoofed)

    # then every checkout counts against the real address
    assert statuses[-1] == 429 and 429 not in statuses[:-1], statuses


async def _logged(access_log: type[BatchedAccessLog], request_id: str) -> str:
    """The access log's line for `request_id`: aiohttp logs after sending the answer."""
    deadline = time.monotonic() + 10
    while True:
        access_log.flush()
        stream = access_log.stream
        assert isinstance(stream, io.StringIO)
        lines = [line for line in stream.getvalue().splitlines() if line.endswith(request_id)]
        if lines:
            return lines[0]
        assert time.monotonic() < deadline, f"no access log line for {request_id}"
        await asyncio.sleep(0.01)


async def test_audit_key_log_and_access_log_record_the_forwarded_client(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node behind a trusted balancer, with its access log kept
    access_log = BatchedAccessLog.configured()
    access_log.stream = io.StringIO()
    server = TestServer(make_app(trusted_proxies=BALANCER))
    await server.start_server(access_log_class=access_log)
    client: TestClient[Any, Any] = await aiohttp_client(server)
    member: Member = await sign_up(client)
    created = await client.post(
        "/api/v1/merchant/api-keys",
        json={"name": "ci", "scopes": ["payments:read"]},
        headers=member.headers,
    )
    key = await created.json()
    via = {"X-Forwarded-For": "198.51.100.23"}

    # when the member changes a setting and the key is used, from a client behind the balancer
    changed = await client.patch(
        "/api/v1/merchant/settings",
        json={"payoutSchedule": "weekly"},
        headers={**member.headers, **via},
    )
    used = await client.get(
        "/api/v1/developer/ping", headers={"Authorization": f"Bearer {key['key']}", **via}
    )

    # then the audit trail, the key's log and the access log name the client, not the balancer
    assert changed.status == 200 and used.status == 403
    audit = await client.get(
        "/api/v1/team/audit", params={"action": "settings.updated"}, headers=member.headers
    )
    [entry] = (await audit.json())["data"]
    assert entry["ip"] == "198.51.100.23"
    await client.app[SERVICES].key_usage.flush()
    logs = await client.get(f"/api/v1/merchant/api-keys/{key['id']}/logs", headers=member.headers)
    assert [row["ip"] for row in (await logs.json())["data"]] == ["198.51.100.23"]
    line = await _logged(access_log, changed.headers["X-Request-Id"])
    assert "198.51.100.23" in line and "127.0.0.1" not in line, line


async def test_the_forwarded_header_is_read_instead_when_the_setting_names_it(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node behind a trusted balancer that writes RFC 7239 Forwarded
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(trusted_proxies=BALANCER, proxy_header="forwarded")
    )
    member = await sign_up(client)

    # when a change comes through it, with an X-Forwarded-For the balancer passed on untouched
    changed = await client.patch(
        "/api/v1/merchant/settings",
        json={"payoutSchedule": "weekly"},
        headers={
            **member.headers,
            "Forwarded": 'for="[2001:db8::7]:4711";proto=https',
            "X-Forwarded-For": "198.51.100.99",
        },
    )

    # then the client is the one Forwarded names
    assert changed.status == 200
    audit = await client.get(
        "/api/v1/team/audit", params={"action": "settings.updated"}, headers=member.headers
    )
    [entry] = (await audit.json())["data"]
    assert entry["ip"] == "2001:db8::7"
