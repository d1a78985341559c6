"""A cluster of real run.py nodes on one Postgres and one RabbitMQ (decisions 18): any node
answers any request, ownership of each shard is decided by the broker, a node that dies or
pauses loses its shards to the others, and storage refuses what a former owner still tries to
write. Companies are looked up on the node that owns their shard through its /health."""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from mps.auth.credentials import Credentials
from mps.domain.shards import SHARD_COUNT, shard_of
from tests.cluster import LocalCluster, NodeMember, company_and_its_owner, sign_up_on
from tests.conftest import PG_URL
from tests.fakes import wait_until
from tests.helpers import TEST_CARD, eventually

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"
ROOT = Path(__file__).resolve().parents[1]
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
FINAL_EVENT = {
    "PAID": "payment.completed",
    "CANCELLED": "payment.cancelled",
    "EXPIRED": "payment.expired",
}
# A node verifies a cached credential again this long after it last did (mps.auth.credentials),
# so it refuses a revoked one by then even if it never heard of the revocation. A test waits
# for a revocation to reach every node a third of that at most: a refusal it sees in time came
# from the revocation's broadcast, never from that fallback.
REVOCATION_PATIENCE: float = (
    inspect.signature(Credentials).parameters["revalidate_after"].default / 3
)


class Db:
    """Reads of the cluster's schema, for assertions on what was committed."""

    def __init__(self, url: str) -> None:
        self.schema = url.split("schema=", 1)[1]

    async def fetch(self, sql: str, *params: Any) -> list[asyncpg.Record]:
        conn = await asyncpg.connect(PG_URL, server_settings={"search_path": self.schema})
        try:
            return await conn.fetch(sql, *params)
        finally:
            await conn.close()

    async def execute(self, sql: str, *params: Any) -> None:
        await self.fetch(sql, *params)


async def refused_by_every_node(
    http: aiohttp.ClientSession, urls: list[str], path: str, headers: dict[str, str]
) -> None:
    """Wait until every node answers `path` with 401 for `headers`, all within one
    REVOCATION_PATIENCE from now (the revocation was just made)."""
    deadline = time.monotonic() + REVOCATION_PATIENCE

    async def refused(url: str) -> bool:
        async with http.get(f"{url}{path}", headers=headers) as r:
            return r.status == 401

    for url in urls:
        await eventually(
            functools.partial(refused, url),
            within=max(0.0, deadline - time.monotonic()),
            every=0.02,
            what=f"{url} refusing the revoked credential",
        )


async def test_any_node_serves_any_company_the_same_answer(
    three_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a company whose shard one node owns
    urls = three_nodes.urls()
    member, owner, others = await company_and_its_owner(three_nodes, http, "ann@example.com")

    # when the same payment is created through its owner and through both other nodes
    answers = []
    for index in [owner, *others]:
        async with http.post(
            f"{urls[index]}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
        ) as r:
            answers.append((r.status, r.headers.copy(), await r.json()))

    # then every node answers alike: status, body shape and the headers the owner sets
    for status, headers, body in answers:
        assert status == 201, body
        assert body["status"] == "PENDING"
        assert headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
        assert headers["X-Request-Id"] == body["requestId"]
        assert headers["Server"] == "mps"
    # and each is readable through every node
    for _, _, body in answers:
        for url in urls:
            async with http.get(
                f"{url}{API}/merchant/payments/{body['id']}", headers=member.headers()
            ) as r:
                assert r.status == 200
                assert (await r.json())["id"] == body["id"]


async def test_one_idempotency_key_sent_to_all_nodes_at_once_creates_one_payment(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    member = await sign_up_on(http, urls[1], "bob@example.com")
    headers = member.headers(**{"Idempotency-Key": "order-1001"})

    async def create(url: str) -> tuple[int, dict[str, Any]]:
        async with http.post(f"{url}{API}/merchant/payments", json=AMOUNT, headers=headers) as r:
            return r.status, await r.json()

    # when nine requests with one key arrive at once, three through each node
    results = await asyncio.gather(*(create(url) for url in urls for _ in range(3)))

    # then all nine got the one payment, and one is stored
    assert [status for status, _ in results] == [201] * 9, results
    assert len({body["id"] for _, body in results}) == 1
    rows = await Db(empty_database_url).fetch(
        "SELECT count(*) AS n FROM payments WHERE company_id = $1", member.company
    )
    assert rows[0]["n"] == 1


async def test_a_logout_on_one_node_is_refused_by_the_others_before_their_caches_revalidate(
    three_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    urls = three_nodes.urls()
    member = await sign_up_on(http, urls[0], "cy@example.com")
    for url in urls:
        async with http.get(f"{url}{API}/auth/me", headers=member.headers()) as r:
            assert r.status == 200  # cached as valid on every node

    async with http.post(f"{urls[2]}{API}/auth/logout", headers=member.headers()) as r:
        assert r.status == 200

    await refused_by_every_node(http, urls, f"{API}/auth/me", member.headers())


async def test_turning_key_access_off_on_one_node_is_refused_by_the_others_before_revalidating(
    three_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a secret key every node has verified, with the company's apiKeyAccess on
    urls = three_nodes.urls()
    member = await sign_up_on(http, urls[0], "di@example.com")
    body = {"name": "backend", "scopes": ["payments:read"]}
    async with http.post(
        f"{urls[0]}{API}/merchant/api-keys", json=body, headers=member.headers()
    ) as r:
        key = {"Authorization": f"Bearer {(await r.json())['key']}"}
    settings = f"{API}/merchant/settings"
    async with http.patch(
        f"{urls[1]}{settings}", json={"apiKeyAccess": True}, headers=member.headers()
    ) as r:
        assert r.status == 200
    for url in urls:
        async with http.get(f"{url}{API}/merchant/payments", headers=key) as r:
            assert r.status == 200, await r.text()

    # when the switch goes off through one node
    async with http.patch(
        f"{urls[2]}{settings}", json={"apiKeyAccess": False}, headers=member.headers()
    ) as r:
        assert r.status == 200

    # then every node refuses the key, told by the node that switched it off
    await refused_by_every_node(http, urls, f"{API}/merchant/payments", key)


async def test_checkout_cancel_and_expiry_racing_on_different_nodes_end_with_one_winner(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    member = await sign_up_on(http, urls[0], "dee@example.com")
    async with http.post(
        f"{urls[0]}{API}/merchant/api-keys",
        json={"name": "sandbox", "scopes": ["payments:write"]},
        headers=member.headers(),
    ) as r:
        assert r.status == 201, await r.text()
        key = (await r.json())["key"]
    db = Db(empty_database_url)
    for attempt in range(6):
        async with http.post(
            f"{urls[attempt % 3]}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
        ) as r:
            assert r.status == 201, await r.text()
            payment = await r.json()

        # when a checkout, a cancel and an expiry race, each through a different node
        racing = [
            http.post(
                f"{urls[attempt % 3]}{API}/checkout/{payment['reference']}/pay",
                json={"card": TEST_CARD},
            ),
            http.post(
                f"{urls[(attempt + 1) % 3]}{API}/merchant/payments/{payment['id']}/cancel",
                headers=member.headers(),
            ),
            http.post(
                f"{urls[(attempt + 2) % 3]}{API}/developer/sandbox/payment.expired",
                json={"paymentId": payment["id"]},
                headers={"Authorization": f"Bearer {key}"},
            ),
        ]
        responses = await asyncio.gather(*racing)
        statuses = [r.status for r in responses]
        for response in responses:
            response.release()

        # then exactly one of them won, and one final event tells of it
        assert sorted(statuses)[:2] == [200, 409] or statuses.count(409) == 2, statuses
        assert sum(1 for s in statuses if s < 300) == 1, statuses
        [row] = await db.fetch("SELECT status FROM payments WHERE id = $1", payment["id"])
        finals = await db.fetch(
            "SELECT type FROM events WHERE data LIKE $1 AND type IN "
            "('payment.completed', 'payment.cancelled', 'payment.expired')",
            f"%{payment['id']}%",
        )
        assert [f["type"] for f in finals] == [FINAL_EVENT[row["status"]]]


async def test_the_shards_of_a_killed_node_move_and_every_acknowledged_create_is_stored(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    member, owner, others = await company_and_its_owner(three_nodes, http, "eve@example.com")
    acknowledged: list[str] = []
    refused: list[int] = []
    stop = asyncio.Event()

    async def creates(url: str, worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            headers = member.headers(**{"Idempotency-Key": f"w{worker}-{n}"})
            for _ in range(40):  # a client retrying its keyed request until it is answered
                try:
                    async with http.post(
                        f"{url}{API}/merchant/payments", json=AMOUNT, headers=headers
                    ) as r:
                        if r.status == 201:
                            acknowledged.append((await r.json())["id"])
                            break
                        refused.append(r.status)
                except aiohttp.ClientError:
                    refused.append(0)
                await asyncio.sleep(0.1)

    # given creates running for the company through the two nodes that do not own it
    workers = [asyncio.ensure_future(creates(urls[i], w)) for w, i in enumerate(others * 2)]
    await wait_until(lambda: len(acknowledged) >= 20, within=30.0)

    # when its owner is killed, and its shards move (within 10 s, or wait_owned fails)
    three_nodes.nodes[owner].kill()
    await asyncio.to_thread(three_nodes.wait_owned, member.company, others, 10.0)
    moved = len(acknowledged)

    # then creates go on through the new owner (the bound only guards against a hang)
    await wait_until(lambda: len(acknowledged) >= moved + 20, within=30.0)
    stop.set()
    await asyncio.gather(*workers)

    # and were only ever refused as unavailable, and every acknowledged one is stored
    assert all(status in (0, 503) for status in refused), refused
    stored = await Db(empty_database_url).fetch(
        "SELECT id FROM payments WHERE company_id = $1", member.company
    )
    assert set(acknowledged) <= {row["id"] for row in stored}
    # and no keyed request was run twice: one payment per acknowledged key, nothing more
    assert len(acknowledged) == len(set(acknowledged)) == len(stored)


async def test_a_paused_owner_loses_its_shards_and_none_of_its_late_writes_commit(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    db = Db(empty_database_url)
    member, owner, others = await company_and_its_owner(three_nodes, http, "fay@example.com")
    shard = shard_of(member.company)
    [[epoch_before]] = await db.fetch("SELECT epoch FROM shard_epochs WHERE shard = $1", shard)
    headers = member.headers(**{"Idempotency-Key": "paused-1"})

    # given the owner paused, with a keyed create sent to it (its kernel accepts the bytes)
    three_nodes.pause(owner)
    late = asyncio.ensure_future(
        http.post(f"{urls[owner]}{API}/merchant/payments", json=AMOUNT, headers=headers)
    )

    # when its shards move to the others (the broker stops hearing its heartbeats), within
    # 30 s or wait_owned fails
    await asyncio.to_thread(three_nodes.wait_owned, member.company, others, 30.0)
    async with http.post(
        f"{urls[others[0]]}{API}/merchant/payments", json=AMOUNT, headers=headers
    ) as r:
        assert r.status == 201, await r.text()
        created = (await r.json())["id"]

    # and it wakes up and answers the request it held
    three_nodes.resume(owner)
    async with await late as r:
        late_status = r.status
        late_body = await r.json()

    # then the shard moved under a new epoch, and the one key made one payment
    [[epoch_after]] = await db.fetch("SELECT epoch FROM shard_epochs WHERE shard = $1", shard)
    assert epoch_after > epoch_before
    rows = await db.fetch("SELECT id FROM payments WHERE company_id = $1", member.company)
    assert [row["id"] for row in rows] == [created]
    assert late_status in (201, 503), late_body
    if late_status == 201:
        assert late_body["id"] == created  # a replay of what the new owner stored
    # and the woken node rejoins without serving a shard someone else owns
    await asyncio.to_thread(three_nodes.wait_balanced, 30.0)
    owned = three_nodes.owned()
    every = [s for shards in owned.values() for s in shards]
    assert sorted(every) == list(range(SHARD_COUNT))


@pytest.fixture
def three_limited_nodes(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> Iterator[LocalCluster]:
    # A tenth of every limit: the standard limit is 60 a minute, reached in a second or two.
    env = {"MPS_RATE_LIMIT_SCALE": "0.1"}
    with LocalCluster(tmp_path, 3, empty_database_url, amqp_url, env=env) as cluster:
        cluster.wait_balanced()
        yield cluster


async def test_the_per_user_limit_holds_across_three_nodes_within_five_percent(
    three_limited_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    urls = three_limited_nodes.urls()
    member = await sign_up_on(http, urls[0], "gus@example.com")
    limit = 60  # 600 a minute, scaled by 0.1

    async def me(url: str) -> int:
        async with http.get(f"{url}{API}/auth/me", headers=member.headers()) as r:
            return r.status

    # when the user's requests are spread evenly over the three nodes, in parallel, until every
    # node refuses
    accepted = 0
    for _ in range(limit):
        statuses = await asyncio.gather(*(me(url) for url in urls for _ in range(2)))
        accepted += statuses.count(200)
        assert set(statuses) <= {200, 429}, statuses
        if statuses.count(429) == len(statuses):
            break

    # then the user got the limit across the cluster, not the limit on each node
    assert limit * 0.9 <= accepted <= limit * 1.05, accepted


async def test_a_rolling_restart_under_load_fails_no_request_and_loses_no_write(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    members = [await sign_up_on(http, urls[i], f"roll{i}@example.com") for i in range(3)]
    acknowledged: list[str] = []
    errors: list[tuple[int, str]] = []
    stop = asyncio.Event()

    async def creates(worker: int) -> None:
        # A client behind a load balancer: a refused or dropped connection is retried on the
        # next node with the same Idempotency-Key, as a balancer retries an unanswered request.
        member = members[worker % 3]
        n = 0
        while not stop.is_set():
            n += 1
            headers = member.headers(**{"Idempotency-Key": f"roll-{worker}-{n}"})
            for attempt in range(30):
                url = urls[(worker + n + attempt) % 3]
                try:
                    async with http.post(
                        f"{url}{API}/merchant/payments", json=AMOUNT, headers=headers
                    ) as r:
                        body = await r.json()
                        if r.status >= 500:
                            errors.append((r.status, body.get("message", "")))
                        elif r.status == 201:
                            acknowledged.append(body["id"])
                        break
                except (aiohttp.ClientConnectionError, aiohttp.ServerDisconnectedError):
                    await asyncio.sleep(0.05)

    workers = [asyncio.ensure_future(creates(w)) for w in range(6)]
    await wait_until(lambda: len(acknowledged) >= 20, within=30.0)

    # when every node in turn is stopped (SIGTERM: it hands its shards over, then exits) and
    # started again, while the load runs
    for index in range(3):
        status = await asyncio.to_thread(three_nodes.nodes[index].stop, 30.0)
        assert status == 0, three_nodes.nodes[index].log_text()[-2000:]
        await asyncio.to_thread(three_nodes.nodes[index].start)
        await asyncio.to_thread(three_nodes.wait_balanced, 20.0)
    restarted = len(acknowledged)
    await wait_until(lambda: len(acknowledged) >= restarted + 20, within=30.0)
    stop.set()
    await asyncio.gather(*workers)

    # then no request failed, and every acknowledged create is stored, once
    assert errors == [], errors[:5]
    assert len(acknowledged) > 50
    stored = await Db(empty_database_url).fetch("SELECT id FROM payments")
    assert sorted(acknowledged) == sorted(row["id"] for row in stored)


async def test_a_joining_node_gets_its_share_within_ten_seconds(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> None:
    cluster = LocalCluster(tmp_path, 3, empty_database_url, amqp_url)
    # given two nodes sharing the shards (the third not started yet)
    third = cluster.nodes.pop()
    with cluster:
        cluster.wait_balanced()
        cluster.nodes.append(third)

        # when the third joins
        third.start()

        # then it holds its share within 10 s of answering (wait_balanced fails past that)
        cluster.wait_balanced(within=10.0)


async def test_payments_that_fall_due_while_their_owner_is_down_are_expired_by_the_new_owner(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    urls = three_nodes.urls()
    db = Db(empty_database_url)
    member, owner, others = await company_and_its_owner(three_nodes, http, "hal@example.com")
    async with http.post(
        f"{urls[owner]}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
    ) as r:
        assert r.status == 201
        payment = await r.json()

    # given its owner killed, and the payment's expiry passed meanwhile (set in storage, as if
    # the payment had been created with a short expiry long ago)
    three_nodes.nodes[owner].kill()
    await db.execute(
        "UPDATE payments SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = $1", payment["id"]
    )

    # when the shard has moved to another node
    await asyncio.to_thread(three_nodes.wait_owned, member.company, others, 10.0)

    # then that node's expiry finds the payment in storage and expires it, once
    async def expired_status() -> bool:
        [row] = await db.fetch("SELECT status FROM payments WHERE id = $1", payment["id"])
        return bool(row["status"] == "EXPIRED")

    await eventually(expired_status, every=0.2, what="the payment expired")
    expired = await db.fetch(
        "SELECT id FROM events WHERE type = 'payment.expired' AND data LIKE $1",
        f"%{payment['id']}%",
    )
    assert len(expired) == 1


async def test_refunds_sent_to_every_node_at_once_never_exceed_the_payment(
    three_nodes: LocalCluster, http: aiohttp.ClientSession, empty_database_url: str
) -> None:
    # given a paid payment of 5000
    urls = three_nodes.urls()
    member = await sign_up_on(http, urls[0], "refunds@example.com")
    async with http.post(
        f"{urls[1]}{API}/merchant/payments",
        json={"amountMinor": "5000", "currency": "USD"},
        headers=member.headers(),
    ) as r:
        payment = await r.json()
    async with http.post(
        f"{urls[2]}{API}/checkout/{payment['reference']}/pay", json={"card": TEST_CARD}
    ) as r:
        assert r.status == 200, await r.text()

    async def refund(url: str) -> int:
        body = {"paymentId": payment["id"], "amountMinor": "200"}
        async with http.post(
            f"{url}{API}/merchant/refunds", json=body, headers=member.headers()
        ) as r:
            return r.status

    # when 30 refunds of 200 (6000 in all) arrive at once, ten through each node
    statuses = await asyncio.gather(*(refund(url) for url in urls for _ in range(10)))

    # then exactly 25 were made, every node shows the same balance, and the ledger balances
    assert sorted(statuses) == [201] * 25 + [409] * 5, statuses
    for url in urls:
        async with http.get(
            f"{url}{API}/merchant/balance", params={"currency": "USD"}, headers=member.headers()
        ) as r:
            shown = await r.json()
        assert (shown["availableMinor"], shown["reservedMinor"]) == ("0", "5000"), shown
    db = Db(empty_database_url)
    [total] = await db.fetch("SELECT COALESCE(SUM(amount_minor), 0) AS n FROM ledger_postings")
    assert total["n"] == 0


async def test_a_kyc_upload_through_any_node_is_stored_by_the_owner_and_reviewed_there(
    tmp_path: Path, empty_database_url: str, amqp_url: str, http: aiohttp.ClientSession
) -> None:
    # given three nodes sharing one object store (as they would share a bucket)
    shared = {"MPS_OBJECT_STORAGE_URL": (tmp_path / "objects").as_uri()}
    with LocalCluster(tmp_path, 3, empty_database_url, amqp_url, env=shared) as cluster:
        cluster.wait_balanced()
        urls = cluster.urls()
        member, _, others = await company_and_its_owner(cluster, http, "kyc@example.com")
        first, second = (urls[i] for i in others)
        async with http.post(
            f"{first}{API}/auth/session/mode", json={"mode": "live"}, headers=member.headers()
        ) as r:
            assert r.status == 200, await r.text()
            live = NodeMember((await r.json())["sessionToken"], member.company)
        content = b"%PDF-1.4\n" + bytes(range(256)) * 4000 + b"\n%%EOF\n"

        # when the document is uploaded through a node that does not own the company
        form = aiohttp.FormData()
        form.add_field("type", "passport")
        form.add_field("file", content, filename="passport.pdf")
        async with http.post(
            f"{first}{API}/merchant/kyc/documents", data=form, headers=live.headers()
        ) as r:
            assert r.status == 201, await r.text()
            document = await r.json()
        # and the operator approves from the command line
        review = await asyncio.create_subprocess_exec(
            sys.executable, "run.py", "kyc", "--database-url", empty_database_url, "review",
            member.company, "--approve", "--operator", "ops", "--wait", "30",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await review.communicate()

        # then the other non-owner serves the same bytes and the verified status
        assert review.returncode == 0, err.decode()
        async with http.get(
            f"{second}{API}/merchant/kyc/documents/{document['id']}/file", headers=live.headers()
        ) as r:
            assert r.status == 200 and await r.read() == content
        async with http.get(f"{second}{API}/merchant/kyc", headers=live.headers()) as r:
            assert (await r.json())["status"] == "VERIFIED"
        async with http.post(
            f"{second}{API}/merchant/payments", json=AMOUNT, headers=live.headers()
        ) as r:
            assert r.status == 201, await r.text()
