"""Fixtures: a real app on real SQLite by default; real Postgres where a test asks for both.

Each backend is migrated once per session and every test starts from that state, holding no
row of another test (`database_url`; how and why in tests/databases.py).

Set MPS_REQUIRE_SERVICES=1 (scripts/test does) to make a missing PostgreSQL or RabbitMQ fail the
run instead of skipping the tests that need it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.persistence.database import Database, open_database
from tests.databases import (
    PostgresSchema,
    SessionLoop,
    copy_sqlite_template,
    make_sqlite_template,
)
from tests.log_guard import LogGuard, watch

PG_URL = os.environ.get("MPS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/mps_test")
AMQP_URL = os.environ.get("MPS_TEST_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672/")
REQUIRE_SERVICES = os.environ.get("MPS_REQUIRE_SERVICES") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_backends: run the test on SQLite and on Postgres")
    # The whole run's log, redacted as run.py redacts it, must hold no secret the run used.
    config.pluginmanager.register(LogGuard(), "log_guard")


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
    try:
        # A bare connection: opening a Database would migrate the public schema as a side effect.
        admin = await asyncpg.connect(PG_URL)
    except (OSError, asyncpg.PostgresError) as exc:
        _unavailable(f"PostgreSQL at {PG_URL} ({exc})")
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
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
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> TestClient[Any, Any]:
    result: TestClient[Any, Any] = await aiohttp_client(make_app())
    return result


@pytest.fixture
def amqp_url() -> str:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=2):
            pass
    except OSError:
        _unavailable(f"RabbitMQ at {AMQP_URL}")
    return AMQP_URL


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible server on loopback (moto's), for the whole session."""
    from tests.s3 import s3_server

    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium at {CHROMIUM}")
    return CHROMIUM
