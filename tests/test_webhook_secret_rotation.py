"""Concurrent changes to one webhook endpoint (decisions 10): every change is applied on top of
the endpoint as it is when it commits, never on top of a copy the request read earlier.

The races are run two ways: requests sent at once through the app, and, to make the interleaving
certain, the company actor handed a copy of the endpoint read before another change landed (what
a route holds when a request overtakes it between its read and its turn).

A rotation moves the current secret to `previous` and makes a new one current, so after any
number of racing rotations the endpoint holds exactly two secrets: the one returned by the
rotation that committed last (current) and the one returned by the rotation that committed just
before it (previous, signing for its 24 h overlap). The order in which they committed is read from
their `updatedAt`, taken in the company actor's turn from a clock that ticks on every reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from mps.actors.company import CreateEndpoint, DeleteEndpoint, RotateEndpointSecret, UpdateEndpoint
from mps.actors.company.webhooks import MAX_ENDPOINTS
from mps.bootstrap import Overrides
from mps.domain.clock import iso, utcnow
from mps.errors import Conflict
from mps.http.keys import SERVICES
from mps.persistence.queries import webhooks as q
from mps.persistence.statements import Row
from mps.persistence.webhook_store import endpoint_insert
from mps.services import Services
from mps.webhooks import SignatureError, verify_signature
from tests.helpers import Member, create_payment, sign_up
from tests.receiver import Received, Receiver

# Two writers of one row meet in the database: SQLite's single writer, Postgres' row lock.
pytestmark = pytest.mark.both_backends


class TickingClock:
    """The real time at first, then a millisecond later on every reading: two readings never
    tie, so timestamps taken in successive actor turns order those turns."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


@dataclass
class Hooked:
    client: TestClient[Any, Any]
    member: Member
    receiver: Receiver

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        response = await self.client.request(
            method, f"/api/v1{path}", json=body, headers=self.member.headers
        )
        assert response.status in (200, 201), await response.text()
        return await response.json()

    async def endpoint(self) -> Any:
        body = {"url": self.receiver.url(), "events": ["payment.created"]}
        return await self.call("POST", "/merchant/webhooks", body)

    async def rotations(self, endpoint_id: str, count: int) -> list[dict[str, Any]]:
        """`count` rotations sent at once; their answers, in the order they committed."""
        path = f"/merchant/webhooks/{endpoint_id}/rotate-secret"
        answers = await asyncio.gather(*(self.call("POST", path) for _ in range(count)))
        return sorted(answers, key=lambda a: a["updatedAt"])

    @property
    def services(self) -> Services:
        services: Services = self.client.app[SERVICES]
        return services

    async def copy(self, endpoint_id: str) -> Row:
        """The endpoint as a route reads it before asking the company actor."""
        row = await q.endpoint(self.services.database, self.member.company_id, "test", endpoint_id)
        assert row is not None
        return row

    async def stale_copy(self, change: str) -> tuple[dict[str, Any], Row, Any]:
        """A new endpoint, a copy of its row read as a route reads it, and what another
        request answered when it then changed the endpoint: its `change` is "rotate" (the
        rotation's answer) or "move" (to a new URL, which is what is returned)."""
        endpoint = await self.endpoint()
        copy = await self.copy(endpoint["id"])
        if change == "rotate":
            path = f"/merchant/webhooks/{endpoint['id']}/rotate-secret"
            return endpoint, copy, await self.call("POST", path)
        moved = self.receiver.url("/moved")
        await self.call("PATCH", f"/merchant/webhooks/{endpoint['id']}", {"url": moved})
        return endpoint, copy, moved

    async def ask(self, message: Any) -> Any:
        return await self.services.shards.ask_company(self.member.company_id, message)

    async def delivery(self) -> Received:
        """The next delivery to the endpoint, made after whatever came before."""
        before = len(self.receiver.received)
        await create_payment(self.client, self.member)
        received = await self.receiver.wait_for(before + 1)
        return received[before]


@pytest.fixture
async def hooked(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> AsyncIterator[Hooked]:
    async with Receiver() as receiver:
        client: TestClient[Any, Any] = await aiohttp_client(
            make_app(Overrides(clock=TickingClock()))
        )
        member = await sign_up(client)
        yield Hooked(client, member, receiver)


def _signs(secret: str, request: Received) -> bool:
    """Whether `secret` verifies the delivery, by both schemes it carries."""
    try:
        verify_signature(request.body, request.headers["X-Service-Signature"], secret)
    except SignatureError:
        standard = True
        try:
            Webhook(secret).verify(request.body, request.headers)
        except WebhookVerificationError:
            standard = False
        assert not standard, "the two schemes disagree"
        return False
    Webhook(secret).verify(request.body, request.headers)
    return True


def _v1_count(request: Received) -> int:
    return request.headers["X-Service-Signature"].count("v1=")


# -- rotation ---------------------------------------------------------------------------------


async def test_rotations_keep_both_new_secrets_when_two_race(hooked: Hooked) -> None:
    # given an endpoint
    endpoint = await hooked.endpoint()

    # when two rotations are sent at once
    first, last = await hooked.rotations(endpoint["id"], 2)

    # then both answered with distinct secrets, the later one is current, the earlier one the
    # previous, and the original secret signs no more
    assert first["secret"] != last["secret"]
    request = await hooked.delivery()
    assert _v1_count(request) == 2
    assert _signs(last["secret"], request)
    assert _signs(first["secret"], request)
    assert not _signs(endpoint["secret"], request)
    current, previous = request.headers["X-Service-Signature"].split(",")[1:]
    assert current != previous


async def test_rotations_leave_the_last_two_committed_when_five_race(hooked: Hooked) -> None:
    # given an endpoint
    endpoint = await hooked.endpoint()

    # when five rotations are sent at once
    answers = await hooked.rotations(endpoint["id"], 5)

    # then the last to commit is current and the one before it previous; every older secret,
    # and the original, signs no more
    request = await hooked.delivery()
    assert _v1_count(request) == 2
    assert _signs(answers[-1]["secret"], request)
    assert _signs(answers[-2]["secret"], request)
    for older in [endpoint, *answers[:-2]]:
        assert not _signs(older["secret"], request)


async def test_rotation_after_a_race_moves_the_last_current_secret_to_previous(
    hooked: Hooked,
) -> None:
    # given an endpoint rotated by three racing requests
    endpoint = await hooked.endpoint()
    answers = await hooked.rotations(endpoint["id"], 3)

    # when it is rotated once more
    again = await hooked.call("POST", f"/merchant/webhooks/{endpoint['id']}/rotate-secret")

    # then the new secret signs beside the one the race left current
    request = await hooked.delivery()
    assert _v1_count(request) == 2
    assert _signs(again["secret"], request)
    assert _signs(answers[-1]["secret"], request)
    assert not _signs(answers[-2]["secret"], request)


async def test_rotation_keeps_the_secret_stored_at_commit_when_its_copy_is_stale(
    hooked: Hooked,
) -> None:
    # given an endpoint read, then rotated by another request before this one's turn
    endpoint, copy, other = await hooked.stale_copy("rotate")

    # when the company actor rotates from the copy read before
    _row, secret = await hooked.ask(RotateEndpointSecret(copy))

    # then the secret the other rotation returned is the previous one, not the one read
    request = await hooked.delivery()
    assert _signs(secret, request)
    assert _signs(other["secret"], request)
    assert not _signs(endpoint["secret"], request)


# -- other changes --------------------------------------------------------------------------------


async def test_update_answers_with_the_row_as_committed_when_its_copy_is_stale(
    hooked: Hooked,
) -> None:
    # given an endpoint read, then given a new URL by another request
    endpoint, copy, moved = await hooked.stale_copy("move")

    # when the company actor changes its events from the copy read before
    row = await hooked.ask(UpdateEndpoint(copy, {"events": ("payment.created", "invoice.*")}))

    # then both changes stand, and the answer shows both
    assert row["url"] == moved
    assert row["updated_at"] > copy["updated_at"]
    stored = await hooked.call("GET", f"/merchant/webhooks/{endpoint['id']}")
    assert stored["url"] == moved and stored["events"] == ["payment.created", "invoice.*"]


async def test_update_answers_with_the_rotation_it_did_not_read_when_a_rotation_overtook_it(
    hooked: Hooked,
) -> None:
    # given an endpoint read, then rotated by another request
    endpoint, copy, rotated = await hooked.stale_copy("rotate")

    # when the company actor changes its description from the copy read before
    row = await hooked.ask(UpdateEndpoint(copy, {"description": "orders"}))

    # then the answer shows the rotation's overlap, and the rotation's secrets still sign
    assert row["previous_secret_expires_at"] == rotated["previousSecretExpiresAt"]
    request = await hooked.delivery()
    assert _signs(rotated["secret"], request) and _signs(endpoint["secret"], request)


async def test_delete_answers_with_the_row_as_deleted_when_its_copy_is_stale(
    hooked: Hooked,
) -> None:
    # given an endpoint read, then given a new URL by another request
    endpoint, copy, moved = await hooked.stale_copy("move")

    # when the company actor deletes it from the copy read before
    row = await hooked.ask(DeleteEndpoint(copy))

    # then the answer is the endpoint as it was when deleted
    assert row["url"] == moved
    assert (
        await q.endpoint(hooked.services.database, hooked.member.company_id, "test", endpoint["id"])
        is None
    )


async def test_create_is_refused_at_the_cap_when_the_count_it_was_given_is_low(
    hooked: Hooked,
) -> None:
    # given a company whose mode holds the most endpoints already, written where this
    # incarnation of its actor did not see them (an earlier one, another node)
    now = iso(utcnow())
    for i in range(MAX_ENDPOINTS):
        row: Row = {
            "id": f"whe_cap{i}",
            "company_id": hooked.member.company_id,
            "mode": "test",
            "url": hooked.receiver.url(),
            "description": None,
            "events": '["*"]',
            "secret": "sealed",
            "previous_secret": None,
            "previous_secret_expires_at": None,
            "status": "enabled",
            "disabled_reason": None,
            "created_at": now,
            "updated_at": now,
        }
        await hooked.services.actors.commit(endpoint_insert(row))

    # when a create arrives with a count read before they were written
    create = CreateEndpoint("test", hooked.receiver.url(), ("*",), None, stored_count=0)
    with pytest.raises(Conflict) as refused:
        await hooked.ask(create)

    # then it is refused for the cap, and nothing was added
    assert refused.value.code == "limit_reached"
    count = await q.count_endpoints(hooked.services.database, hooked.member.company_id, "test")
    assert count == MAX_ENDPOINTS
