"""One hop per keyed request (decisions 16): a command that carries its Idempotency-Key's claim
is claimed by the actor in the turn that decides it and released when its unit commits or fails,
so a keyed create reaches its company actor once; routes with effects before their command
still claim apart (`ClaimKey`, `ReleaseKey`).

Every route whose only effect is its committed unit (`Route.commits_key`) is shown here to reach
its actor in one message and to replay its first answer byte for byte."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.actors.directory import ActorDirectory
from mps.http.keys import SERVICES
from tests.approvals import set_policy
from tests.fakes import GatedDatabase, Serving, wait_until
from tests.helpers import TEST_CARD, Member, add_member, assert_replayed, create_payment, sign_up
from tests.money import ACCOUNT, paid_payment

pytestmark = pytest.mark.both_backends

BODY = {"amountMinor": "1500", "currency": "USD"}


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


async def _watched_payment(
    client: TestClient[Any, Any], member: Member
) -> tuple[dict[str, Any], ActorMail]:
    """A pending payment of `member`'s (so their company's actor is active), and the mail of
    that actor from here on."""
    payment = await create_payment(client, member)
    return payment, _mail_of(client, member)


@dataclass
class InFlight:
    """A company whose actor is active, and a keyed create of theirs (key "k") whose commit
    the writer holds."""

    client: TestClient[Any, Any]
    db: GatedDatabase
    member: Member
    mail: ActorMail
    first: asyncio.Future[Any]


@asynccontextmanager
async def _create_in_flight(serving: Serving) -> AsyncIterator[InFlight]:
    """A keyed create held at the writer until the block ends (then the writer goes on)."""
    client, db, member = await serving.on(GatedDatabase)
    _, mail = await _watched_payment(client, member)
    db.hold.clear()
    try:
        first = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: db.waiting_writes == 1)
        yield InFlight(client, db, member, mail, first)
    finally:
        db.hold.set()


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
    _, mail = await _watched_payment(client, member)

    # when a payment is created under an Idempotency-Key, then created again under it
    created = await _create(client, member, "one-hop")
    first = mail.messages[:]
    replayed = await _create(client, member, "one-hop")

    # then the create was one message, the claim inside it, and the repeat replays it exactly
    assert first == ["CreatePayment"]
    await assert_replayed(created, replayed)
    assert await _payments(client, member) == 2


async def test_a_duplicate_in_flight_waits_for_the_first_and_replays_its_response(
    serving: Serving,
) -> None:
    # given a keyed create whose commit is held up
    async with _create_in_flight(serving) as held:
        client, db, member, mail = held.client, held.db, held.member, held.mail

        # when the same request arrives meanwhile
        second = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: mail.messages.count("CreatePayment") == 2)

        # then the actor decided nothing for it: no second unit reached the writer, and it waits
        assert db.waiting_writes == 1
        assert not second.done()

    # and once the first commits, the second replays its answer byte for byte
    one, two = await held.first, await second
    await assert_replayed(one, two)
    assert await _payments(client, member) == 2
    assert "ClaimKey" not in mail.messages
    assert "ReleaseKey" not in mail.messages


async def test_a_different_request_waiting_on_a_key_in_flight_is_422_once_the_first_commits(
    serving: Serving,
) -> None:
    # given a keyed create whose commit is held up
    async with _create_in_flight(serving) as held:
        # when another request arrives under the same key, and is told to wait
        other = asyncio.ensure_future(
            _create(held.client, held.member, "k", {"amountMinor": "99", "currency": "USD"})
        )
        await wait_until(lambda: held.mail.messages.count("CreatePayment") == 2)
        assert not other.done()

    # then the first is created and the other refused, creating nothing
    assert (await held.first).status == 201
    refused = await other
    assert refused.status == 422
    assert (await refused.json())["code"] == "idempotency_key_reuse"
    assert await _payments(held.client, held.member) == 2


async def test_a_key_whose_unit_failed_is_released_by_the_actor_and_serves_the_retry(
    serving: Serving,
) -> None:
    # given a company whose database refuses writes for a while
    client, db, member = await serving.on(GatedDatabase)
    db.write_error = OSError("connection reset by peer")

    # when a keyed create fails at its commit, and is retried once the database is back
    failed = await _create(client, member, "k")
    db.write_error = None
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
    payment, mail = await _watched_payment(client, member)

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
    payment, mail = await _watched_payment(client, member)

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


def _sent(path: str, body: dict[str, Any]) -> Callable[..., Any]:
    """The setup of a keyed POST of `body` to `path`, which needs nothing made first."""

    async def setup(client: TestClient[Any, Any], member: Member) -> Keyed:
        return Keyed(path, body)

    return setup


def _on_new(path: str, body: dict[str, Any], action: str) -> Callable[..., Any]:
    """The setup of a keyed POST of `action` on a new object, made from `body` at `path`."""

    async def setup(client: TestClient[Any, Any], member: Member) -> Keyed:
        made = await _made(client, member, path, body)
        return Keyed(f"{path}/{made['id']}/{action}")

    return setup


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


async def _approval_cancel(client: TestClient[Any, Any], member: Member) -> Keyed:
    await paid_payment(client, member, "10000")
    account = await _made(client, member, "/merchant/bank-accounts", ACCOUNT)
    policy = await set_policy(client, member, "payout.create", "1000")
    assert policy.status == 200, await policy.text()
    payout = {"amountMinor": "5000", "currency": "USD", "bankAccountId": account["id"]}
    held = await _made(client, member, "/merchant/payouts", payout)
    return Keyed(f"/team/approvals/requests/{held['approvalRequest']['id']}/cancel")


API_KEY = {"name": "server", "scopes": ["payments:read"]}
INVITATION = {"email": "new@example.com", "roleId": "role_admin"}
WEBHOOK = {"url": "http://127.0.0.1:9/hooks", "events": ["*"]}

# (setup, the command the request's actor gets)
ROUTES_THAT_COMMIT_THEIR_KEY = {
    "api-key-create": (_sent("/merchant/api-keys", API_KEY), "CreateApiKey"),
    "api-key-revoke": (_on_new("/merchant/api-keys", API_KEY, "revoke"), "RevokeApiKey"),
    "card-issue": (
        _sent("/merchant/cards", {"cardholderName": "Ann Lee", "currency": "USD"}),
        "IssueCard",
    ),
    "company-card-issue": (
        _sent("/merchant/company-cards", {"nickname": "ops", "currency": "USD"}),
        "IssueCard",
    ),
    "card-freeze": (_card_change("freeze"), "ChangeCard"),
    "card-unfreeze": (_card_change("unfreeze", "freeze"), "ChangeCard"),
    "card-terminate": (_card_change("terminate"), "ChangeCard"),
    "card-fund": (_card_fund("/merchant/cards"), "FundCard"),
    "company-card-fund": (_card_fund("/merchant/company-cards"), "FundCard"),
    "card-withdraw": (_card_withdraw, "WithdrawFromCard"),
    "role-create": (
        _sent("/team/roles", {"name": "Support", "scopes": ["payments:read"]}),
        "CreateRole",
    ),
    "invitation-revoke": (_on_new("/team/invitations", INVITATION, "revoke"), "DecideInvitation"),
    "webhook-create": (_sent("/merchant/webhooks", WEBHOOK), "CreateEndpoint"),
    "webhook-rotate": (
        _on_new("/merchant/webhooks", WEBHOOK, "rotate-secret"),
        "RotateEndpointSecret",
    ),
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
    await assert_replayed(first, again, first.status)
    assert first.headers.get("Idempotent-Replayed") is None


async def test_an_ownership_transfer_repeated_while_in_flight_reaches_the_company_once_and_replays(
    serving: Serving,
) -> None:
    # given an owner and an admin, and a transfer whose commit is held up (the owner's repeat
    # must arrive before the transfer makes them an admin, whom the route refuses)
    client, db, owner = await serving.on(GatedDatabase)
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
    await assert_replayed(one, two, 200)
    assert "ClaimKey" not in mail.messages
