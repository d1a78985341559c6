"""Small steps many tests take: signing up through the real flow, reading the dev mailbox."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient


@dataclass
class Member:
    token: str
    company_id: str
    user_id: str
    email: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def production_env(**extra: str) -> dict[str, str]:
    """The environment of a production node with every required setting given explicitly."""
    return {
        "MPS_MODE": "production",
        "MPS_DATABASE_URL": "postgresql://db/x",
        "MPS_BROKER_URL": "amqp://mq",
        "MPS_SESSION_SECRET": "s" * 40,
        "MPS_ENCRYPTION_KEY": "e" * 40,
        "MPS_SMTP_URL": "smtp://mail.example.com:587",
        **extra,
    }


async def latest_code(client: TestClient[Any, Any], email: str) -> str:
    response = await client.get("/api/v1/dev/mailbox", params={"to": email})
    assert response.status == 200
    messages = (await response.json())["data"]
    assert messages, f"no mail for {email}"
    code: str = messages[0]["otp"]
    return code


async def sign_up(
    client: TestClient[Any, Any], email: str = "owner@example.com", company: str = "Acme Ltd"
) -> Member:
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": company, "email": email}
    )
    assert response.status == 201, await response.text()
    signup = await response.json()
    code = await latest_code(client, email)
    response = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": signup["loginId"], "code": code}
    )
    assert response.status == 200, await response.text()
    session = await response.json()
    return Member(session["sessionToken"], signup["companyId"], session["user"]["id"], email)


async def two_companies(client: TestClient[Any, Any]) -> tuple[Member, Member]:
    """The owners of two unrelated companies, signed up through the real flow: ours
    (owner@example.com, "Acme Ltd") and a stranger's (stranger@example.com, "Stranger Co")."""
    owner = await sign_up(client)
    return owner, await sign_up(client, "stranger@example.com", "Stranger Co")


async def post_as(
    client: TestClient[Any, Any], member: Member, path: str, body: Any
) -> ClientResponse:
    """POST `body` as JSON to `path` in `member`'s session; the response, unchecked."""
    return await client.post(path, json=body, headers=member.headers)


async def assert_replayed(first: ClientResponse, again: ClientResponse, status: int = 201) -> None:
    """`again` replays `first` under the same Idempotency-Key: the same status (`status`) and
    the same bytes, marked as a replay."""
    assert first.status == again.status == status, await first.text()
    assert await first.read() == await again.read()
    assert again.headers.get("Idempotent-Replayed") == "true"


async def read_as(client: TestClient[Any, Any], member: Member, path: str, **params: str) -> Any:
    """GET `path` in `member`'s session; the JSON it answered, which must come with 200."""
    return await answered(await client.get(path, params=params, headers=member.headers), 200)


async def read_object(
    client: TestClient[Any, Any], member: Member, kind: str, object_id: str
) -> dict[str, Any]:
    """The merchant's object of `kind` ("payments", "refunds", "payouts", "invoices"...) with
    that id, as `member` reads it; it must be found."""
    found: dict[str, Any] = await read_as(client, member, f"/api/v1/merchant/{kind}/{object_id}")
    return found


async def event_types(client: TestClient[Any, Any], member: Member) -> list[str]:
    """The types of the company's events on the first page of their list, newest first."""
    return [e["type"] for e in (await read_as(client, member, "/api/v1/merchant/events"))["data"]]


async def audit_actions(client: TestClient[Any, Any], member: Member) -> list[str]:
    """The actions on the first page of the company's audit trail, newest first."""
    return [e["action"] for e in (await read_as(client, member, "/api/v1/team/audit"))["data"]]


async def answered(response: ClientResponse, status: int = 201) -> Any:
    """The JSON body of `response`, which must have answered `status` (else the test fails
    with the text it answered instead)."""
    assert response.status == status, await response.text()
    return await response.json()


async def assert_refused(
    response: ClientResponse, status: int, code: str | None = None
) -> dict[str, Any]:
    """`response` is refused with `status` (and `code`, if given) in the contract's error
    envelope; its body, for what else the test checks."""
    body: dict[str, Any] = await response.json()
    assert response.status == status, body
    assert_envelope(body, status, code)
    return body


async def created(
    client: TestClient[Any, Any], member: Member, path: str, body: Any, status: int = 201
) -> Any:
    """POST `body` as JSON to `path` in `member`'s session; the JSON it answered, which must
    come with `status`."""
    return await answered(await post_as(client, member, path, body), status)


def assert_envelope(body: dict[str, Any], status: int, code: str | None = None) -> None:
    assert body["ok"] is False
    assert body["statusCode"] == status
    assert isinstance(body["message"], str) and body["message"]
    assert body["requestId"].startswith("req_")
    assert body["timestamp"].endswith("Z")
    if code is not None:
        assert body["code"] == code, body


async def post_payment(
    client: TestClient[Any, Any],
    member: Member,
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> ClientResponse:
    """POST a payment of `fields` (2500 USD unless they say otherwise) as `member`, with
    `headers` besides the session's; the response, unchecked."""
    body = {"amountMinor": "2500", "currency": "USD", **fields}
    return await client.post(
        "/api/v1/merchant/payments", json=body, headers={**member.headers, **(headers or {})}
    )


async def create_payment(
    client: TestClient[Any, Any],
    member: Member,
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A new payment of `fields` (as `post_payment`), which must be created."""
    payment: dict[str, Any] = await answered(await post_payment(client, member, headers, **fields))
    return payment


async def pending_payment(
    client: TestClient[Any, Any], **fields: Any
) -> tuple[Member, dict[str, Any]]:
    """The owner of a new company, and a PENDING payment of theirs (2500 USD unless `fields`
    say otherwise)."""
    member = await sign_up(client)
    return member, await create_payment(client, member, **fields)


async def create_invoice(
    client: TestClient[Any, Any], member: Member, **fields: Any
) -> dict[str, Any]:
    """A new invoice of `fields` (for 500 USD to buyer@example.com unless they say otherwise,
    or for their `items`), which must be created; sent, as every new invoice is."""
    body = {"currency": "USD", "customerEmail": "buyer@example.com", **fields}
    if "items" not in body:
        body.setdefault("amountMinor", "500")
    invoice: dict[str, Any] = await created(client, member, "/api/v1/merchant/invoices", body)
    return invoice


TEST_CARD = {"number": "4242424242424242", "expMonth": 12, "expYear": 2099, "cvc": "123"}


async def pay(
    client: TestClient[Any, Any], reference: str, number: str = "4242424242424242", **extra: Any
) -> Any:
    return await client.post(
        f"/api/v1/checkout/{reference}/pay", json={"card": {**TEST_CARD, "number": number}, **extra}
    )


# Every port `free_port` has handed out in this process. A port is free again as soon as the
# probe closes it, so the kernel may offer it twice before the first server binds it: two nodes
# of one cluster were once given the same port, and the second's readiness check was answered
# by the first.
_HANDED_OUT: set[int] = set()


def _xdist_worker() -> tuple[int, int]:
    """This process's index among pytest-xdist's workers and how many there are; (0, 1) in a
    run of one process."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    return index, count


def free_port() -> int:
    """A loopback port nothing listens on right now and no other caller in this process was
    given, for a server a test starts itself (`free_ports`)."""
    return free_ports(1)


def free_ports(count: int) -> int:
    """The first of `count` consecutive loopback ports nothing listens on right now, none of
    them given before in this process.

    Below the ephemeral range, which the kernel hands to outgoing connections: a port from it
    can be taken by one of the many connections a test's servers open (to Postgres, RabbitMQ,
    each other) between the moment it is chosen and the moment a server binds it. Under
    pytest-xdist each worker takes its own slice of that range, so two workers, which cannot
    see each other's ports, are never given the same one."""
    index, workers = _xdist_worker()
    lowest_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    share = (lowest_ephemeral - _LOWEST) // workers
    low = _LOWEST + index * share
    while True:
        first = random.randrange(low, low + share - count)
        ports = range(first, first + count)
        if _HANDED_OUT.intersection(ports) or not all(_bindable(port) for port in ports):
            continue
        _HANDED_OUT.update(ports)
        return first


# Below the ports of the servers this machine runs (Postgres, RabbitMQ, Redis, ...).
_LOWEST = 10_000


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def port_in_use() -> Iterator[int]:
    """A loopback port a listening socket holds until the block ends, for a test of what a
    server does when the port it is told to listen on is taken."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port: int = taken.getsockname()[1]
        yield port


async def sign_in(client: TestClient[Any, Any], member: Member) -> Member:
    """A fresh session for an existing member, through the real login flow."""
    response = await client.post("/api/v1/auth/login", json={"email": member.email})
    assert response.status == 200, await response.text()
    login_id = (await response.json())["loginId"]
    code = await latest_code(client, member.email)
    response = await client.post(
        "/api/v1/auth/otp/verify",
        json={"loginId": login_id, "code": code, "companyId": member.company_id},
    )
    assert response.status == 200, await response.text()
    token = (await response.json())["sessionToken"]
    return Member(token, member.company_id, member.user_id, member.email)


async def live_session(client: TestClient[Any, Any], member: Member) -> Member:
    """The member's session switched to live mode (the switch must be accepted)."""
    switched = await client.post(
        "/api/v1/auth/session/mode", json={"mode": "live"}, headers=member.headers
    )
    token = (await answered(switched, 200))["sessionToken"]
    return Member(token, member.company_id, member.user_id, member.email)


async def add_member(
    client: TestClient[Any, Any], owner: Member, email: str, role_id: str
) -> Member:
    """Add a teammate through the company actor (as an accepted invitation does), then sign
    them in through the real login flow."""
    from mps.actors.company import AddMember
    from mps.http.keys import SERVICES

    services = client.app[SERVICES]
    user_id = await services.shards.ask_company(owner.company_id, AddMember(email, None, role_id))
    login = await client.post("/api/v1/auth/login", json={"email": email})
    login_id = (await login.json())["loginId"]
    code = await latest_code(client, email)
    verified = await client.post(
        "/api/v1/auth/otp/verify",
        json={"loginId": login_id, "code": code, "companyId": owner.company_id},
    )
    assert verified.status == 200, await verified.text()
    return Member((await verified.json())["sessionToken"], owner.company_id, user_id, email)


async def owner_and_admin(client: TestClient[Any, Any]) -> tuple[Member, Member]:
    """The owner of a new company, and an admin of it (admin@example.com), both signed in."""
    return await owner_and_member(client, "role_admin", "admin@example.com")


async def owner_and_member(
    client: TestClient[Any, Any], role_id: str, email: str
) -> tuple[Member, Member]:
    """The owner of a new company, and a member of it holding `role_id`, both signed in."""
    owner = await sign_up(client)
    return owner, await add_member(client, owner, email, role_id)


T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]],
    *,
    within: float = 10.0,
    every: float = 0.05,
    what: str = "the outcome",
) -> T:
    """Await `probe` until it returns something true, and return that; fail, naming `what` and
    the last value seen, once `within` seconds have passed.

    For waits on an outcome the test can observe (a row's status, an answer from the API): the
    deadline only bounds a hang and is never what the test asserts, so make it generous."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            msg = f"{what} not seen within {within} s (last seen: {value!r})"
            raise AssertionError(msg)
        await asyncio.sleep(every)
