"""One hop per keyed request (decisions 16): a command that carries its Idempotency-Key's claim
is claimed by the actor in the turn that decides it and released when its unit commits or fails,
so a keyed create reaches its company actor once; routes with effects before their command
still claim apart (`ClaimKey`, `ReleaseKey`).

Every route whose only effect is its committed unit (`Route.commits_key`) is shown here to reach
its actor in one message and to replay its first answer byte for byte."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.directory import ActorDirectory
from mps.bootstrap import Overrides
from mps.config import Settings
from mps.http.keys import SERVICES
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import WriteUnit
from tests.conftest import Clock
from tests.fakes import GatedDatabase, wait_until
from tests.helpers import TEST_CARD, Member, add_member, create_payment, sign_up
from tests.money import ACCOUNT, paid_payment

pytestmark = pytest.mark.both_backends

BODY = {"amountMinor": "1500", "currency": "USD"}


class FailingWritesDatabase(GatedDatabase):
    """A gated database whose group commits fail, as an outage would, while `failing` is set."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.failing = False

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        if self.failing:
            msg = "connection reset by peer"
            raise OSError(msg)
        return await super().write(units, fences)


class ActorMail:
    """Every message a directory of one shard delivers to one of its actors (a company, a
    card), by type name, in order: what reaches that actor."""

    def __init__(self, directory: ActorDirectory[Any, Any], actor_key: object) -> None:
        self.messages: list[str] = []
        ask, tell = directory.ask, directory.tell

        async def counted_ask(key: Any, message: Any) -> Any:
            if key == actor_key:
                self.messages.append(type(message).__name__)
            return await ask(key, message)

        async def counted_tell(key: Any, message: Any) -> None:
            if key == actor_key:
                self.messages.append(type(message).__name__)
            await tell(key, message)

        directory.ask = counted_ask  # type: ignore[method-assign]
        directory.tell = counted_tell  # type: ignore[method-assign]


async def _served_on(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    clock: Clock,
) -> tuple[TestClient[Any, Any], FailingWritesDatabase]:
    wrapped: list[FailingWritesDatabase] = []

    def wrap(real: Database) -> Database:
        wrapped.append(FailingWritesDatabase(real))
        return wrapped[0]

    # The background passes would write on their own schedule; slowed, the writes seen are the
    # requests' own.
    slow = {f.name: 3600.0 for f in fields(Settings) if f.name.endswith("_interval")}
    client = await aiohttp_client(make_app(Overrides(clock=clock, wrap_database=wrap), **slow))
    return client, wrapped[0]


def _mail_of(client: TestClient[Any, Any], member: Member) -> ActorMail:
    shards = client.app[SERVICES].shards
    shard = shards.owned[shards.index(member.company_id)]
    return ActorMail(shard.companies, member.company_id)


def _card_mail_of(client: TestClient[Any, Any], member: Member, card_id: str) -> ActorMail:
    shards = client.app[SERVICES].shards
    shard = shards.owned[shards.index(member.company_id)]
    return ActorMail(shard.cards, (member.company_id, card_id))


async def _create(
    client: TestClient[Any, Any], member: Member, key: str, body: dict[str, Any] = BODY
) -> Any:
    headers = {**member.headers, "Idempotency-Key": key}
    return await client.post("/api/v1/merchant/payments", json=body, headers=headers)


async def _payments(client: TestClient[Any, Any], member: Member) -> int:
    count: int = await client.app[SERVICES].database.fetchval(
        "SELECT COUNT(*) FROM payments WHERE company_id = $1", member.company_id
    )
    return count


async def test_a_keyed_create_sends_its_company_actor_one_message(
    client: TestClient[Any, Any],
) -> None:
    # given a company whose actor is active
    member = await sign_up(client)
    await create_payment(client, member)
    mail = _mail_of(client, member)

    # when a payment is created under an Idempotency-Key, then created again under it
    created = await _create(client, member, "one-hop")
    first = mail.messages[:]
    replayed = await _create(client, member, "one-hop")

    # then the create was one message, the claim inside it, and the repeat replays it exactly
    assert created.status == replayed.status == 201
    assert first == ["CreatePayment"]
    assert await created.read() == await replayed.read()
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert await _payments(client, member) == 2


async def test_a_duplicate_in_flight_waits_for_the_first_and_replays_its_response(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a keyed create whose commit is held up
    client, db = await _served_on(aiohttp_client, make_app, clock)
    member = await sign_up(client)
    await create_payment(client, member)
    mail = _mail_of(client, member)
    db.hold.clear()
    try:
        first = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: db.waiting_writes == 1)

        # when the same request arrives meanwhile
        second = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: mail.messages.count("CreatePayment") == 2)

        # then the actor decided nothing for it: no second unit reached the writer, and it waits
        assert db.waiting_writes == 1
        assert not second.done()
    finally:
        db.hold.set()

    # and once the first commits, the second replays its answer byte for byte
    one, two = await first, await second
    assert one.status == two.status == 201
    assert await one.read() == await two.read()
    assert two.headers.get("Idempotent-Replayed") == "true"
    assert await _payments(client, member) == 2
    assert "ClaimKey" not in mail.messages
    assert "ReleaseKey" not in mail.messages


async def test_a_different_request_waiting_on_a_key_in_flight_is_422_once_the_first_commits(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a keyed create whose commit is held up
    client, db = await _served_on(aiohttp_client, make_app, clock)
    member = await sign_up(client)
    await create_payment(client, member)
    mail = _mail_of(client, member)
    db.hold.clear()
    try:
        first = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: db.waiting_writes == 1)

        # when another request arrives under the same key, and is told to wait
        other = asyncio.ensure_future(
            _create(client, member, "k", {"amountMinor": "99", "currency": "USD"})
        )
        await wait_until(lambda: mail.messages.count("CreatePayment") == 2)
        assert not other.done()
    finally:
        db.hold.set()

    # then the first is created and the other refused, creating nothing
    assert (await first).status == 201
    refused = await other
    assert refused.status == 422
    assert (await refused.json())["code"] == "idempotency_key_reuse"
    assert await _payments(client, member) == 2


async def test_a_key_whose_unit_failed_is_released_by_the_actor_and_serves_the_retry(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a company whose database refuses writes for a while
    client, db = await _served_on(aiohttp_client, make_app, clock)
    member = await sign_up(client)
    db.failing = True

    # when a keyed create fails at its commit, and is retried once the database is back
    failed = await _create(client, member, "k")
    db.failing = False
    retried = await asyncio.wait_for(_create(client, member, "k"), 5)

    # then the failure was a 503 with Retry-After, and the retry ran at once and created one
    assert failed.status == 503
    assert failed.headers.get("Retry-After")
    assert retried.status == 201
    assert retried.headers.get("Idempotent-Replayed") is None
    assert await _payments(client, member) == 1


async def test_a_keyed_cancel_claims_its_key_in_the_payment_actor_without_the_company_actor(
    client: TestClient[Any, Any],
) -> None:
    # given a pending payment
    member = await sign_up(client)
    payment = await create_payment(client, member)
    mail = _mail_of(client, member)

    # when it is cancelled twice under one key, at once
    headers = {**member.headers, "Idempotency-Key": "cancel-1"}
    url = f"/api/v1/merchant/payments/{payment['id']}/cancel"
    one, two = await asyncio.gather(
        client.post(url, headers=headers), client.post(url, headers=headers)
    )

    # then both answer the one cancellation, and the company actor was not asked for the key
    assert one.status == two.status == 200
    assert await one.read() == await two.read()
    assert {one.headers.get("Idempotent-Replayed"), two.headers.get("Idempotent-Replayed")} == {
        None,
        "true",
    }
    assert mail.messages == []


async def test_a_route_with_effects_before_its_command_still_claims_its_key_apart(
    client: TestClient[Any, Any],
) -> None:
    # given a payment link
    member = await sign_up(client)
    payment = await create_payment(client, member)
    mail = _mail_of(client, member)

    # when it is paid at checkout (the card processor is called before anything commits) under
    # a key
    paid = await client.post(
        f"/api/v1/checkout/{payment['reference']}/pay",
        json={"card": TEST_CARD},
        headers={"Idempotency-Key": "checkout-1"},
    )

    # then the key was claimed and released in messages of their own around the request
    assert paid.status == 200, await paid.text()
    await wait_until(lambda: mail.messages[-1:] == ["ReleaseKey"])
    assert mail.messages[0] == "ClaimKey"
    assert mail.messages.count("ClaimKey") == mail.messages.count("ReleaseKey") == 1


# -- every route that commits its key ----------------------------------------------------------


@dataclass(frozen=True)
class Keyed:
    """A keyed request ready to send: where, with what, and the card it acts on (if any)."""

    path: str
    body: dict[str, Any] | None = None
    card_id: str | None = None


async def _made(client: TestClient[Any, Any], member: Member, path: str, body: Any) -> Any:
    response = await client.post(f"/api/v1{path}", json=body, headers=member.headers)
    assert response.status in (200, 201, 202), await response.text()
    return await response.json()


async def _card(
    client: TestClient[Any, Any], member: Member, path: str = "/merchant/cards", **more: Any
) -> str:
    body = {"cardholderName": "Ann Lee", "nickname": "ops", "currency": "USD", **more}
    if path == "/merchant/cards":
        body.pop("nickname")
    else:
        body.pop("cardholderName")
    card_id: str = (await _made(client, member, path, body))["id"]
    return card_id


async def _api_key_create(client: TestClient[Any, Any], member: Member) -> Keyed:
    return Keyed("/merchant/api-keys", {"name": "server", "scopes": ["payments:read"]})


async def _api_key_revoke(client: TestClient[Any, Any], member: Member) -> Keyed:
    body = {"name": "server", "scopes": ["payments:read"]}
    key = await _made(client, member, "/merchant/api-keys", body)
    return Keyed(f"/merchant/api-keys/{key['id']}/revoke")


async def _card_issue(client: TestClient[Any, Any], member: Member) -> Keyed:
    return Keyed("/merchant/cards", {"cardholderName": "Ann Lee", "currency": "USD"})


async def _company_card_issue(client: TestClient[Any, Any], member: Member) -> Keyed:
    return Keyed("/merchant/company-cards", {"nickname": "ops", "currency": "USD"})


def _card_change(action: str, *before: str) -> Callable[..., Any]:
    async def setup(client: TestClient[Any, Any], member: Member) -> Keyed:
        card_id = await _card(client, member)
        for earlier in before:
            await _made(client, member, f"/merchant/cards/{card_id}/{earlier}", None)
        return Keyed(f"/merchant/cards/{card_id}/{action}", card_id=card_id)

    return setup


def _card_fund(path: str) -> Callable[..., Any]:
    async def setup(client: TestClient[Any, Any], member: Member) -> Keyed:
        await paid_payment(client, member, "10000")
        card_id = await _card(client, member, path)
        return Keyed(f"{path}/{card_id}/fund", {"amountMinor": "1000"}, card_id)

    return setup


async def _card_withdraw(client: TestClient[Any, Any], member: Member) -> Keyed:
    await paid_payment(client, member, "10000")
    card_id = await _card(client, member, initialFundingMinor="3000")
    return Keyed(f"/merchant/cards/{card_id}/withdraw", {"amountMinor": "1000"}, card_id)


async def _role_create(client: TestClient[Any, Any], member: Member) -> Keyed:
    return Keyed("/team/roles", {"name": "Support", "scopes": ["payments:read"]})


async def _invitation_revoke(client: TestClient[Any, Any], member: Member) -> Keyed:
    body = {"email": "new@example.com", "roleId": "role_admin"}
    invitation = await _made(client, member, "/team/invitations", body)
    return Keyed(f"/team/invitations/{invitation['id']}/revoke")


async def _webhook_create(client: TestClient[Any, Any], member: Member) -> Keyed:
    return Keyed("/merchant/webhooks", {"url": "http://127.0.0.1:9/hooks", "events": ["*"]})


async def _webhook_rotate(client: TestClient[Any, Any], member: Member) -> Keyed:
    body = {"url": "http://127.0.0.1:9/hooks", "events": ["*"]}
    endpoint = await _made(client, member, "/merchant/webhooks", body)
    return Keyed(f"/merchant/webhooks/{endpoint['id']}/rotate-secret")


async def _approval_cancel(client: TestClient[Any, Any], member: Member) -> Keyed:
    await paid_payment(client, member, "10000")
    account = await _made(client, member, "/merchant/bank-accounts", ACCOUNT)
    policy = {"enabled": True, "thresholds": {"USD": "1000"}, "requiredApprovals": 1}
    response = await client.put(
        "/api/v1/team/approvals/policies/payout.create", json=policy, headers=member.headers
    )
    assert response.status == 200, await response.text()
    payout = {"amountMinor": "5000", "currency": "USD", "bankAccountId": account["id"]}
    held = await _made(client, member, "/merchant/payouts", payout)
    return Keyed(f"/team/approvals/requests/{held['approvalRequest']['id']}/cancel")


# (setup, the command the request's actor gets, whether that actor is the card's)
ROUTES_THAT_COMMIT_THEIR_KEY = {
    "api-key-create": (_api_key_create, "CreateApiKey"),
    "api-key-revoke": (_api_key_revoke, "RevokeApiKey"),
    "card-issue": (_card_issue, "IssueCard"),
    "company-card-issue": (_company_card_issue, "IssueCard"),
    "card-freeze": (_card_change("freeze"), "ChangeCard"),
    "card-unfreeze": (_card_change("unfreeze", "freeze"), "ChangeCard"),
    "card-terminate": (_card_change("terminate"), "ChangeCard"),
    "card-fund": (_card_fund("/merchant/cards"), "FundCard"),
    "company-card-fund": (_card_fund("/merchant/company-cards"), "FundCard"),
    "card-withdraw": (_card_withdraw, "WithdrawFromCard"),
    "role-create": (_role_create, "CreateRole"),
    "invitation-revoke": (_invitation_revoke, "DecideInvitation"),
    "webhook-create": (_webhook_create, "CreateEndpoint"),
    "webhook-rotate": (_webhook_rotate, "RotateEndpointSecret"),
    "approval-cancel": (_approval_cancel, "CancelApproval"),
}


@pytest.mark.parametrize("route", list(ROUTES_THAT_COMMIT_THEIR_KEY))
async def test_a_route_that_commits_its_key_reaches_its_actor_once_and_replays_byte_for_byte(
    client: TestClient[Any, Any], route: str
) -> None:
    # given what the route acts on
    setup, command = ROUTES_THAT_COMMIT_THEIR_KEY[route]
    member = await sign_up(client)
    keyed: Keyed = await setup(client, member)
    company = _mail_of(client, member)
    card = _card_mail_of(client, member, keyed.card_id) if keyed.card_id else None
    headers = {**member.headers, "Idempotency-Key": f"{route}-1"}
    url = f"/api/v1{keyed.path}"

    # when it is sent under a key, and sent again under it
    first = await client.post(url, json=keyed.body, headers=headers)
    sent = (company.messages[:], card.messages[:] if card is not None else None)
    again = await client.post(url, json=keyed.body, headers=headers)

    # then the request was one message to its actor, carrying its claim (nothing claimed
    # apart), and the repeat answered the first response byte for byte
    assert 200 <= first.status < 300, await first.text()
    companies, cards = sent
    if cards is None:
        assert companies == [command]
    else:
        assert cards == [command]
        assert "ClaimKey" not in companies
        assert "ReleaseKey" not in companies
    assert again.status == first.status
    assert await again.read() == await first.read()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert first.headers.get("Idempotent-Replayed") is None


async def test_an_ownership_transfer_repeated_while_in_flight_reaches_the_company_once_and_replays(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given an owner and an admin, and a transfer whose commit is held up (the owner's repeat
    # must arrive before the transfer makes them an admin, whom the route refuses)
    client, db = await _served_on(aiohttp_client, make_app, clock)
    owner = await sign_up(client)
    admin = await add_member(client, owner, "admin@example.com", "role_admin")
    mail = _mail_of(client, owner)
    headers = {**owner.headers, "Idempotency-Key": "transfer-1"}
    body = {"userId": admin.user_id}
    url = "/api/v1/team/transfer-ownership"
    db.hold.clear()
    try:
        first = asyncio.ensure_future(client.post(url, json=body, headers=headers))
        await wait_until(lambda: db.waiting_writes == 1)
        sent = mail.messages[:]

        # when the owner repeats it meanwhile
        second = asyncio.ensure_future(client.post(url, json=body, headers=headers))
        await wait_until(lambda: mail.messages.count("TransferOwnership") == 2)
        assert not second.done()
    finally:
        db.hold.set()

    # then the transfer was one message, and the repeat replays its answer byte for byte
    one, two = await first, await second
    assert sent == ["TransferOwnership"]
    assert one.status == two.status == 200, await one.text()
    assert await one.read() == await two.read()
    assert two.headers.get("Idempotent-Replayed") == "true"
    assert "ClaimKey" not in mail.messages
