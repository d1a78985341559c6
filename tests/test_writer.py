"""The group-commit writer's guarantees under interleaved senders and a lost session
(mps.actors.persistence, mps.persistence.postgres): each sender's units commit in the order sent,
whatever batches they fall into; a batch whose session the server ends mid-way is answered
Unavailable, and the next one commits on a new session."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import ask, stop
from mps.errors import Unavailable
from mps.persistence.database import Database
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.postgres import PostgresDatabase
from mps.persistence.statements import Statement, insert
from tests.helpers import eventually

PATIENCE = 10.0
NOW = "2026-01-01T00:00:00.000Z"


def _new_user(user_id: str) -> Statement:
    return insert(
        "users", {"id": user_id, "email": f"{user_id}@example.com", "name": None, "created_at": NOW}
    )


def _numbered_event(sender: str, n: int) -> Statement:
    row = event_row(
        company_id=sender, mode="test", event_type=f"unit.{n}", created_at=NOW, obj={"n": n}
    )
    return event_insert(row)


@pytest.fixture
async def postgres(database: Database) -> PostgresDatabase:
    assert isinstance(database, PostgresDatabase)
    return database


@pytest.fixture
async def small_batches(database: Database) -> AsyncIterator[Any]:
    # Small batches, so that one sender's units spread over many group commits in a row.
    actor = PersistenceActor.start(database, max_batch=7)
    try:
        yield actor
    finally:
        await stop(actor)


@pytest.mark.both_backends
async def test_each_senders_units_commit_in_the_order_sent_when_several_senders_interleave(
    database: Database, small_batches: Any
) -> None:
    # given five senders, each sending forty units without waiting for the answers, their
    # sends interleaved at random across the senders
    senders = [f"co_{k}" for k in range(5)]
    per_sender = 40
    order = [s for s in senders for _ in range(per_sender)]
    chance = random.Random(7)
    chance.shuffle(order)
    sent: dict[str, int] = dict.fromkeys(senders, 0)
    answers = []

    # when every unit is sent (each inserts an event, numbered per sender by the commit)
    for sender in order:
        unit = (_numbered_event(sender, sent[sender]),)
        answers.append(small_batches.ask(Commit(unit), block=False))
        sent[sender] += 1
        if chance.random() < 0.3:
            await asyncio.sleep(0)  # let a group commit start with what has queued so far
    async with asyncio.timeout(PATIENCE):
        for answer in answers:
            assert await answer == [[]]

    # then each sender's units were committed in the order it sent them
    for sender in senders:
        rows = await database.fetch(
            "SELECT type, sequence FROM events WHERE company_id = $1 ORDER BY sequence", sender
        )
        assert [r["type"] for r in rows] == [f"unit.{n}" for n in range(per_sender)]
        assert [r["sequence"] for r in rows] == list(range(1, per_sender + 1))


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_commit_whose_session_is_lost_mid_batch_is_unavailable_and_the_next_commits(
    postgres: PostgresDatabase,
) -> None:
    writer = PersistenceActor.start(postgres)
    admin = await asyncpg.connect(postgres.url)
    locker = await asyncpg.connect(postgres.url, server_settings=postgres._server_settings())
    try:
        await ask(writer, Commit((_new_user("usr_before"),)))
        lost = postgres._w.get_server_pid()

        # given a group commit inside its transaction, held by a lock on the table it writes
        held = locker.transaction()
        await held.start()
        await locker.execute("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
        blocked = asyncio.ensure_future(ask(writer, Commit((_new_user("usr_lost"),))))

        async def waiting_on_the_lock() -> bool:
            return bool(
                await admin.fetchval(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE pid = $1 AND wait_event_type = 'Lock'",
                    lost,
                )
            )

        await eventually(waiting_on_the_lock, within=PATIENCE, what="the commit waits")

        # when the server ends the writer's session
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", lost)

        # then that commit is answered Unavailable
        with pytest.raises(Unavailable):
            async with asyncio.timeout(PATIENCE):
                await blocked
    finally:
        await locker.close()

    try:
        # and the next one commits, on a new session
        async with asyncio.timeout(PATIENCE):
            assert await ask(writer, Commit((_new_user("usr_after"),))) == [[]]
        assert postgres._w.get_server_pid() != lost
    finally:
        await stop(writer)
        await admin.close()
    stored = await postgres.fetch("SELECT id FROM users ORDER BY id")
    assert [r["id"] for r in stored] == ["usr_after", "usr_before"]
