"""Where webhooks may be sent: the guard against server-side request forgery.

A webhook URL is chosen by a merchant and requested by us from inside our network, so without
a guard it could point at our own loopback services, the cloud metadata endpoint
(169.254.169.254) or anything else on a private network. Two checks, at two times:

- `check_url` at registration: the URL's shape, and its host when that is an IP literal. It
  resolves nothing, so a name that points somewhere private passes here;
- `GuardedResolver` at delivery, inside aiohttp's connector: every address a name resolves to
  must be public, checked on the very answer the connection then uses, so a name that resolved
  to a public address at registration and to a private one now (DNS rebinding) is refused.

aiohttp does not ask the resolver about IP literals, so a delivery to an IP-literal URL is
guarded only by `check_url`; deliveries must therefore not follow redirects (a redirect could
name any address). `allow_private` turns both checks off for development and tests, which
deliver to receivers on loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket

from aiohttp import DefaultResolver
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

__all__ = ["GuardedResolver", "UnsafeTarget", "check_url", "is_public", "resolve_public"]

MAX_URL_LENGTH = 2048

# Shared address space for carrier-grade NAT: not private in RFC 1918's sense, so not
# `is_private` on every Python, but not reachable from the internet either.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
# NAT64's well-known prefix: the last 32 bits are an IPv4 address a NAT64 gateway will reach.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Where the authority of an absolute URL ends.
_AUTHORITY_END = re.compile(r"[/?#\\]")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeTarget(ValueError, OSError):
    """A webhook target we refuse to request; the message is fit to show to the merchant.

    A ValueError to validation, and an OSError to aiohttp, which turns an OSError raised by a
    resolver into `ClientConnectorDNSError` (a `ClientError`) like any failed lookup.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.strerror = message  # what aiohttp's ClientConnectorError shows


def is_public(address: str) -> bool:
    """Whether `address` (an IP address, v4 or v6) is one the internet can route to.

    Not private, loopback, link-local, multicast, reserved, unspecified or shared (100.64/10),
    nor an IPv6 form that carries such an IPv4 address (IPv4-mapped, 6to4, NAT64). Anything that
    is not an IP address is not public.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return _public(ip)


def _public(ip: Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            # The packets go to the IPv4 address inside, so that is the one to judge.
            return _public(embedded)
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return False
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local)  # old fec0::/10
    )


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


def check_url(url: str, *, allow_private: bool, require_https: bool) -> str:
    """Validate a webhook URL as it is registered; return it normalised.

    Normalised: scheme and host in lower case, the host in IDNA (punycode), a default port
    dropped, an empty path made `/`. `require_https` is for production, where a delivery's body
    and signature must not cross the internet in clear.
    """
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeTarget(f"must be at most {MAX_URL_LENGTH} characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise UnsafeTarget("must not contain spaces or control characters")
    try:
        parsed = URL(url)
        scheme = parsed.scheme
        host = parsed.raw_host
        port = parsed.explicit_port
    except ValueError as error:
        if "port" in str(error).lower():
            raise UnsafeTarget("must have a port from 1 to 65535") from None
        raise UnsafeTarget("must be a valid URL") from None
    if scheme not in ("http", "https"):
        raise UnsafeTarget("must be an http or https URL")
    if require_https and scheme != "https":
        raise UnsafeTarget("must be an https URL")
    if not host:
        raise UnsafeTarget("must have a host")
    if host.endswith("."):
        # `example.com.` is `example.com` to DNS, but another origin to TLS, to our checks and
        # to the receiver's virtual hosts: write the name one way.
        raise UnsafeTarget("must not end its host name with a dot")
    authority = _AUTHORITY_END.split(url.partition("//")[2], maxsplit=1)[0]
    if "@" in authority:
        raise UnsafeTarget("must not contain a user name or password")
    if port is not None and not 1 <= port <= 65535:
        raise UnsafeTarget("must have a port from 1 to 65535")
    if parsed.raw_fragment:
        raise UnsafeTarget("must not have a fragment (#...)")
    if not allow_private:
        _check_host(host)
    return str(parsed.origin()) + parsed.raw_path_qs


def _check_host(host: str) -> None:
    """Refuse a host that is certainly not public without resolving it."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        if not _public(ip):
            raise UnsafeTarget("must not point to a private, loopback or reserved address")
        return
    try:
        socket.inet_aton(host)
    except OSError:
        pass
    else:
        # 127.1, 2130706433, 0x7f.0.0.1: the C library reads these as IPv4 addresses.
        raise UnsafeTarget("must write an IPv4 address as four decimal numbers (a.b.c.d)")
    if host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
        raise UnsafeTarget("must not point to a private, loopback or reserved address")


async def resolve_public(host: str, port: int, *, allow_private: bool) -> list[str]:
    """The addresses `host` resolves to, refusing them all if any one is not public.

    All, not just the bad ones: a name with both public and private addresses is either
    misconfigured or an attempt, and the connection could be made to any of them. A failed
    lookup raises `socket.gaierror` as it is.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not allow_private:
        _refuse_private(host, addresses)
    return addresses


def _refuse_private(host: str, addresses: list[str]) -> None:
    # The message reaches the merchant (a delivery's error): it names the merchant's own host
    # but never what it resolved to, which would map our internal network for them.
    if any(not is_public(a) for a in addresses):
        raise UnsafeTarget(f"{host} resolves to a private, loopback or reserved address")


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing names that resolve to any non-public address.

    Give it to the connector that delivers webhooks:
    `aiohttp.TCPConnector(resolver=GuardedResolver(allow_private=False))`. The check runs on
    the answer the connection is then made to, so there is no window for DNS rebinding between
    checking and connecting. Must be made inside the running event loop (as aiohttp's own).
    """

    def __init__(self, *, allow_private: bool, resolver: AbstractResolver | None = None) -> None:
        self._resolver = resolver if resolver is not None else DefaultResolver()
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._resolver.resolve(host, port, family)
        if not self._allow_private:
            _refuse_private(host, [r["host"] for r in results])
        return results

    async def close(self) -> None:
        await self._resolver.close()
