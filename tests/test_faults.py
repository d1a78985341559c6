"""Every fault of a service we depend on answers 503 with Retry-After, never 500, and the node
serves again by itself once the fault is over (no restart).

The faults are made the way an outage makes them, on the real servers: Postgres sessions ended
with `pg_terminate_backend` (on a database of the test's own, so nobody else's sessions are
touched), a Postgres server of the test's own stopped and started again, a node's broker
connections closed by RabbitMQ (`rabbitmqctl close_connection`), an owner node paused with
SIGSTOP. Each test waits on facts (a lock waiter in `pg_stat_activity`, an ask in flight, a
status) with a deadline, never on a fixed sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import aiormq.exceptions
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, make_mocked_request

from mps.cluster.forwarding import Passed
from mps.cluster.node import HTTP, ClusterNode
from mps.errors import ServiceError, ShardMoved, Unavailable
from mps.http.keys import SERVICES
from mps.http.pipeline import to_service_error
from mps.http.render import error_response, json_response
from mps.http.statuses import ProtocolError, status_of
from mps.http.versions import CURRENT
from tests.cluster import (
    ENCRYPTION_KEY,
    SESSION_SECRET,
    LocalCluster,
    OwnClusterNode,
    in_halves,
    serve_passed_requests,
    sign_up_on,
)
from tests.conftest import PG_URL, postgres_admin
from tests.helpers import Member, create_payment, eventually, free_port, sign_up

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
T = TypeVar("T")


@dataclass(frozen=True)
class Answer:
    status: int
    retry_after: str | None
    body: str


async def answer(response: aiohttp.ClientResponse) -> Answer:
    return Answer(response.status, response.headers.get("Retry-After"), await response.text())


async def listed(client: TestClient[Any, Any], member: Member) -> Answer:
    """The answer to reading the member's payments (200 when served)."""
    return await answer(await client.get(f"{API}/merchant/payments", headers=member.headers))


async def created(client: TestClient[Any, Any], member: Member, key: str | None = None) -> Answer:
    """The answer to creating a payment for the member, under Idempotency-Key `key` if given
    (201 when served)."""
    headers = member.headers if key is None else {**member.headers, "Idempotency-Key": key}
    return await answer(await client.post(f"{API}/merchant/payments", json=AMOUNT, headers=headers))


def assert_retry_in_a_second(refused: Answer) -> None:
    """A 503 that tells the client to retry in a second: the answer to a fault, never a 500."""
    assert refused.status == 503, refused
    assert refused.retry_after == "1"


def assert_fault_answers(answers: list[Answer], served: int) -> None:
    """Each answer served (`served`) or 503 with a Retry-After of whole seconds; none 500."""
    for a in answers:
        assert a.status in (served, 503), a
        if a.status == 503:
            assert a.retry_after is not None and int(a.retry_after) >= 1, a


async def created_on_retry(
    asker: TestClient[Any, Any], member: Member, key: str, what: str
) -> None:
    """Send the create under `key` until it is served (201); every answer on the way is a 503
    with Retry-After, none a 500."""
    answers: list[Answer] = []

    async def retried() -> bool:
        answers.append(await created(asker, member, key))
        return answers[-1].status == 201

    await eventually(retried, within=20, what=what)
    assert_fault_answers(answers, served=201)


# Postgres: a database of the test's own, whose sessions the test may end.


@dataclass
class OwnDatabase:
    url: str
    name: str
    admin: asyncpg.Connection  # on the server's default database, never terminated here

    async def terminate_sessions(self, *, spare: int | None = None) -> set[int]:
        """End every session of the database, as an operator would (the pids ended)."""
        rows = await self.admin.fetch(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> $2",
            self.name,
            spare or 0,
        )
        return {r["pid"] for r in rows}

    async def lock_waiters(self, *, besides: frozenset[int] | set[int] = frozenset()) -> set[int]:
        """The sessions of the database waiting on a lock, but `besides`."""
        rows = await self.admin.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
            self.name,
        )
        return {r["pid"] for r in rows} - besides


@pytest.fixture
async def own_database() -> AsyncIterator[OwnDatabase]:
    name = f"mps_faults_{secrets.token_hex(4)}"
    async with postgres_admin() as admin:
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
            server = PG_URL.rsplit("/", 1)[0]
            yield OwnDatabase(f"{server}/{name}", name, admin)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def on_own_database(
    own_database: OwnDatabase,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
) -> tuple[TestClient[Any, Any], Member]:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(database_url=own_database.url))
    member = await sign_up(client)
    await create_payment(client, member)
    return client, member


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_reads_right_after_the_database_ends_every_idle_session_are_served_never_500(
    own_database: OwnDatabase, on_own_database: tuple[TestClient[Any, Any], Member]
) -> None:
    client, member = on_own_database

    for _ in range(5):
        # given every session of the database ended by the server while it sat idle
        await own_database.terminate_sessions()

        # when reads arrive at once, before the node could notice
        answers = await asyncio.gather(*(listed(client, member) for _ in range(20)))

        # then each is served from a new session: the client never sees the fault
        assert [a.status for a in answers] == [200] * 20, answers


@contextlib.asynccontextmanager
async def _payments_locked(own_database: OwnDatabase) -> AsyncIterator[asyncpg.Connection]:
    """A session of its own holding the payments table in ACCESS EXCLUSIVE mode, inside its
    transaction, until the block ends: what reaches that table waits meanwhile."""
    locker = await asyncpg.connect(own_database.url)
    try:
        held = locker.transaction()
        await held.start()
        await locker.execute("LOCK TABLE payments IN ACCESS EXCLUSIVE MODE")
        yield locker
    finally:
        await locker.close()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_read_whose_sessions_keep_being_ended_answers_503_with_retry_after_then_serves(
    own_database: OwnDatabase, on_own_database: tuple[TestClient[Any, Any], Member]
) -> None:
    client, member = on_own_database
    # given a read held by a lock, so that its session is ended mid-query
    async with _payments_locked(own_database) as locker:
        read = asyncio.ensure_future(listed(client, member))
        first = await eventually(
            own_database.lock_waiters, within=5, what="the read waits on the lock"
        )

        # when the server ends its session, and then the new session the read is retried on
        ended = await own_database.terminate_sessions(spare=locker.get_server_pid())
        await eventually(
            lambda: own_database.lock_waiters(besides=first | ended), within=5, what="a retry"
        )
        await own_database.terminate_sessions(spare=locker.get_server_pid())

        # then the read answers 503 with Retry-After, not 500
        assert_retry_in_a_second(await read)

    # and once the server serves again, so does the node, without a restart
    served = await listed(client, member)
    assert served.status == 200, served


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_write_whose_session_is_ended_mid_commit_answers_503_with_retry_after_then_writes(
    own_database: OwnDatabase, on_own_database: tuple[TestClient[Any, Any], Member]
) -> None:
    client, member = on_own_database
    # given a group commit held by a lock, inside its transaction
    async with _payments_locked(own_database) as locker:
        create = asyncio.ensure_future(created(client, member))
        await eventually(own_database.lock_waiters, within=5, what="the commit waits on the lock")

        # when the server ends the writer's session (and every other one)
        await own_database.terminate_sessions(spare=locker.get_server_pid())

        # then the create answers 503 with Retry-After, not 500
        assert_retry_in_a_second(await create)

    # and the next create is committed on a new session, without a restart
    committed = await created(client, member)
    assert committed.status == 201, committed


# Postgres: a server of the test's own, to stop and start again.


@dataclass
class OwnServer:
    folder: Path
    port: int
    bindir: str

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [f"{self.bindir}/pg_ctl", "-D", str(self.folder / "data"), *args],
            check=True,
            capture_output=True,
            user="postgres",
            cwd=self.folder,
            timeout=60,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c unix_socket_directories={self.folder}"
        )
        self._pg_ctl("-w", "-l", str(self.folder / "server.log"), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("-w", "-m", mode, "stop")


@pytest.fixture
def own_server() -> Iterator[OwnServer]:
    """A throwaway Postgres server: initdb into a folder of its own, then started (about a
    second). Postgres refuses to run as root, so it runs as the `postgres` user."""
    bindirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        user = None
    if not bindirs or user is None or os.geteuid() != 0:
        pytest.skip("needs root, a postgres user and Postgres binaries to run a server")
    # Short and outside pytest's owner-only folders: the server's user must reach it, and a
    # socket's path may not be longer than about 100 bytes.
    folder = Path(tempfile.mkdtemp(prefix="mps-pg-"))
    os.chown(folder, user.pw_uid, user.pw_gid)
    server = OwnServer(folder, free_port(), bindirs[-1])
    try:
        subprocess.run(
            [f"{server.bindir}/initdb", "-D", str(folder / "data"), "-A", "trust", "-N"],
            check=True,
            capture_output=True,
            user="postgres",
            cwd=folder,
            timeout=60,
        )
        server.start()
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # it is not running
            server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_postgres_restart_answers_503_with_retry_after_while_down_then_serves_by_itself(
    own_server: OwnServer,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(database_url=own_server.url))
    member = await sign_up(client)
    await create_payment(client, member)

    # when the database server stops
    await asyncio.to_thread(own_server.stop)

    # then reads and writes answer 503 with Retry-After while it is down
    down = [await listed(client, member), await created(client, member)]
    assert [a.status for a in down] == [503, 503], down
    assert_fault_answers(down, served=0)

    # and once it is back, the same node serves both again, without a restart
    await asyncio.to_thread(own_server.start)
    answers: list[Answer] = []

    async def served() -> bool:
        answers.extend([await listed(client, member), await created(client, member)])
        return [a.status for a in answers[-2:]] == [200, 201]

    await eventually(served, within=15, what="reads and writes served after the restart")
    assert_fault_answers(answers[::2], served=200)
    assert_fault_answers(answers[1::2], served=201)


# RabbitMQ: a node's connections closed by the broker.


def broker_ports(pid: int) -> set[int]:
    """The local ports of process `pid`'s TCP connections to the broker (Linux's /proc)."""
    sockets = set()
    for descriptor in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith("socket:"):
            sockets.add(target)
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote, inode = fields[2], fields[9]
            if int(remote.rsplit(":", 1)[1], 16) == 5672 and f"socket:[{inode}]" in sockets:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


_LISTED = ("pid", "peer_port", "client_properties")


def close_broker_connections(*, pid: int | None = None, named: str | None = None) -> int:
    """Have RabbitMQ close every connection of process `pid`, or the one named `named`
    (CONNECTION_FORCED), as an operator's `rabbitmqctl close_connection` or a broker's restart
    would; how many it closed."""
    ports = broker_ports(pid) if pid is not None else set()
    listed = subprocess.run(
        [*("rabbitmqctl", "list_connections", "-q", "--no-table-headers"), *_LISTED],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    closed = 0
    for line in listed.splitlines():
        connection, port, properties = line.split("\t", 2)
        if int(port) in ports or f'{{"connection_name","{named}"}}' in properties:
            subprocess.run(
                ["rabbitmqctl", "close_connection", connection, "closed by tests/test_faults.py"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            closed += 1
    return closed


@pytest.fixture
def rabbitmqctl(amqp_url: str) -> None:
    if shutil.which("rabbitmqctl") is None or os.geteuid() != 0:
        pytest.skip("needs rabbitmqctl, run as root, to close a node's connections")


def node_of(client: TestClient[Any, Any]) -> ClusterNode:
    node = client.app[SERVICES].cluster if client.app is not None else None
    assert node is not None
    return node


@pytest.mark.usefixtures("rabbitmqctl")
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_node_whose_broker_connections_are_closed_never_answers_500_and_serves_again(
    own_cluster_node: OwnClusterNode,
) -> None:
    # given a node of a cluster of one, serving a merchant
    async with own_cluster_node() as (client, node):
        await serve_passed_requests(client)
        member = await sign_up(client)
        await create_payment(client, member)

        # when the broker closes its connections, while payments are created and read
        closing = asyncio.ensure_future(
            asyncio.to_thread(lambda: close_broker_connections(pid=os.getpid()))
        )
        answers: list[Answer] = []
        while not closing.done():
            answers.append(await created(client, member))
        assert await closing >= 1

        # then no request failed with 500, and the node serves again by itself
        async def served() -> bool:
            answers.append(await created(client, member))
            return answers[-1].status == 201

        await eventually(served, within=15, what="a create served after the broker came back")
        assert_fault_answers(answers, served=201)
        assert node.connected
        balance = await client.get(f"{API}/merchant/balance", headers=member.headers)
        assert balance.status == 200, await balance.text()


@dataclass
class TwoNodes:
    """A real `run.py` node that owns the merchant's shard, and an in-process node that does
    not (so the test can watch and tune it), in one cluster on one database."""

    owner: LocalCluster
    asker: TestClient[Any, Any]
    member: Member


@pytest.fixture
def owner_heartbeat() -> int:
    """The owner's AMQP heartbeat: the broker gives a paused owner's shards away after about
    twice this. A test that pauses the owner only to hold a request there sets it longer."""
    return 2


@pytest.fixture
async def two_nodes(
    tmp_path: Path,
    database_url: str,
    amqp_url: str,
    owner_heartbeat: int,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
) -> AsyncIterator[TwoNodes]:
    owner = LocalCluster(tmp_path, 1, database_url, amqp_url, heartbeat=owner_heartbeat)
    await asyncio.to_thread(owner.__enter__)
    asker: TestClient[Any, Any] | None = None
    try:
        asker = await aiohttp_client(
            make_app(
                broker_url=amqp_url,
                cluster_name=owner.name,
                node_id=f"{owner.name}-asker",
                session_secret=SESSION_SECRET.encode(),
                encryption_key=ENCRYPTION_KEY.encode(),
                rate_limit_scale=0.0,
            )
        )
        await serve_passed_requests(asker, tmp_path)
        node = node_of(asker)

        await eventually(
            lambda: in_halves(node, owner), within=30, what="the two nodes share the shards"
        )
        async with aiohttp.ClientSession() as http:
            # Signing up through a node puts the company in one of that node's shards.
            member = await sign_up_on(http, owner.urls()[0], "faults@example.com")
            token, company = member.token, member.company
        assert not node.router.owns(company)
        yield TwoNodes(owner, asker, Member(token, company, "", "faults@example.com"))
    finally:
        if asker is not None:
            await asker.close()
        await asyncio.to_thread(owner.__exit__, None, None, None)


@pytest.mark.usefixtures("rabbitmqctl")
@pytest.mark.parametrize("owner_heartbeat", [15])
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_passed_request_whose_broker_connection_closes_mid_ask_answers_503_at_once(
    two_nodes: TwoNodes,
) -> None:
    asker, member = two_nodes.asker, two_nodes.member
    node = node_of(asker)
    index = node.router.index(member.company_id)
    # given a request passed to the owner through the broker (the owner is paused, and no
    # longer heard from, so the asker knows no peer listener to pass it to straight), which
    # holds it unanswered
    two_nodes.owner.pause(0)
    try:

        async def owner_unheard() -> bool:
            return node.membership.peer_of(index, time.monotonic()) is None

        await eventually(owner_unheard, within=10, what="the paused owner is no longer heard from")
        create = asyncio.ensure_future(created(asker, member, "mid-ask-1"))

        async def in_flight() -> bool:
            return node.asking > 0

        await eventually(in_flight, within=5, what="the request is passed to the owner")

        # when the broker closes the connection the request was passed through
        closed_at = time.monotonic()
        named = f"mps {node.node_id}"
        assert await asyncio.to_thread(lambda: close_broker_connections(named=named)) == 1

        # then the request answers 503 with Retry-After as soon as the node notices, long before
        # the owner's deadline, and nothing is left waiting
        refused = await create
        assert_retry_in_a_second(refused)
        assert time.monotonic() - closed_at < node.timings.forward_within / 2
        assert node.asking == 0
    finally:
        two_nodes.owner.resume(0)

    # and the keyed retry is served, by the same node, once its connection is back
    await created_on_retry(asker, member, "mid-ask-1", "the retry is served")


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_passed_on_a_connection_that_just_dropped_is_refused_with_unavailable(
    two_nodes: TwoNodes,
) -> None:
    asker, member = two_nodes.asker, two_nodes.member
    node = node_of(asker)
    connection = node._connection
    assert connection is not None and connection.transport is not None
    passed = Passed(
        method="GET",
        path=f"{API}/merchant/balance",
        headers=[("Authorization", f"Bearer {member.token}")],
        body=b"",
        client="127.0.0.1",
        request_id="req_faults",
    )

    # given the node's broker connection reset, and closed underneath before aio-pika has told
    # the node (which still believes itself connected)
    underlay = connection.transport.connection
    reset = asyncio.ensure_future(underlay.close(ConnectionResetError("Connection reset by peer")))
    deadline = time.monotonic() + 5
    while not underlay.is_closed:
        assert time.monotonic() < deadline, "the connection did not close"
        await asyncio.sleep(0)  # one turn of the loop at a time: the window is a few turns
    assert node.connected

    # when a request is passed to the owner through it (as when no peer listener of the owner
    # is known)
    with pytest.raises(Unavailable) as refused:
        await node.ask(
            node.router.index(member.company_id),
            HTTP,
            passed.encode(),
            node.timings.forward_within,
        )
    with contextlib.suppress(Exception):
        await reset

    # then it is refused as Unavailable (503, Retry-After), not with the driver's error, and
    # nothing is left waiting
    assert refused.value.retry_after == 1
    assert node.asking == 0

    # and the node reconnects by itself and passes requests on again
    answers: list[Answer] = []

    async def served() -> bool:
        answers.append(
            await answer(await asker.get(f"{API}/merchant/balance", headers=member.headers))
        )
        return answers[-1].status == 200

    await eventually(served, within=15, what="a request passed on after the reconnect")
    assert_fault_answers(answers, served=200)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_for_a_paused_owner_answers_503_with_retry_after_within_the_deadline(
    two_nodes: TwoNodes,
) -> None:
    asker, member = two_nodes.asker, two_nodes.member
    node = node_of(asker)
    node.timings = replace(node.timings, forward_within=2.0)
    # given the owner of the merchant's shard paused (SIGSTOP): its socket still takes bytes,
    # nothing answers
    two_nodes.owner.pause(0)
    try:
        # when a request for the merchant reaches the other node
        started = time.monotonic()
        refused = await created(asker, member, "paused-1")

        # then it answers 503 with Retry-After within its forward deadline, not 500
        took = time.monotonic() - started
        assert_retry_in_a_second(refused)
        assert took < node.timings.forward_within + 1.0, took

        # and once the broker gives the paused owner's shards away, the retry is served
        await created_on_retry(
            asker, member, "paused-1", "the retry is served by the shard's new owner"
        )
    finally:
        two_nodes.owner.resume(0)


# Every 503, by construction.


def test_every_503_carries_retry_after_even_when_its_error_named_no_wait() -> None:
    # given every way the service builds a 503: an Unavailable that names no wait (the
    # database's, the writer's, a deadline's), one that names its own, a shard on the move,
    # aiohttp's own 503 as the pipeline translates it, and a health check's
    from_aiohttp = ProtocolError(503, "Service Unavailable", code="error")
    errors: list[ServiceError] = [
        Unavailable("the database is unavailable; nothing was written"),
        Unavailable("the processor did not answer", code="processor_timeout"),
        Unavailable("the books are reloading", retry_after=5),
        Unavailable("a wait of zero is still a wait", retry_after=0),
        ShardMoved(),
        from_aiohttp,
    ]

    # when each is rendered
    responses = [error_response(e, "req_test", CURRENT) for e in errors]
    responses.append(json_response(503, {"status": "down"}, "req_test", CURRENT))

    # then every one carries Retry-After in whole seconds, at least one
    assert [r.status for r in responses] == [503] * 7
    assert [r.headers.get("Retry-After") for r in responses] == ["1", "1", "5", "1", "1", "1", "1"]
    # and no other status gets one it did not ask for
    assert "Retry-After" not in json_response(200, {}, "req_test", CURRENT).headers


@pytest.mark.parametrize(
    "error",
    [
        ConnectionResetError("Connection reset by peer"),
        socket.gaierror("Name or service not known"),
        asyncpg.InternalClientError(
            "cannot switch to state 12; another operation (2) is in progress"
        ),
        asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle"),
        aiormq.exceptions.ChannelInvalidStateError('<Channel "1"> closed'),
        aiormq.exceptions.ConnectionClosed(320, "CONNECTION_FORCED"),
    ],
)
def test_an_infrastructure_error_no_adapter_translated_answers_503_not_500(
    error: BaseException,
) -> None:
    request = make_mocked_request("GET", "/api/v1/merchant/payments")

    translated = to_service_error(error, request)

    assert isinstance(translated, Unavailable)
    response = error_response(translated, "req_test", CURRENT)
    assert response.status == 503
    assert response.headers["Retry-After"] == "1"


@pytest.mark.parametrize(
    "error",
    [
        KeyError("payment"),
        # A query given the wrong arguments, and a queue declared with other arguments: bugs
        # and configuration, not outages, though their classes descend from the drivers' own.
        asyncpg.exceptions.DataError("invalid input for query argument $1"),
        aiormq.exceptions.ChannelPreconditionFailed("PRECONDITION_FAILED - inequivalent arg"),
    ],
)
def test_our_own_bug_still_answers_500(error: BaseException) -> None:
    request = make_mocked_request("GET", "/api/v1/merchant/payments")

    translated = to_service_error(error, request)

    assert status_of(translated) == 500
