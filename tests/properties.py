"""What the property tests of the money and the cards share: a real app of its own for each
Hypothesis example, on a fresh copy of the session's migrated SQLite file, with its background
loops slowed to once an hour (so due work runs only when a step runs it, an example is the same
run each time, and Hypothesis can shrink a failure); what an example holds and the step that
moves its clock; the check that an answer is one the step allows; and the check that the ledger
balances."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, settings

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from tests.conftest import Clock
from tests.databases import copy_sqlite_template
from tests.helpers import Member
from tests.log_guard import watch
from tests.money import services

__all__ = [
    "Advance",
    "Example",
    "answer",
    "assert_ledger_balanced",
    "example_app",
    "examples",
    "run_steps",
]

Run = TypeVar("Run")
Test = TypeVar("Test", bound=Callable[..., None])
Operation = TypeVar("Operation")


@dataclass(frozen=True)
class Advance:
    """A step of either test: the clock moves on `seconds`."""

    seconds: int


@dataclass
class Example:
    """One example's app and the member who acts in it, with a sandbox key of theirs; each test
    adds what the example has made so far."""

    client: TestClient[Any, Any]
    clock: Clock
    member: Member
    key: dict[str, str]


def _settings(folder: Path, template: Path) -> Settings:
    """As the `settings` fixture (tests/conftest.py), on a copy of the migrated template."""
    database = folder / "test.db"
    copy_sqlite_template(template, database)
    return Settings(
        mode="development",
        data_dir=folder,
        database_url=f"sqlite:///{database}",
        broker_url="memory://",
        public_url="http://127.0.0.1:8080",
        session_secret=b"test-session-secret-0123456789abcdef",
        encryption_key=b"test-encryption-key-0123456789abcdef",
        actor_idle_after=300.0,
        rate_limit_scale=0,
        # Due work runs when a step runs it, never behind the steps' backs.
        money_interval=3600.0,
        expiry_interval=3600.0,
    )


def examples(count: int) -> Callable[[Test], Test]:
    """Hypothesis runs `count` examples of the test. An example starts an app and takes
    seconds, so there is no deadline and the slow and large health checks are off; nothing is
    replayed from a database of earlier failures, so every run draws afresh."""
    chosen: Callable[[Test], Test] = settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    return chosen


@asynccontextmanager
async def example_app(
    template: Path, prefix: str
) -> AsyncIterator[tuple[TestClient[Any, Any], Clock]]:
    """A client of a new app on a copy of `template` in a temporary folder named from
    `prefix`, and the test clock the app reads; the app's log is watched for errors."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        clock = Clock()
        app = build_app(_settings(Path(folder), template), Overrides(clock=clock))
        watch(app)
        async with TestClient(TestServer(app)) as client:
            yield client, clock


async def run_steps(
    run: Run,
    operations: Sequence[Operation],
    step: Callable[[Run, Operation], Awaitable[None]],
    check: Callable[[Run, list[Operation]], Awaitable[None]],
) -> None:
    """Each of `operations` in turn through `step`, with `check` after every one of them
    given the steps done so far (what a failure message shows)."""
    done: list[Operation] = []
    for op in operations:
        await step(run, op)
        done.append(op)
        await check(run, done)


async def answer(response: Any, allowed: dict[int, set[str] | None], what: object) -> Any:
    """The body of `response`, which must have one of the `allowed` statuses (with, for each,
    one of its error codes, or any code when None)."""
    body = await response.json()
    assert response.status in allowed, (what, response.status, body)
    codes = allowed[response.status]
    assert codes is None or body.get("code") in codes, (what, response.status, body)
    return body


async def assert_ledger_balanced(client: TestClient[Any, Any], done: object) -> None:
    """The ledger's postings sum to zero and no transaction is unbalanced, read from storage."""
    database = services(client).database
    total = await database.fetchval("SELECT COALESCE(SUM(amount_minor), 0) FROM ledger_postings")
    unbalanced = await database.fetch(
        "SELECT transaction_id FROM ledger_postings GROUP BY transaction_id "
        "HAVING SUM(amount_minor) <> 0"
    )
    assert int(total) == 0, ("the ledger does not sum to zero", int(total), done)
    assert unbalanced == [], ("unbalanced transactions", [dict(r) for r in unbalanced], done)
