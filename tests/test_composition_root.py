"""The composition root (mps.bootstrap) opens each resource in its own cleanup context: in
order, closed in reverse, and a start that fails half-way closes what it had opened.

The failure is real: an object storage URL that `open_store` refuses, reached after the
database, the writer and the broker are open. What closed is observed through the database the
app opened (wrapped by `Overrides.wrap_database`) and the tasks left on the loop."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.persistence.database import Database
from mps.serve import serve
from tests.fakes import WrappedDatabase


class _ClosingDatabase(WrappedDatabase):
    """Records its close, and which of the writer's tasks were still running then."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.closed = False
        self.writers_running_at_close: list[str] = []

    async def close(self) -> None:
        self.writers_running_at_close = _running("PersistenceActor")
        self.closed = True
        await super().close()


def _running(prefix: str = "") -> list[str]:
    """The names of the tasks on this loop (other than the caller's) that have not finished."""
    current = asyncio.current_task()
    return sorted(
        task.get_name()
        for task in asyncio.all_tasks()
        if task is not current and not task.done() and task.get_name().startswith(prefix)
    )


class _Opened:
    """The databases an app opened, through `Overrides.wrap_database`."""

    def __init__(self) -> None:
        self.databases: list[_ClosingDatabase] = []

    def __call__(self, real: Database) -> Database:
        database = _ClosingDatabase(real)
        self.databases.append(database)
        return database


async def _serve_until_it_fails(app: web.Application, settings: Settings) -> BaseException:
    """`serve`, as run.py calls it; returns the error its start ended with."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(60):
            await serve(app, settings)
    except Exception as exc:
        return exc
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    pytest.fail("the app started although its object storage URL is refused")


async def test_a_start_that_fails_half_way_closes_the_database_and_stops_the_writer(
    settings: Settings,
) -> None:
    # given an app whose object storage, opened after the database, the writer and the
    # broker, cannot be opened
    tasks_before = _running()
    opened = _Opened()
    broken = replace(settings, object_storage_url="ftp://storage.invalid/documents")
    app = build_app(broken, Overrides(wrap_database=opened))

    # when it is served as run.py serves it
    error = await _serve_until_it_fails(app, broken)

    # then the start fails with the storage's own error, and what was open is closed: the
    # writer stopped before its database closed, and no task of the app is left running
    assert isinstance(error, ValueError)
    assert "MPS_OBJECT_STORAGE_URL" in str(error)
    [database] = opened.databases
    assert database.closed
    assert database.writers_running_at_close == []
    assert _running() == tasks_before


async def test_a_start_that_fails_half_way_closes_what_was_opened_through_any_runner(
    settings: Settings,
) -> None:
    # given the same failing app, started by a bare aiohttp runner (as test clients do)
    tasks_before = _running()
    opened = _Opened()
    app = build_app(
        replace(settings, object_storage_url="ftp://storage.invalid/documents"),
        Overrides(wrap_database=opened),
    )
    runner = web.AppRunner(app)

    # when its start fails and the runner is cleaned up
    with pytest.raises(ValueError, match="MPS_OBJECT_STORAGE_URL"):
        await runner.setup()
    await runner.cleanup()

    # then the database is closed and no task of the app is left running
    [database] = opened.databases
    assert database.closed
    assert _running() == tasks_before


async def test_a_started_app_closes_every_resource_on_cleanup(settings: Settings) -> None:
    # given an app that started
    tasks_before = _running()
    opened = _Opened()
    runner = web.AppRunner(build_app(settings, Overrides(wrap_database=opened)))
    await runner.setup()
    [database] = opened.databases
    started: Any = _running()
    assert started != tasks_before  # its actors and schedulers run as tasks

    # when it is cleaned up
    await runner.cleanup()

    # then the writer stopped before the database closed, and no task is left
    assert database.closed
    assert database.writers_running_at_close == []
    assert _running() == tasks_before
