"""Actors on real storage, for the tests that drive them directly rather than through HTTP: the
context they run in, with a writer actor of its own, and a company's or a payment's actor; and
what every actor owes its callers when its task is cancelled."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mps.actors.company import CompanyActor, CreateCompany
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.payment import PaymentActor
from mps.actors.persistence import PersistenceActor
from mps.actors.runtime import ActorDeadError, ActorRef, ActorStoppedBeforeHandling, ask, stop
from mps.adapters.processor import CardInput, Processor
from mps.auth.keyring import Keyring
from mps.domain.clock import Clock
from mps.persistence.database import Database

PUBLIC_URL = "http://127.0.0.1:8080"
KEYRING = Keyring(
    session_secret=b"actors-test-session-secret-0123456789",
    encryption_key=b"actors-test-encryption-key-0123456789",
)
CARD = CardInput("4242424242424242", 12, 2099, "123")


@asynccontextmanager
async def actor_context(
    database: Database, clock: Clock, writes_to: Database | None = None
) -> AsyncIterator[ActorContext]:
    """The context actors run in: reads from `database`, units committed by a writer actor on
    `writes_to` (a wrapper of `database` that faults or records them; `database` itself unless
    given). The writer is stopped when the block ends."""
    writer: ActorRef[PersistenceActor] = PersistenceActor.start(writes_to or database)
    try:
        yield ActorContext(database, writer, clock)
    finally:
        await stop(writer)


@asynccontextmanager
async def company_directory(
    context: ActorContext,
) -> AsyncIterator[ActorDirectory[str, CompanyActor]]:
    """Companies' actors on `context`, each started when first asked (ten in memory at most,
    passivated after five idle minutes); closed when the block ends."""
    directory: ActorDirectory[str, CompanyActor] = ActorDirectory(
        "company",
        lambda company_id: CompanyActor(company_id, context, KEYRING, public_url=PUBLIC_URL),
        capacity=10,
        idle_after=300.0,
    )
    try:
        yield directory
    finally:
        await directory.close()


@asynccontextmanager
async def company_actor(
    context: ActorContext, company_id: str, name: str, **options: Any
) -> AsyncIterator[ActorRef[CompanyActor]]:
    """The actor of a company it has just created (`name`, owner@example.com), started with
    `options` on `context` and stopped when the block ends."""
    ref = CompanyActor.start(company_id, context, KEYRING, PUBLIC_URL, **options)
    try:
        await ask(ref, CreateCompany(name, "owner@example.com", None))
        yield ref
    finally:
        await stop(ref)


def payment_actor(
    company: ActorRef[CompanyActor],
    company_id: str,
    payment_id: str,
    context: ActorContext,
    processor: Processor,
    **options: Any,
) -> ActorRef[PaymentActor]:
    """A payment's actor, started on `context`, that asks `company`'s actor for the books and
    `processor` for test-mode cards (there is no live one); the test stops it."""
    return PaymentActor.start(
        payment_id,
        company_id,
        context,
        KEYRING,
        {"test": processor, "live": None},
        PUBLIC_URL,
        functools.partial(ask, company),
        **options,
    )


async def assert_nobody_left_waiting(
    in_progress: Awaitable[Any], queued: Awaitable[Any], cut_short: str, within: float
) -> None:
    """Once an actor's task is cancelled, the caller of the message it was handling is told it
    died (`cut_short`, the words of the error) and the caller of one queued behind it that it
    was never handled, both within `within` seconds."""
    async with asyncio.timeout(within):
        with pytest.raises(ActorDeadError, match=cut_short):
            await in_progress
        with pytest.raises(ActorStoppedBeforeHandling):
            await queued
