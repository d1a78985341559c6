"""Requests passed to the owner of their company's shard (mps.http.forwarded, mps.http.passing):
the owner serves them as the client's own requests. The first node counted the rate limits and
logs the API key's use, so the owner does neither again; the owner sees the client's address and
the request id the first node saw; a request passed to a node that no longer owns the shard is
refused rather than passed on a second time; and the headers that carry all this mean nothing
but on a node's peer listener, signed with the cluster's secret, which refuses all else.

The tests that call a node's peer listener themselves run on two in-process nodes. The others
run on two real run.py nodes, one cluster for the module, with a tenth of every rate limit;
their clients connect from addresses of their own on loopback (127.0.0.2, 127.0.0.3, ...: Linux
answers on all of 127.0.0.0/8), so each test's per-IP buckets are its own.
"""

from __future__ import annotations

import asyncio
import io
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from mps.cluster.forwarding import FORWARDED_FOR, FORWARDED_REQUEST_ID, PEER_SIGNATURE, Passed
from mps.cluster.node import ClusterNode
from mps.cluster.peers import EXPIRED, REFUSED, SHARD_MOVED, PeerClient, PeerKey
from mps.domain.ids import request_id
from mps.domain.shards import SHARD_COUNT, shard_of
from mps.http.access_log import BatchedAccessLog
from mps.http.keys import SERVICES
from tests.cluster import (
    LocalCluster,
    NodeMember,
    balanced_cluster,
    delete_cluster_queues,
    new_cluster_name,
    serve_passed_requests,
    sign_up_on,
)
from tests.helpers import TEST_CARD, assert_envelope

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
# Every limit is a tenth of its usual count on the module's cluster (MPS_RATE_LIMIT_SCALE).
SCALE = 0.1
STANDARD_LIMIT = 60  # per user, across the cluster: 600 a minute, scaled
CHECKOUT_LIMIT = 60  # per IP, on the node the shopper reaches: 600 a minute in development
# How long a fact may take to become true: the key log is written within a second.
WITHIN = 10.0


# ---------------------------------------------------------------------------------------------
# Two in-process nodes: the tests that need a node's secret and its private socket. First in the
# module, so they are done before the module's run.py nodes start: four nodes at once hold more
# database connections than a busy test server may have left.


@dataclass
class Node:
    client: TestClient[Any, Any]
    # Its peer listener, "host:port".
    peer: str
    # The node's access log, as run.py writes it (text lines), into a string.
    access_log: type[BatchedAccessLog]

    async def access_lines_ending(self, text: str) -> list[str]:
        """The access log's lines ending with `text`, once there is one: aiohttp logs a request
        after sending its answer, so the client may have it first."""
        deadline = time.monotonic() + WITHIN
        while True:
            self.access_log.flush()
            stream = self.access_log.stream
            assert isinstance(stream, io.StringIO)
            lines = [line for line in stream.getvalue().splitlines() if line.endswith(text)]
            if lines:
                return lines
            assert time.monotonic() < deadline, f"no access log line ends with {text}"
            await asyncio.sleep(0.01)

    @property
    def cluster(self) -> ClusterNode:
        cluster = self.client.app[SERVICES].cluster
        assert cluster is not None
        return cluster

    async def owned(self) -> list[int]:
        response = await self.client.get(f"{API}/health")
        shards: list[int] = (await response.json())["node"].get("ownedShards", [])
        return shards


@pytest.fixture
def node_settings() -> dict[str, Any]:
    """Settings the in-process nodes run with beyond the cluster's own (a test may set some)."""
    return {}


@pytest.fixture
async def in_process_nodes(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    amqp_url: str,
    node_settings: dict[str, Any],
) -> AsyncIterator[tuple[Node, Node]]:
    """Two nodes of one cluster on one database and one RabbitMQ, each owning its share."""
    name = new_cluster_name()
    nodes = []
    for index in range(2):
        app = make_app(
            broker_url=amqp_url, cluster_name=name, node_id=f"node{index + 1}", **node_settings
        )
        access_log = BatchedAccessLog.configured()
        access_log.stream = io.StringIO()
        server = TestServer(app)
        # Started here: aiohttp_client hands its server no runner settings.
        await server.start_server(access_log_class=access_log)
        client = await aiohttp_client(server)
        nodes.append(Node(client, await serve_passed_requests(client), access_log))
    # Balanced, so no shard moves while the test runs: each node owns half of them.
    deadline = time.monotonic() + 20
    while True:
        owned = await asyncio.gather(*(node.owned() for node in nodes))
        if sorted(len(shards) for shards in owned) == [SHARD_COUNT // 2] * 2:
            break
        assert time.monotonic() < deadline, f"the nodes did not share the shards: {owned}"
        await asyncio.sleep(0.1)
    yield nodes[0], nodes[1]
    for node in nodes:
        await node.client.close()
    delete_cluster_queues(amqp_url, name)


async def _company_and_its_other_node(nodes: tuple[Node, Node]) -> tuple[NodeMember, Node, Node]:
    """A member of a new company, the node owning its shard and the other node."""
    first, second = nodes
    # Sign-up picks a shard the node serving it owns.
    response = await first.client.post(
        f"{API}/auth/signup", json={"companyName": "Acme", "email": "fay@example.com"}
    )
    assert response.status == 201, await response.text()
    signup = await response.json()
    mailbox = await first.client.get(f"{API}/dev/mailbox", params={"to": "fay@example.com"})
    code = (await mailbox.json())["data"][0]["otp"]
    response = await first.client.post(
        f"{API}/auth/otp/verify", json={"loginId": signup["loginId"], "code": code}
    )
    assert response.status == 200, await response.text()
    member = NodeMember((await response.json())["sessionToken"], signup["companyId"])
    owner, other = (first, second) if await _owns(first, member) else (second, first)
    assert not await _owns(other, member)
    return member, owner, other


async def _owns(node: Node, member: NodeMember) -> bool:
    return shard_of(member.company) in await node.owned()


def _create(member: NodeMember, rid: str) -> Passed:
    return Passed(
        method="POST",
        path=f"{API}/merchant/payments",
        headers=[("Authorization", f"Bearer {member.token}"), ("Content-Type", "application/json")],
        body=orjson.dumps(AMOUNT),
        client="203.0.113.9",
        request_id=rid,
    )


async def _payments(node: Node, member: NodeMember) -> list[dict[str, Any]]:
    response = await node.client.get(f"{API}/merchant/payments", headers=member.headers())
    assert response.status == 200, await response.text()
    payments: list[dict[str, Any]] = (await response.json())["data"]
    return payments


# The sign-in limits scaled down (guesses per email: 6 in 15 minutes), so a guess counted twice
# shows in a handful of requests.
@pytest.mark.parametrize("node_settings", [{"rate_limit_scale": 0.06}])
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_code_guess_passed_to_the_owner_counts_once_against_the_email(
    in_process_nodes: tuple[Node, Node],
) -> None:
    # given a member (their sign-up spent one try of the email's six) whose company the other
    # node does not own, and a login of theirs started there
    _member, _owner, other = await _company_and_its_other_node(in_process_nodes)
    started = await other.client.post(f"{API}/auth/login", json={"email": "fay@example.com"})
    assert started.status == 200, await started.text()
    login_id = (await started.json())["loginId"]

    # when four wrong codes are tried through the node that passes them to the owner
    answers = [
        await other.client.post(
            f"{API}/auth/otp/verify", json={"loginId": login_id, "code": "000000"}
        )
        for _ in range(4)
    ]

    # then each is counted once (five of six): all four are wrong codes, none is refused for
    # too many tries, as the third would be if the first node counted each try too
    for answer in answers:
        assert_envelope(await answer.json(), 400, "invalid_code")


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_passed_to_a_node_that_no_longer_owns_its_shard_is_refused_not_passed_on(
    in_process_nodes: tuple[Node, Node],
) -> None:
    # given a company whose shard one node owns
    member, owner, other = await _company_and_its_other_node(in_process_nodes)
    rid = request_id()

    # when a create reaches the other node's peer listener as a request passed to it (as when
    # the shard moved away between the first node's choice and the request's arrival)
    answer, not_run = await owner.cluster.peers.exchange(
        other.peer, _create(member, rid), within=WITHIN
    )

    # then it is refused, under the first node's request id, and the answer says it did not
    # run there (so the asking node passes it through the broker instead)
    assert not_run == SHARD_MOVED
    body = orjson.loads(answer.body)
    assert answer.status == 503, body
    assert body["requestId"] == rid
    assert ("Retry-After", "1") in answer.headers
    # and nothing was created by the owner
    assert await _payments(owner, member) == []
    # and the node logged it as the client's request, from the client's address
    [line] = await other.access_lines_ending(rid)
    assert " 203.0.113.9 POST /api/v1/merchant/payments 503 " in line, line


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_passed_after_its_asking_node_gave_up_is_not_run(
    in_process_nodes: tuple[Node, Node],
) -> None:
    # given a company whose shard one node owns, and a create passed to it whose asking node
    # gave up on it a moment ago (its client was answered 503 already)
    member, owner, other = await _company_and_its_other_node(in_process_nodes)
    late = replace(_create(member, request_id()), deadline_ms=int(time.time() * 1000) - 1)

    # when it reaches the owner's peer listener
    answer, not_run = await other.cluster.peers.exchange(owner.peer, late, within=WITHIN)

    # then the owner does not start it, and says so
    assert not_run == EXPIRED
    assert answer.status == 503
    assert await _payments(owner, member) == []
    # and the same request within its deadline is run
    timely = replace(late, request_id=request_id(), deadline_ms=int(time.time() * 1000) + 10_000)
    answer, not_run = await other.cluster.peers.exchange(owner.peer, timely, within=WITHIN)
    assert (answer.status, not_run) == (201, "")
    assert len(await _payments(owner, member)) == 1


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_peer_signature_counts_only_on_the_peer_listener(
    in_process_nodes: tuple[Node, Node],
) -> None:
    # given a company whose shard one node owns
    member, owner, other = await _company_and_its_other_node(in_process_nodes)

    # when a request signed with the cluster's secret comes to the other node's public port
    rid = request_id()
    signed = other.cluster.peer_key.sign_request(_create(member, rid))
    over_public = await other.client.post(
        f"{API}/merchant/payments",
        json=AMOUNT,
        headers=member.headers(**{PEER_SIGNATURE: signed, FORWARDED_REQUEST_ID: rid}),
    )

    # then it is an ordinary request: passed on to the owner, which creates the payment, under
    # a request id of the node's own
    assert over_public.status == 201, await over_public.text()
    assert over_public.headers["X-Request-Id"] != rid
    assert len(await _payments(owner, member)) == 1


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_the_peer_listener_refuses_a_request_unsigned_wrongly_signed_stale_or_replayed(
    in_process_nodes: tuple[Node, Node],
) -> None:
    # given a company whose shard one node owns, and a client that is not of the cluster
    member, owner, _other = await _company_and_its_other_node(in_process_nodes)
    stranger = PeerClient(PeerKey(b"not-the-cluster-secret-0123456789abcdef"))
    ours = owner.cluster.peers
    try:
        # when creates reach the owner's peer listener: unsigned, signed with another secret,
        # signed with the cluster's a minute ago, and one rightly signed sent twice
        unsigned_create = _create(member, request_id())
        unsigned = await stranger.exchange(owner.peer, unsigned_create, within=WITHIN, signature="")
        wrong = await stranger.exchange(owner.peer, _create(member, request_id()), within=WITHIN)
        stale_create = _create(member, request_id())
        stale = await ours.exchange(
            owner.peer,
            stale_create,
            within=WITHIN,
            signature=ours.key.sign_request(stale_create, at=int(time.time()) - 60),
        )
        once = _create(member, request_id())
        signature = ours.key.sign_request(once)
        first = await ours.exchange(owner.peer, once, within=WITHIN, signature=signature)
        replayed = await ours.exchange(owner.peer, once, within=WITHIN, signature=signature)
    finally:
        await stranger.close()

    # then all but the first rightly signed one are refused as not run, with 403
    for answer, not_run in (unsigned, wrong, stale, replayed):
        assert (answer.status, not_run) == (403, REFUSED), answer
    assert first[0].status == 201, first[0].body
    assert first[1] == ""
    # and only that one created a payment
    assert [p["id"] for p in await _payments(owner, member)] == [orjson.loads(first[0].body)["id"]]


# ---------------------------------------------------------------------------------------------
# Two run.py nodes, one cluster for the module


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    env = {"MPS_RATE_LIMIT_SCALE": str(SCALE)}
    with balanced_cluster(tmp_path_factory.mktemp("passing"), 2, env) as cluster:
        yield cluster


@asynccontextmanager
async def client_at(address: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A client whose connections come from `address` (any 127.x.y.z is this machine)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    timeout = aiohttp.ClientTimeout(total=40)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        yield session


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with client_at("127.0.0.1") as session:
        yield session


def owner_and_other(cluster: LocalCluster, member: NodeMember) -> tuple[str, str]:
    """The base URLs of the node that owns the member's company and of the other node."""
    owner = cluster.owner_of(member.company)
    urls = cluster.urls()
    return urls[owner], urls[1 - owner]


async def secret_key(http: aiohttp.ClientSession, base: str, member: NodeMember) -> tuple[str, str]:
    """A secret key (its id and the key) that may create and list payments."""
    async with http.patch(
        f"{base}{API}/merchant/settings", json={"apiKeyAccess": True}, headers=member.headers()
    ) as r:
        assert r.status == 200, await r.text()
    body = {"name": "backend", "scopes": ["payments:read", "payments:write"]}
    async with http.post(
        f"{base}{API}/merchant/api-keys", json=body, headers=member.headers()
    ) as r:
        assert r.status == 201, await r.text()
        created = await r.json()
    return created["id"], created["key"]


async def key_log(
    http: aiohttp.ClientSession, cluster: LocalCluster, member: NodeMember, key_id: str, key: str
) -> list[dict[str, Any]]:
    """The key's request log once both nodes have written what they recorded so far: each node
    writes its rows in the order it recorded them, so once a read the key makes on each node
    shows, so does everything before it. Those reads are left out."""
    marks = set()
    for base in cluster.urls():
        async with http.get(
            f"{base}{API}/merchant/payments", headers={"Authorization": f"Bearer {key}"}
        ) as r:
            assert r.status == 200, await r.text()
            marks.add(r.headers["X-Request-Id"])
    deadline = time.monotonic() + WITHIN
    while True:
        async with http.get(
            f"{cluster.urls()[0]}{API}/merchant/api-keys/{key_id}/logs",
            params={"limit": "100"},
            headers=member.headers(),
        ) as r:
            assert r.status == 200, await r.text()
            rows: list[dict[str, Any]] = (await r.json())["data"]
        if marks <= {row["requestId"] for row in rows}:
            return [row for row in rows if row["requestId"] not in marks]
        assert time.monotonic() < deadline, f"the key log lacks {marks}: {rows}"
        await asyncio.sleep(0.05)


async def test_a_create_passed_to_the_owner_counts_once_against_the_rate_limit(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a member of a company whose shard the other node owns
    member = await sign_up_on(http, two_nodes.urls()[0], "ann@example.com")
    _owner, other = owner_and_other(two_nodes, member)
    # Two thirds of the standard limit: counted on both nodes, the limit is reached halfway.
    creates = STANDARD_LIMIT * 2 // 3

    # when the member creates that many payments through the node that does not own it
    statuses, policies = [], set()
    for _ in range(creates):
        async with http.post(
            f"{other}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
        ) as r:
            statuses.append(r.status)
            policies.add(r.headers.get("RateLimit-Policy"))

    # then every one is created: each counted once, by the node the member asked
    assert statuses == [201] * creates, statuses
    assert policies == {f'"standard";q={STANDARD_LIMIT};w=60'}


async def test_checkout_pays_passed_to_the_owner_count_each_shopper_address_on_its_own(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a payment link of a company whose shard the other node owns
    member = await sign_up_on(http, two_nodes.urls()[0], "bo@example.com")
    owner, other = owner_and_other(two_nodes, member)
    async with http.post(
        f"{owner}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
    ) as r:
        assert r.status == 201, await r.text()
        reference = (await r.json())["reference"]
    pay = f"{other}{API}/checkout/{reference}/pay"

    # when one shopper pays through the other node until refused (the link is paid once; the
    # owner answers the later attempts all the same, as a conflict)
    async with client_at("127.0.0.2") as first_shopper:
        answered: list[int] = []
        while len(answered) <= CHECKOUT_LIMIT:
            async with first_shopper.post(pay, json={"card": TEST_CARD}) as r:
                answered.append(r.status)
                if r.status == 429:
                    break
    # and then another shopper pays through the same node
    async with (
        client_at("127.0.0.3") as second_shopper,
        second_shopper.post(pay, json={"card": TEST_CARD}) as r,
    ):
        second = r.status
        second_limit = r.headers.get("RateLimit")

    # then the first shopper got the per-IP limit, all of it
    assert 429 not in answered[:-1], answered
    assert len(answered) == CHECKOUT_LIMIT + 1 and answered[-1] == 429, answered
    # and the second shopper's address is a bucket of its own, on both nodes: the owner's
    # answer comes back (paid already), counted once, by the node the shopper reached
    assert second != 429
    assert second_limit is not None
    assert second_limit.startswith(f'"checkout";r={CHECKOUT_LIMIT - 1};'), second_limit


async def test_the_owner_sees_the_client_address_of_a_request_passed_to_it(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a member of a company whose shard the other node owns
    member = await sign_up_on(http, two_nodes.urls()[0], "cy@example.com")
    owner, other = owner_and_other(two_nodes, member)

    # when the member changes a setting through the other node, from an address of their own
    async with (
        client_at("127.0.0.4") as browser,
        browser.patch(
            f"{other}{API}/merchant/settings", json={"name": "Acme Two"}, headers=member.headers()
        ) as r,
    ):
        assert r.status == 200, await r.text()
        asked = r.headers["X-Request-Id"]

    # then the owner, which made the change, recorded the member's address and request id
    async with http.get(
        f"{owner}{API}/team/audit",
        params={"action": "settings.updated"},
        headers=member.headers(),
    ) as r:
        assert r.status == 200, await r.text()
        [entry] = (await r.json())["data"]
    assert entry["ip"] == "127.0.0.4", entry
    assert entry["requestId"] == asked


async def test_api_key_use_passed_to_the_owner_is_logged_once(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a secret key of a company whose shard the other node owns
    member = await sign_up_on(http, two_nodes.urls()[0], "di@example.com")
    owner, other = owner_and_other(two_nodes, member)
    key_id, key = await secret_key(http, owner, member)
    auth = {"Authorization": f"Bearer {key}"}

    # when the key creates a payment through the other node
    async with (
        client_at("127.0.0.5") as backend,
        backend.post(f"{other}{API}/merchant/payments", json=AMOUNT, headers=auth) as r,
    ):
        assert r.status == 201, await r.text()
        passed = r.headers["X-Request-Id"]

    # then the create is in the key's log once, as the node the client asked saw it
    rows = await key_log(http, two_nodes, member, key_id, key)
    assert [(row["method"], row["requestId"], row["ip"], row["statusCode"]) for row in rows] == [
        ("POST", passed, "127.0.0.5", 201)
    ], rows


async def test_forwarded_headers_from_an_ordinary_client_have_no_effect(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a secret key of a company whose shard one of the nodes owns
    member = await sign_up_on(http, two_nodes.urls()[0], "ed@example.com")
    owner, other = owner_and_other(two_nodes, member)
    key_id, key = await secret_key(http, owner, member)
    forged = {
        "Authorization": f"Bearer {key}",
        FORWARDED_FOR: "203.0.113.9",
        FORWARDED_REQUEST_ID: "req_forged",
    }

    # when a client sends the headers of a passed request, to the other node and to the owner,
    # with a secret of its own (one not even ASCII, for the owner)
    answers = []
    async with client_at("127.0.0.6") as client:
        for base, secret in ((other, secrets.token_urlsafe(32)), (owner, "1 s\u00e9same")):
            async with client.post(
                f"{base}{API}/merchant/payments",
                json=AMOUNT,
                headers={**forged, PEER_SIGNATURE: secret},
            ) as r:
                assert r.status == 201, await r.text()
                answers.append(r.headers.copy())

    # then both are counted against the key's limit, each under a request id of the node's own
    for headers in answers:
        assert headers["RateLimit-Policy"].startswith('"developer"'), headers
        assert headers["X-Request-Id"] != "req_forged"
    # and logged once each, from the client's own address
    rows = await key_log(http, two_nodes, member, key_id, key)
    assert sorted((row["requestId"], row["ip"]) for row in rows) == sorted(
        (headers["X-Request-Id"], "127.0.0.6") for headers in answers
    ), rows


async def test_moving_a_session_to_a_company_on_another_node_opens_one_session_and_ends_the_old(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    # given a person in two companies whose shards live on different nodes
    urls = two_nodes.urls()
    email = f"mover-{secrets.token_hex(4)}@example.com"
    first = await sign_up_on(http, urls[0], email)
    second = None
    for _ in range(16):
        candidate = await sign_up_on(http, urls[1], email)
        if two_nodes.owner_of(candidate.company) != two_nodes.owner_of(first.company):
            second = candidate
            break
    assert second is not None, "no company of theirs landed on the other node"
    # when the session moves, asked on the node that owns the company it leaves
    leaving = urls[two_nodes.owner_of(first.company)]
    async with http.post(
        f"{leaving}{API}/auth/session/company",
        json={"companyId": second.company},
        headers=first.headers(),
    ) as r:
        moved = await r.json()
        assert r.status == 200, moved
    # then the new token works and the old one is refused on every node, saying why
    assert moved["company"]["id"] == second.company and moved["previousSessionEnded"] is True
    new = {"Authorization": f"Bearer {moved['sessionToken']}"}
    for url in urls:
        async with http.get(f"{url}{API}/auth/me", headers=new) as r:
            assert r.status == 200 and (await r.json())["company"]["id"] == second.company
        async with http.get(f"{url}{API}/auth/me", headers=first.headers()) as r:
            refused = await r.json()
            assert r.status == 401 and "another company" in refused["message"], refused
    # and exactly one session was opened for the move: its sign-up's and the move's
    async with http.get(
        f"{leaving}{API}/team/audit", params={"action": "session.opened"}, headers=new
    ) as r:
        opened = (await r.json())["data"]
        assert r.status == 200, opened
    assert len(opened) == 2, opened
