"""The webhook SSRF guard (mps.webhooks.targets): which addresses are public, the registration
check of a URL, resolution, and the aiohttp resolver refusing a real loopback server.

Nothing here leaves loopback: the only names resolved are `localhost` and names a fake
resolver answers."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestServer

from mps.webhooks.targets import (
    GuardedResolver,
    UnsafeTarget,
    check_url,
    is_public,
    resolve_public,
)

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]

NOT_PUBLIC = [
    "127.0.0.1",
    "127.255.255.254",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "100.127.255.254",
    "0.0.0.0",
    "224.0.0.1",  # multicast
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "192.0.2.1",  # documentation
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2001:db8::1",  # documentation
    "not an address",
    "localhost",
]

PUBLIC = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:93.184.216.34",
    "2002:5db8:d822::1",  # 6to4 of 93.184.216.34
    "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34
]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_is_public_is_false_when_the_address_is_not_routable_from_the_internet(
    address: str,
) -> None:
    # when / then
    assert not is_public(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_is_public_is_true_when_the_address_is_routable_from_the_internet(address: str) -> None:
    # when / then
    assert is_public(address)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.0.10:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[fc00::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://127.1/",  # short IPv4 forms the C library accepts
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://api.localhost/",
    ],
)
def test_check_url_refuses_the_url_when_its_host_is_not_public(url: str) -> None:
    # when / then
    with pytest.raises(UnsafeTarget, match="must"):
        check_url(url, allow_private=False, require_https=False)


def test_check_url_lets_loopback_through_when_private_targets_are_allowed() -> None:
    # when
    checked = check_url("http://127.0.0.1:8080/hook", allow_private=True, require_https=False)

    # then
    assert checked == "http://127.0.0.1:8080/hook"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("javascript:alert(1)", "http or https"),
        ("//example.com/hook", "http or https"),
        ("example.com/hook", "http or https"),
        ("http://", "host"),
        ("http:///path", "host"),
        ("https://user:pass@example.com/", "user name or password"),
        ("https://user@example.com/", "user name or password"),
        ("https://@example.com/", "user name or password"),
        ("https://example.com:0/", "port"),
        ("https://example.com:65536/", "port"),
        ("https://example.com:99999/", "port"),
        ("https://example.com:http/", "port"),
        ("https://example.com/a b", "spaces"),
        ("https://example.com/\nx", "spaces"),
        (" https://example.com/", "spaces"),
        ("https://example.com/#frag", "fragment"),
        ("https://example.com\\@127.0.0.1/", "valid URL"),
        ("https://example.com/" + "a" * 2048, "2048"),
    ],
)
def test_check_url_raises_a_clear_message_when_the_url_is_unacceptable(
    url: str, message: str
) -> None:
    # when / then
    with pytest.raises(UnsafeTarget, match=message):
        check_url(url, allow_private=True, require_https=False)


def test_check_url_refuses_http_when_https_is_required() -> None:
    # when / then
    with pytest.raises(UnsafeTarget, match="https URL"):
        check_url("http://example.com/hook", allow_private=False, require_https=True)
    assert (
        check_url("https://example.com/hook", allow_private=False, require_https=True)
        == "https://example.com/hook"
    )


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("HTTPS://Example.COM:443", "https://example.com/"),
        ("https://example.com:8443/hooks?x=1", "https://example.com:8443/hooks?x=1"),
        ("http://example.com:80/a/../b", "http://example.com/b"),
        ("https://bücher.example/hook", "https://xn--bcher-kva.example/hook"),
        ("https://[2606:4700::1111]:8443/", "https://[2606:4700::1111]:8443/"),
        ("https://93.184.216.34/hook", "https://93.184.216.34/hook"),
    ],
)
def test_check_url_returns_the_url_normalised_when_it_is_acceptable(
    url: str, normalised: str
) -> None:
    # when
    checked = check_url(url, allow_private=False, require_https=False)

    # then
    assert checked == normalised


def test_check_url_accepts_the_longest_url_when_it_is_exactly_2048_characters() -> None:
    # given
    url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))

    # when / then
    assert check_url(url, allow_private=False, require_https=True) == url


def test_unsafe_target_is_a_value_error_and_an_os_error_when_raised() -> None:
    # when
    error = UnsafeTarget("must be an https URL")

    # then
    assert isinstance(error, ValueError)
    assert isinstance(error, OSError)
    assert str(error) == "must be an https URL"


async def test_resolve_public_raises_when_the_name_resolves_to_loopback() -> None:
    # when / then
    with pytest.raises(UnsafeTarget, match="localhost resolves to"):
        await resolve_public("localhost", 80, allow_private=False)


async def test_resolve_public_returns_the_addresses_when_private_targets_are_allowed() -> None:
    # when
    addresses = await resolve_public("localhost", 80, allow_private=True)

    # then
    assert "127.0.0.1" in addresses
    assert len(addresses) == len(set(addresses))


class _FixedResolver(AbstractResolver):
    """Answers every name with the same addresses, as a rebinding DNS server might."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in self.addresses
        ]

    async def close(self) -> None:
        self.closed = True


async def test_guarded_resolver_refuses_the_name_when_one_of_its_addresses_is_private() -> None:
    # given: a name that answers a public address and the metadata endpoint
    guarded = GuardedResolver(
        allow_private=False, resolver=_FixedResolver("93.184.216.34", "169.254.169.254")
    )

    # when
    with pytest.raises(UnsafeTarget, match=r"hooks\.example resolves to a private") as raised:
        await guarded.resolve("hooks.example", 443)

    # then: the merchant is told which of their hosts, never what it resolved to
    assert "169.254" not in str(raised.value)


async def test_guarded_resolver_returns_the_answer_when_every_address_is_public() -> None:
    # given
    inner = _FixedResolver("93.184.216.34", "2606:4700::1111")
    guarded = GuardedResolver(allow_private=False, resolver=inner)

    # when
    results = await guarded.resolve("hooks.example", 443)
    await guarded.close()

    # then
    assert [r["host"] for r in results] == ["93.184.216.34", "2606:4700::1111"]
    assert inner.closed


async def _hello(request: web.Request) -> web.Response:
    return web.Response(text="delivered")


@pytest.fixture
async def loopback_url(aiohttp_server: ServerFactory) -> str:
    """The address, by name, of a real receiver on loopback that answers "delivered"."""
    app = web.Application()
    app.router.add_get("/", _hello)
    server = await aiohttp_server(app)
    return f"http://localhost:{server.port}/"


async def test_guarded_resolver_refuses_a_real_request_when_the_name_resolves_to_loopback(
    loopback_url: str,
) -> None:
    # given
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private=False))

    # when / then
    async with aiohttp.ClientSession(connector=connector) as session:
        with pytest.raises(aiohttp.ClientConnectorError) as raised:
            await session.get(loopback_url)
    assert isinstance(raised.value.os_error, UnsafeTarget)
    assert "localhost resolves to" in str(raised.value)


async def test_guarded_resolver_lets_a_real_request_through_when_private_targets_are_allowed(
    loopback_url: str,
) -> None:
    # given
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private=True))

    # when
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(loopback_url) as response,
    ):
        text = await response.text()

    # then
    assert response.status == 200
    assert text == "delivered"
