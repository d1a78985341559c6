"""Idempotency-Key claims carried inside commands (mps.actors.idempotency): the actor that
receives a command claims its key in the turn that decides it and holds it until the command's
handling ends (not when its caller gives up), whichever actor it is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mps.actors.idempotency import CarriedKey, KeyInFlight
from mps.actors.runtime import ActorRef, AsyncioActor, Detached, Reload, ask, stop
from mps.errors import Conflict
from tests.fakes import wait_until

PATIENCE = 5.0


class Record(CarriedKey):
    """A carried claim as the request pipeline makes one: taken once per attempt."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.armed = True

    def take_key(self) -> str | None:
        if not self.armed:
            return None
        self.armed = False
        return self.key

    def arm(self) -> None:
        self.armed = True


@dataclass(frozen=True)
class Commit:
    """Decided at once; its reply waits for `landed`, as a detached commit's does."""

    landed: asyncio.Event
    idempotency: Record | None = None


@dataclass(frozen=True)
class Refuse:
    idempotency: Record


@dataclass(frozen=True)
class ReloadFirst:
    idempotency: Record


@dataclass
class Journal:
    decided: list[str] = field(default_factory=list)
    reloads: int = 0


class Keeper(AsyncioActor):
    def __init__(self, journal: Journal) -> None:
        super().__init__()
        self.journal = journal

    async def receive(self, message: Any) -> Any:
        match message:
            case Commit(landed=landed, idempotency=record):
                self.journal.decided.append(record.key if record is not None else "-")

                async def land() -> str:
                    await landed.wait()
                    return "landed"

                return Detached(land())
            case Refuse():
                raise Conflict("refused")
            case ReloadFirst(idempotency=record):
                if self.journal.reloads == 0:
                    self.journal.reloads += 1
                    msg = "a commit of unknown outcome"
                    raise Reload(msg)
                self.journal.decided.append(record.key)
                return "decided"
        raise TypeError(type(message).__name__)


@pytest.fixture
async def keeper() -> AsyncIterator[tuple[ActorRef[Keeper], Keeper, Journal]]:
    journal = Journal()
    actor = Keeper.launch(journal)
    yield actor.actor_ref, actor, journal
    await stop(actor.actor_ref)


async def _key_held(
    ref: ActorRef[Keeper], journal: Journal
) -> tuple[asyncio.Future[Any], asyncio.Event]:
    """A command under key "k" the keeper has decided, whose commit has not landed (so it holds
    its key), and the event that lands it."""
    landed = asyncio.Event()
    first = asyncio.ensure_future(ask(ref, Commit(landed, Record("k"))))
    await wait_until(lambda: journal.decided == ["k"])
    return first, landed


async def _commit_again(ref: ActorRef[Keeper], landed: asyncio.Event) -> Any:
    """The keeper's answer to another command under key "k" (bounded by PATIENCE)."""
    return await asyncio.wait_for(ask(ref, Commit(landed, Record("k"))), PATIENCE)


async def test_a_command_under_a_key_held_in_the_actor_is_answered_key_in_flight_undecided(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, actor, journal = keeper

    # given a command whose commit has not landed, holding its key
    first, landed = await _key_held(ref, journal)

    # when a second command arrives under the same key
    with pytest.raises(KeyInFlight) as busy:
        await _commit_again(ref, landed)

    # then it was not decided, and the actor may not passivate while the key is held
    assert journal.decided == ["k"]
    assert not actor.can_passivate()
    assert not busy.value.done.done()

    # and once the first lands, the key is free: the waiter wakes, and the command runs
    landed.set()
    assert await asyncio.wait_for(first, PATIENCE) == "landed"
    await asyncio.wait_for(busy.value.done, PATIENCE)
    again = await _commit_again(ref, landed)
    assert again == "landed"
    assert journal.decided == ["k", "k"]


async def test_commands_under_other_keys_or_none_are_decided_while_a_key_is_held(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, _actor, journal = keeper
    held, free = asyncio.Event(), asyncio.Event()
    free.set()

    first = asyncio.ensure_future(ask(ref, Commit(held, Record("k"))))
    other = await asyncio.wait_for(ask(ref, Commit(free, Record("other"))), PATIENCE)
    keyless = await asyncio.wait_for(ask(ref, Commit(free)), PATIENCE)

    assert other == keyless == "landed"
    assert journal.decided == ["k", "other", "-"]
    held.set()
    await asyncio.wait_for(first, PATIENCE)


async def test_a_refused_command_releases_its_key_and_gives_the_claim_back(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, actor, journal = keeper
    record = Record("k")

    with pytest.raises(Conflict):
        await asyncio.wait_for(ask(ref, Refuse(record)), PATIENCE)

    # the claim may be carried again, and the key serves the next command at once
    assert record.armed
    await wait_until(actor.can_passivate)
    landed = asyncio.Event()
    landed.set()
    assert await asyncio.wait_for(ask(ref, Commit(landed, record)), PATIENCE) == "landed"
    assert journal.decided == ["k"]


async def test_a_claim_already_taken_is_not_claimed_again_by_the_actor_it_is_sent_on_to(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, actor, journal = keeper
    held = asyncio.Event()
    record = Record("k")

    # given a command holding its key, whose record is sent on with another command (as a
    # refund asks its company for an approval with the refund's own record)
    first = asyncio.ensure_future(ask(ref, Commit(held, record)))
    await wait_until(lambda: journal.decided == ["k"])
    landed = asyncio.Event()
    landed.set()

    # then the second is decided rather than told to wait for its own request
    assert await asyncio.wait_for(ask(ref, Commit(landed, record)), PATIENCE) == "landed"
    assert journal.decided == ["k", "k"]
    held.set()
    await asyncio.wait_for(first, PATIENCE)
    await wait_until(actor.can_passivate)


async def test_a_command_that_reloads_the_actor_claims_its_key_again_in_the_fresh_incarnation() -> (
    None
):
    # given an actor that reloads on the command, as after a commit of unknown outcome
    journal = Journal()
    crashed = Keeper.launch(journal)
    record = Record("k")
    with pytest.raises(Reload):
        await asyncio.wait_for(ask(crashed.actor_ref, ReloadFirst(record)), PATIENCE)

    # when the directory hands the command to a fresh incarnation
    fresh = Keeper.launch(journal)
    try:
        assert record.armed
        assert await asyncio.wait_for(ask(fresh.actor_ref, ReloadFirst(record)), PATIENCE) == (
            "decided"
        )
        # then it was claimed there (and released with its reply)
        assert not record.armed
        await wait_until(fresh.can_passivate)
    finally:
        await stop(fresh.actor_ref)


async def test_a_caller_that_gives_up_leaves_its_key_held_until_its_unit_has_landed(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, actor, journal = keeper

    # given a command whose unit has not landed, and whose caller gives up (its deadline)
    first, landed = await _key_held(ref, journal)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first

    # when its retry arrives while the unit is still in flight
    with pytest.raises(KeyInFlight) as busy:
        await _commit_again(ref, landed)

    # then the retry was not decided beside it, and waits for the unit, not the caller
    assert journal.decided == ["k"]
    assert not busy.value.done.done()
    assert not actor.can_passivate()
    landed.set()
    await asyncio.wait_for(busy.value.done, PATIENCE)
    assert await _commit_again(ref, landed) == "landed"
    assert journal.decided == ["k", "k"]
    await wait_until(actor.can_passivate)


async def test_a_refusal_does_not_give_back_a_claim_another_actor_took(
    keeper: tuple[ActorRef[Keeper], Keeper, Journal],
) -> None:
    ref, actor, _journal = keeper
    # given a record whose key another actor holds (the command sent on with it)
    record = Record("k")
    assert record.take_key() == "k"

    # when this actor refuses the command, then the claim stays with the actor that took it
    with pytest.raises(Conflict):
        await asyncio.wait_for(ask(ref, Refuse(record)), PATIENCE)
    assert not record.armed
    assert actor.can_passivate()
