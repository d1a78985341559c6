"""Fixtures: a real app on real SQLite by default; real Postgres where a test asks for both.

Each backend is migrated once per session and every test starts from that state, holding no
row of another test (`database_url`; how and why in tests/databases.py).

Set MPS_REQUIRE_SERVICES=1 (scripts/test does) to make a missing PostgreSQL or RabbitMQ fail the
run instead of skipping the tests that need it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from playwright.async_api import Browser

from mps.actors.company import CompanyActor
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.persistence.database import Database, open_database
from tests.actors import actor_context, company_directory
from tests.databases import (
    PostgresSchema,
    SessionLoop,
    copy_sqlite_template,
    make_sqlite_template,
)
from tests.fakes import RefusingDatabase, Serving, slowed_passes
from tests.helpers import Member, free_port, sign_up
from tests.log_guard import LogGuard, watch
from tests.pages.browser import SharedChromium

if TYPE_CHECKING:
    from tests.cluster import LocalCluster, OwnClusterNode


def _own_database(url: str) -> str:
    """Under pytest-xdist, `url` with the database named for this worker (`mps_test_gw1`), on
    the same server: a test that reads or ends the sessions of its database (pg_stat_activity,
    pg_terminate_backend) then never meets another worker's. `url` itself in a run of one
    process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path}_{worker}"))


# The server's database the run was given, and the one this process's tests use.
GIVEN_PG_URL = os.environ.get(
    "MPS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/mps_test"
)
PG_URL = _own_database(GIVEN_PG_URL)
AMQP_URL = os.environ.get("MPS_TEST_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672/")
REQUIRE_SERVICES = os.environ.get("MPS_REQUIRE_SERVICES") == "1"


async def _create_own_database() -> None:
    """Create this worker's database if it is not there yet (it is kept for the next run, as
    the given one is). An unreachable server is left for the tests that need it to report."""
    name = urlsplit(PG_URL).path.lstrip("/")
    try:
        admin = await asyncpg.connect(GIVEN_PG_URL)
    except (OSError, asyncpg.PostgresError):
        return
    try:
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await admin.execute(f'CREATE DATABASE "{name}"')
    except asyncpg.DuplicateDatabaseError:
        pass  # another run made it meanwhile
    finally:
        await admin.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_backends: run the test on SQLite and on Postgres")
    config.addinivalue_line(
        "markers", "slowed_passes: the `client` app runs its background passes once an hour"
    )
    # The whole run's log, redacted as run.py redacts it, must hold no secret the run used.
    config.pluginmanager.register(LogGuard(), "log_guard")
    if PG_URL != GIVEN_PG_URL:
        asyncio.run(_create_own_database())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    chosen = any(
        m.args and "backend" in m.args[0] for m in metafunc.definition.iter_markers("parametrize")
    )
    if "backend" in metafunc.fixturenames and not chosen:
        both = metafunc.definition.get_closest_marker("both_backends") is not None
        metafunc.parametrize(
            "backend", ["sqlite", "postgres"] if both else ["sqlite"], indirect=True
        )


def _unavailable(what: str) -> NoReturn:
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required by this test run and is not reachable")
    pytest.skip(f"{what} is not reachable")


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def session_loop() -> Iterator[SessionLoop]:
    loop = SessionLoop()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def sqlite_template(session_loop: SessionLoop, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, made once per session (tests/databases.py)."""
    return session_loop.run(make_sqlite_template(tmp_path_factory.mktemp("sqlite-template")))


@pytest.fixture(scope="session")
def postgres_schema(session_loop: SessionLoop) -> Iterator[PostgresSchema]:
    """A migrated Postgres schema, made once per session (tests/databases.py)."""
    try:
        schema = session_loop.run(PostgresSchema.create(PG_URL))
    except (OSError, asyncpg.PostgresError) as exc:
        _unavailable(f"PostgreSQL at {PG_URL} ({exc})")
    yield schema
    session_loop.run(schema.drop())


@pytest.fixture
def database_url(
    backend: str, tmp_path: Path, session_loop: SessionLoop, request: pytest.FixtureRequest
) -> str:
    """A migrated database of the chosen backend holding no row of any other test: a copy of
    the session's SQLite template, or the session's Postgres schema emptied."""
    if backend == "sqlite":
        path = tmp_path / "test.db"
        copy_sqlite_template(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    schema: PostgresSchema = request.getfixturevalue("postgres_schema")
    session_loop.run(schema.empty())
    return schema.url


@pytest.fixture
async def empty_database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """A database of the chosen backend that nobody has migrated, for the tests of migrations:
    a new SQLite file, or a Postgres schema that does not exist yet (the service creates it)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    schema = f"t_{secrets.token_hex(6)}"
    # A bare connection: opening a Database would migrate the public schema as a side effect.
    async with postgres_admin() as admin:
        try:
            yield f"{PG_URL}?schema={schema}"
        finally:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@asynccontextmanager
async def postgres_admin() -> AsyncIterator[asyncpg.Connection]:
    """A bare connection to this process's test database (PG_URL), closed when the block ends;
    the test is skipped (failed under MPS_REQUIRE_SERVICES) if the server is not reachable."""
    try:
        admin = await asyncpg.connect(PG_URL)
    except (OSError, asyncpg.PostgresError) as exc:
        _unavailable(f"PostgreSQL at {PG_URL} ({exc})")
    try:
        yield admin
    finally:
        await admin.close()


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = open_database(database_url)
    await db.open()
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
def refusing(database: Database) -> RefusingDatabase:
    """The test database behind a wrapper that can refuse, hold or lose a commit."""
    return RefusingDatabase(database)


@pytest.fixture
async def context(
    database: Database, refusing: RefusingDatabase, clock: Clock
) -> AsyncIterator[ActorContext]:
    """The context actors run in, on the test database, committing through `refusing`; a
    module whose actors need another clock or writer defines its own."""
    async with actor_context(database, clock, writes_to=refusing) as running:
        yield running


@pytest.fixture
async def companies(context: ActorContext) -> AsyncIterator[ActorDirectory[str, CompanyActor]]:
    """Companies' actors on `context`, each started when first asked."""
    async with company_directory(context) as directory:
        yield directory


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        mode="development",
        data_dir=tmp_path,
        database_url=database_url,
        broker_url="memory://",
        public_url="http://127.0.0.1:8080",
        session_secret=b"test-session-secret-0123456789abcdef",
        encryption_key=b"test-encryption-key-0123456789abcdef",
        # Small enough that tests can watch actors come and go.
        actor_idle_after=300.0,
    )


class Clock:
    """A clock tests can move; starts at the real time so stored timestamps look ordinary."""

    def __init__(self) -> None:
        from mps.domain.clock import utcnow

        self.now = utcnow()

    def __call__(self) -> Any:
        return self.now

    def advance(self, **kwargs: float) -> None:
        from datetime import timedelta

        self.now += timedelta(**kwargs)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_app(settings: Settings, clock: Clock) -> Callable[..., web.Application]:
    def make(overrides: Overrides | None = None, **changes: Any) -> web.Application:
        """The app on these settings with `changes`; `overrides` replace the default fakes
        (the test clock is used unless they name another)."""
        from dataclasses import replace

        app = build_app(replace(settings, **changes), overrides or Overrides(clock=clock))
        watch(app)  # the log guard remembers the secrets this app hands out and receives
        return app

    return make


@pytest.fixture
async def client(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    request: pytest.FixtureRequest,
) -> TestClient[Any, Any]:
    """The app; under the `slowed_passes` mark, with its background passes slowed to once an
    hour after their first, so that only the test moves money: a pass running beside the
    test's reads could change a balance between two of them."""
    slowed = request.node.get_closest_marker("slowed_passes") is not None
    result: TestClient[Any, Any] = await aiohttp_client(
        make_app(**slowed_passes() if slowed else {})
    )
    return result


@pytest.fixture
async def member(client: TestClient[Any, Any]) -> Member:
    """The owner of a company just signed up on `client`."""
    return await sign_up(client)


@pytest.fixture
def serving(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> Serving:
    return Serving(aiohttp_client, make_app, clock)


@pytest.fixture
def amqp_url() -> str:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=2):
            pass
    except OSError:
        _unavailable(f"RabbitMQ at {AMQP_URL}")
    return AMQP_URL


@pytest.fixture
def three_nodes(tmp_path: Path, empty_database_url: str, amqp_url: str) -> Iterator[LocalCluster]:
    """Three real run.py nodes on one database and broker, each owning a share of the shards."""
    from tests.cluster import LocalCluster  # it imports this module

    with LocalCluster(tmp_path, 3, empty_database_url, amqp_url) as cluster:
        cluster.wait_balanced()
        yield cluster


@pytest.fixture
async def node_and_one_beside(
    tmp_path: Path,
    database_url: str,
    amqp_url: str,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
) -> AsyncIterator[tuple[LocalCluster, TestClient[Any, Any]]]:
    """A cluster of one run.py node, and a client of an in-process node of that cluster beside
    it: once each owns half the shards (so a test can watch and tune the in-process one)."""
    from tests.cluster import LocalCluster, in_process_beside_one_node

    cluster = LocalCluster(tmp_path, 1, database_url, amqp_url)
    async with in_process_beside_one_node(cluster, aiohttp_client, make_app, "beside") as client:
        yield cluster, client


@pytest.fixture
def own_cluster_node(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], amqp_url: str
) -> OwnClusterNode:
    """Starts an in-process node made with the settings it is given, the one node of a cluster
    of its own (`node_of_its_own_cluster`)."""
    from tests.cluster import node_of_its_own_cluster

    return functools.partial(node_of_its_own_cluster, aiohttp_client, make_app, amqp_url)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # Long enough to outlast a node's wait on a paused or dying peer: the test must see the
    # node's own answer to such a request, never the client giving up first.
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible server on loopback (moto's), for the whole session."""
    from tests.s3 import s3_server

    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium at {CHROMIUM}")
    return CHROMIUM


def _on_session_loop(item: pytest.Item) -> bool:
    """Whether a fixture the test uses runs on the session's event loop (the browser's, the
    served app's): the test must then run there too. Each name counts as the test sees it, so a
    module's own fixture of the same name as ours keeps its test on a loop of its own."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None or not inspect.iscoroutinefunction(getattr(item, "obj", None)):
        return False
    return any(
        definitions and getattr(definitions[-1].func, "_loop_scope", None) == "session"
        for definitions in info.name2fixturedefs.values()
    )


# Tests of how fast a cluster notices a paused, killed or cut-off node, and of deadlines a few
# seconds long: a second worker's load on two cores moves their timings (a paused owner's shards
# taken before the request that should find it), so they run alone, after the rest.
SERIAL = frozenset(
    {
        "tests/test_cluster.py",
        "tests/test_cluster_failures.py",
        "tests/test_faults.py",
        "tests/test_chaos.py",
    }
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests on the session's event loop: the one Chromium they share belongs
    to the loop that launched it (tests/pages/browser.py), and so must the app a test serves
    to it. Every other test keeps a loop of its own.

    Under pytest-xdist (`--dist loadgroup`, as scripts/test runs), the tests that share a
    module-scoped fixture (a started cluster) run on one worker, which starts it once. The
    files in `SERIAL` are marked `serial`: scripts/test runs them after the others, alone."""
    for item in items:
        if item.nodeid.split("::", 1)[0] in SERIAL:
            item.add_marker(pytest.mark.serial)
        if _on_session_loop(item):
            # First among the item's own marks, so that it is the closest `asyncio` mark.
            item.add_marker(pytest.mark.asyncio(loop_scope="session"), append=False)
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(
            definition.scope == "module"
            for definitions in info.name2fixturedefs.values()
            for definition in definitions
        ):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_chromium(chromium: str) -> AsyncIterator[SharedChromium]:
    shared = SharedChromium(chromium)
    try:
        yield shared
    finally:
        await shared.close()


@pytest_asyncio.fixture(loop_scope="session")
async def browser(shared_chromium: SharedChromium) -> AsyncIterator[Browser]:
    """The run's headless Chromium; every context (and page) the test opened in it is closed
    after the test."""
    yield await shared_chromium.browser()
    await shared_chromium.close_contexts()


Serve = Callable[..., Awaitable[TestClient[Any, Any]]]


@pytest_asyncio.fixture(loop_scope="session")
async def serve(make_app: Callable[..., web.Application]) -> AsyncIterator[Serve]:
    """Start the app with `changes` (and any extra `routes`) on a real loopback port that its
    public URL names, so that the links it hands out (payUrl, invitation links) open in the
    browser; on the session's loop, as the browser tests run."""
    clients: list[TestClient[Any, Any]] = []

    async def start(routes: Sequence[web.RouteDef] = (), **changes: Any) -> TestClient[Any, Any]:
        port = free_port()
        app = make_app(public_url=f"http://127.0.0.1:{port}", **changes)
        app.router.add_routes(routes)
        client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1", port=port))
        await client.start_server()
        clients.append(client)
        return client

    try:
        yield start
    finally:
        while clients:
            await clients.pop().close()


@pytest_asyncio.fixture(loop_scope="session")
async def served(serve: Serve) -> TestClient[Any, Any]:
    """The app on a real port that payUrl names, so the hosted checkout opens in the browser."""
    return await serve()
