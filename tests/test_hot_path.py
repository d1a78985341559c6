"""The request path: actor turns never wait on the database, and an Idempotency-Key holds even
when the company actor that serialized it is lost (decisions 16)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from mps.persistence.database import Database
from mps.persistence.queries import payments as payments_q
from mps.representations.payments import payment_json
from tests.fakes import (
    GatedDatabase,
    LostAcksDatabase,
    Serving,
    SlowDatabase,
    wait_until,
)
from tests.helpers import (
    TEST_CARD,
    Member,
    assert_refused,
    assert_replayed,
    create_payment,
    pay,
    sign_up,
)

BODY = {"amountMinor": "1500", "currency": "USD"}
CREATES = 64
DELAY = 0.005


async def _payment_count(database: Database, company_id: str) -> int:
    count: int = await database.fetchval(
        "SELECT COUNT(*) FROM payments WHERE company_id = $1", company_id
    )
    return count


async def _create(client: TestClient[Any, Any], member: Member, key: str) -> Any:
    headers = {**member.headers, "Idempotency-Key": key}
    return await client.post("/api/v1/merchant/payments", json=BODY, headers=headers)


def _webhook_work(sql: str) -> bool:
    return " FROM events " in sql or " FROM webhook_" in sql


@pytest.mark.both_backends
async def test_creates_with_their_own_keys_are_not_serialized_behind_database_round_trips(
    serving: Serving,
) -> None:
    # given one company, and every database round trip 5 ms slower
    client, db, member = await serving.on(lambda real: SlowDatabase(real, DELAY))
    assert (await client.get("/api/v1/auth/me", headers=member.headers)).status == 200
    db.writes.clear()
    db.reads.clear()

    # when 64 creates arrive at once, each with its own key
    responses = await asyncio.gather(*(_create(client, member, f"k{i}") for i in range(CREATES)))

    # then all land; none of them read the database (a fresh key is claimed in the company
    # actor's memory and guarded by the create's own commit; only the outbox relay and the
    # webhook fan-out, which run beside the requests, read the events they committed); and
    # their commits were grouped, which only happens when the actor takes the next create
    # without waiting for the previous commit
    assert [r.status for r in responses] == [201] * CREATES
    assert await _payment_count(db.real, member.company_id) == CREATES
    assert [sql for sql in db.reads if not _webhook_work(sql)] == []
    assert len(db.writes) <= CREATES // 4, db.writes


@pytest.mark.both_backends
async def test_checkouts_on_one_link_look_up_their_keys_side_by_side_and_share_commits(
    serving: Serving,
) -> None:
    # given every database round trip 5 ms slower, and a multi-use payment link
    client, db, member = await serving.on(lambda real: SlowDatabase(real, DELAY))
    link = await create_payment(client, member, allowMultiplePayments=True)
    db.writes.clear()
    db.most_reads_in_flight = 0
    path = f"/api/v1/checkout/{link['reference']}/pay"

    # when 64 shoppers pay at once, each with their own key
    responses = await asyncio.gather(
        *(
            client.post(path, json={"card": TEST_CARD}, headers={"Idempotency-Key": f"k{i}"})
            for i in range(CREATES)
        )
    )

    # then every payment lands; the stored-response lookups ran side by side, outside the
    # company actor's turns; and the link's actor did not hold each shopper until the previous
    # commit (their commits were grouped)
    assert [r.status for r in responses] == [200] * CREATES
    children = await db.real.fetchval(
        "SELECT COUNT(*) FROM payments WHERE link_payment_id = $1", link["id"]
    )
    assert children == CREATES
    assert db.most_reads_in_flight >= 8
    assert len(db.writes) <= CREATES // 4


@pytest.mark.both_backends
async def test_one_key_sent_to_three_nodes_at_once_creates_one_payment(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given three nodes on one database, each believing it owns every company (no cluster
    # routing): their company actors cannot see each other's in-flight keys
    nodes = [await aiohttp_client(make_app()) for _ in range(3)]
    member = await sign_up(nodes[0])

    # when nine requests with one key arrive, three at each node
    responses = await asyncio.gather(
        *(_create(node, member, "one-key") for node in nodes for _ in range(3))
    )

    # then the key's stored response was the guard: one payment, and every answer is its 201
    bodies = [await r.json() for r in responses]
    assert [r.status for r in responses] == [201] * 9
    assert len({b["id"] for b in bodies}) == 1
    assert await _payment_count(nodes[0].app[SERVICES].database, member.company_id) == 1


@pytest.mark.both_backends
async def test_a_company_actor_lost_between_claim_and_commit_still_creates_one_payment(
    serving: Serving,
) -> None:
    # given a create whose commit is held up, so its key stays in flight
    client, db, member = await serving.on(GatedDatabase)
    services = client.app[SERVICES]
    db.hold.clear()
    try:
        first = asyncio.ensure_future(_create(client, member, "k"))
        await wait_until(lambda: db.waiting_writes == 1)

        # when the company actor crashes (forgetting its in-flight keys) and a retry of the
        # same request arrives: its fresh incarnation is activated only once the crashed one's
        # commit has landed (mps.actors.directory), so the retry waits meanwhile
        with pytest.raises(TypeError):
            await services.shards.ask_company(member.company_id, object())
        second = asyncio.ensure_future(_create(client, member, "k"))
        await asyncio.sleep(0.2)
        assert not second.done()
    finally:
        db.hold.set()

    # then both answer the same 201, and only one payment exists
    one, two = await first, await second
    await assert_replayed(one, two)
    assert await _payment_count(db.real, member.company_id) == 1


async def test_a_failed_stored_response_lookup_is_503_and_leaves_the_key_usable(
    serving: Serving,
) -> None:
    # given a database whose idempotency lookups fail for a while
    client, db, member = await serving.on(GatedDatabase)
    db.fails = lambda sql: "idempotency_keys" in sql
    db.error = OSError("connection reset by peer")

    # when someone is invited under an Idempotency-Key (a route that mails after its commit,
    # so looks before it runs)
    async def invite() -> Any:
        headers = {**member.headers, "Idempotency-Key": "k"}
        body = {"email": "new@example.com", "roleId": "role_admin"}
        return await client.post("/api/v1/team/invitations", json=body, headers=headers)

    refused = await invite()

    # then it is a 503 in the envelope, nothing was created, and once the database answers
    # again the same key runs the request exactly once
    await assert_refused(refused, 503, "unavailable")
    assert await db.real.fetchval("SELECT COUNT(*) FROM invitations") == 0
    db.error = None
    created, replayed = await invite(), await invite()
    assert created.status == replayed.status == 201
    assert await created.read() == await replayed.read()
    assert await db.real.fetchval("SELECT COUNT(*) FROM invitations") == 1


async def _read_back(
    client: TestClient[Any, Any], member: Member, db: LostAcksDatabase, payment_id: str
) -> tuple[dict[str, Any], list[str]]:
    """GET the payment: its answer checked against what storage holds, and the reads of the
    payments table that the GET made."""
    db.reads.clear()
    response = await client.get(f"/api/v1/merchant/payments/{payment_id}", headers=member.headers)
    body = await response.json()
    assert response.status == 200, body
    made = [sql for sql in db.reads if " FROM payments " in sql]
    stored = await payments_q.get_payment(db.real, member.company_id, "test", payment_id)
    assert stored is not None
    public_url = client.app[SERVICES].settings.public_url
    expected = orjson.loads(orjson.dumps(payment_json(stored, public_url)))
    assert {k: v for k, v in body.items() if k not in ("ok", "requestId")} == expected
    return body, made


@pytest.mark.both_backends
async def test_a_payment_read_after_its_writes_answers_from_memory_exactly_as_storage_would(
    serving: Serving,
) -> None:
    # given a node that owns every shard, and payments written through it in each way a
    # payment is written: created, cancelled, paid at checkout, and a multi-use link's child
    client, db, member = await serving.on(LostAcksDatabase)
    created = await create_payment(client, member, customerEmail="Buyer@Example.com")
    cancelled = await create_payment(client, member)
    cancel = f"/api/v1/merchant/payments/{cancelled['id']}/cancel"
    assert (await client.post(cancel, headers=member.headers)).status == 200
    paid = await create_payment(client, member)
    assert (await pay(client, paid["reference"], email="a@example.com")).status == 200
    link = await create_payment(client, member, allowMultiplePayments=True)
    assert (await pay(client, link["reference"], email="b@example.com")).status == 200
    [child_id] = [
        row["id"]
        for row in await db.real.fetch(
            "SELECT id FROM payments WHERE link_payment_id = $1", link["id"]
        )
    ]

    # when each is read back, then each answer is what storage holds, and none of them needed
    # a read of the payments table
    states = {}
    for payment_id in (created["id"], cancelled["id"], paid["id"], link["id"], child_id):
        body, reads = await _read_back(client, member, db, payment_id)
        assert reads == [], payment_id
        states[payment_id] = body["status"]
    assert list(states.values()) == ["PENDING", "CANCELLED", "PAID", "PENDING", "PAID"]


@pytest.mark.both_backends
async def test_a_payment_whose_commit_went_unconfirmed_is_read_from_storage(
    serving: Serving,
) -> None:
    # given a payment read from memory, and a cancel that lands but whose confirmation is lost
    client, db, member = await serving.on(LostAcksDatabase)
    payment = await create_payment(client, member)
    assert (await _read_back(client, member, db, payment["id"]))[1] == []
    db.lose_acks = True
    cancel = f"/api/v1/merchant/payments/{payment['id']}/cancel"
    assert (await client.post(cancel, headers=member.headers)).status == 503
    db.lose_acks = False

    # when it is read, then the answer comes from storage, which holds the cancel: the node
    # forgot a snapshot it could no longer vouch for
    body, reads = await _read_back(client, member, db, payment["id"])
    assert body["status"] == "CANCELLED"
    assert len(reads) == 1
