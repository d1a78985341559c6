"""Virtual actors: activation on demand, passivation, capacity, one incarnation per key
(mps.actors.directory)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mps.actors.directory import ActorDirectory
from mps.actors.runtime import AsyncioActor, Detached
from mps.errors import Unavailable
from tests.fakes import wait_until

PATIENCE = 5.0


@dataclass(frozen=True)
class Add:
    amount: int


@dataclass(frozen=True)
class Read:
    pass


@dataclass(frozen=True)
class Hold:
    """Keep the actor busy until `gate` is set; `entered` is set once it has begun."""

    gate: asyncio.Event
    entered: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class Crash:
    pass


@dataclass
class Storage:
    """A dict standing in for the database, plus a log of every incarnation's life."""

    values: dict[str, int] = field(default_factory=dict)
    log: list[tuple[str, str, int]] = field(default_factory=list)
    passivate_delay: float = 0.0
    incarnations: int = 0
    unreadable: bool = False


class Counter(AsyncioActor):
    """Holds a number in memory; writes it through to storage and reloads it on activation."""

    def __init__(self, key: str, storage: Storage) -> None:
        super().__init__()
        self.key = key
        self.storage = storage
        storage.incarnations += 1
        self.incarnation = storage.incarnations
        self.value = 0

    async def on_activate(self) -> None:
        self.storage.log.append(("activate", self.key, self.incarnation))
        if self.storage.unreadable:
            msg = "storage is unreadable"
            raise OSError(msg)
        self.value = self.storage.values.get(self.key, 0)

    async def on_passivate(self) -> None:
        self.storage.log.append(("passivate", self.key, self.incarnation))
        await asyncio.sleep(self.storage.passivate_delay)
        self.storage.log.append(("passivated", self.key, self.incarnation))

    async def receive(self, message: Any) -> Any:
        match message:
            case Add(amount):
                self.value += amount
                self.storage.values[self.key] = self.value
                return self.value
            case Read():
                return self.value
            case Hold(gate, entered):
                entered.set()
                await gate.wait()
                return self.value
            case Crash():
                msg = "lost track of the count"
                raise RuntimeError(msg)
        msg = f"unexpected {message!r}"
        raise TypeError(msg)


def _passivated_then_reactivated(key: str) -> list[tuple[str, str, int]]:
    """The log of `key`'s first incarnation passivated to the end before its second began."""
    return [
        ("activate", key, 1),
        ("passivate", key, 1),
        ("passivated", key, 1),
        ("activate", key, 2),
    ]


@pytest.fixture
def storage() -> Storage:
    return Storage()


@pytest.fixture
async def directory(storage: Storage) -> AsyncIterator[ActorDirectory[str, Counter]]:
    counters: ActorDirectory[str, Counter] = ActorDirectory(
        "counter", lambda key: Counter(key, storage), capacity=3, idle_after=10.0
    )
    yield counters
    await counters.close()


async def test_first_message_activates_the_actor_when_the_key_is_new(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given
    storage.values["a"] = 5
    assert not directory.is_active("a")

    # when
    reply = await directory.ask("a", Add(1))

    # then
    assert reply == 6
    assert directory.is_active("a")
    assert directory.activations == 1
    assert storage.log == [("activate", "a", 1)]


async def test_idle_actor_is_passivated_and_reactivated_from_storage_when_asked_again(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given: an active actor whose in-memory value is all it reads while it lives
    loop = asyncio.get_running_loop()
    assert await directory.ask("a", Add(2)) == 2
    storage.values["a"] = 40
    assert await directory.ask("a", Read()) == 2
    assert directory.passivate_idle(loop.time()) == 0

    # when
    passivated = directory.passivate_idle(loop.time() + directory.idle_after)
    reply = await directory.ask("a", Read())

    # then: the new incarnation loaded what storage held
    assert passivated == 1
    assert reply == 40
    assert directory.activations == 2
    assert directory.passivations == 1
    assert storage.log == _passivated_then_reactivated("a")


async def test_passivate_idle_skips_the_actor_when_it_is_busy(
    directory: ActorDirectory[str, Counter],
) -> None:
    # given: an actor in the middle of a long message
    loop = asyncio.get_running_loop()
    hold = Hold(asyncio.Event())
    holding = asyncio.create_task(directory.ask("a", hold))
    async with asyncio.timeout(PATIENCE):
        await hold.entered.wait()

    # when
    passivated = directory.passivate_idle(loop.time() + 10 * directory.idle_after)

    # then
    assert passivated == 0
    assert directory.is_active("a")
    hold.gate.set()
    assert await holding == 0


async def test_least_recently_used_actor_is_passivated_when_capacity_is_exceeded(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given: three actors, "a" used most recently so "b" is the least recent
    for key in ("a", "b", "c"):
        await directory.ask(key, Add(1))
        assert len(directory) <= directory.capacity
    await directory.ask("a", Add(1))

    # when
    await directory.ask("d", Add(1))
    await wait_until(lambda: ("passivated", "b", 2) in storage.log)

    # then
    assert len(directory) == 3
    assert [k for k in "abcd" if directory.is_active(k)] == ["a", "c", "d"]
    assert ("passivated", "b", 2) in storage.log
    assert directory.passivations == 1


async def test_len_never_exceeds_capacity_when_many_keys_are_asked_concurrently(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given
    sizes: list[int] = []

    async def ask_and_measure(key: str) -> int:
        reply: int = await directory.ask(key, Add(1))
        sizes.append(len(directory))
        return reply

    # when
    async with asyncio.timeout(PATIENCE):
        replies = await asyncio.gather(*(ask_and_measure(f"k{i % 7}") for i in range(70)))

    # then: every message counted once, through however many incarnations
    assert max(sizes) <= directory.capacity
    assert sum(replies) > 0
    assert storage.values == {f"k{i}": 10 for i in range(7)}


async def test_new_incarnation_waits_when_the_old_one_is_still_stopping(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given: an incarnation that takes a while to passivate
    storage.passivate_delay = 0.05
    await directory.ask("a", Add(1))
    directory.passivate("a")

    # when
    async with asyncio.timeout(PATIENCE):
        reply = await directory.ask("a", Add(1))

    # then: the second incarnation activated only after the first had finished
    assert reply == 2
    assert storage.log == _passivated_then_reactivated("a")


async def test_queued_messages_reach_a_fresh_incarnation_when_the_actor_crashes(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given: a crashing message with two more queued behind it on the same incarnation
    storage.values["a"] = 10
    calls = [directory.ask("a", Crash()), directory.ask("a", Add(1)), directory.ask("a", Add(2))]

    # when
    async with asyncio.timeout(PATIENCE):
        crashed, first, second = await asyncio.gather(*calls, return_exceptions=True)

    # then
    assert isinstance(crashed, RuntimeError)
    assert (first, second) == (11, 13)
    assert directory.activations == 2
    assert [entry for entry in storage.log if entry[0] == "activate"] == [
        ("activate", "a", 1),
        ("activate", "a", 2),
    ]
    # A crashed incarnation is not passivated: its state may be half-applied.
    assert directory.passivations == 0


async def test_ask_raises_unavailable_when_the_actor_cannot_activate(
    directory: ActorDirectory[str, Counter], storage: Storage
) -> None:
    # given
    storage.unreadable = True

    # when
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(Unavailable):
            await directory.ask("a", Add(1))

    # then: a few attempts, not an endless loop, and nothing left behind
    assert 1 < directory.activations <= 5
    assert not directory.is_active("a")
    storage.unreadable = False
    assert await directory.ask("a", Add(1)) == 1


async def test_close_passivates_every_actor_when_the_directory_shuts_down(
    storage: Storage,
) -> None:
    # given
    counters: ActorDirectory[str, Counter] = ActorDirectory(
        "counter", lambda key: Counter(key, storage), capacity=10, idle_after=10.0
    )
    for key in ("a", "b"):
        await counters.ask(key, Add(1))

    # when
    await counters.close()

    # then
    assert len(counters) == 0
    assert sorted(e[1] for e in storage.log if e[0] == "passivated") == ["a", "b"]


class Holding(AsyncioActor):
    """Holds something storage cannot rebuild while `held` is set."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.held = False

    async def receive(self, message: Any) -> Any:
        self.held = message == "hold"
        return message

    def can_passivate(self) -> bool:
        return not self.held


async def test_an_actor_that_cannot_passivate_is_kept_by_idle_sweeps_and_eviction() -> None:
    # given
    directory: ActorDirectory[str, Holding] = ActorDirectory(
        "holding", Holding, capacity=1, idle_after=0.0
    )
    await directory.ask("a", "hold")

    # when idle sweeps run and another key crowds it
    directory.passivate_idle(asyncio.get_running_loop().time() + 10)
    await directory.ask("b", "free")

    # then the holding actor is still active, and the free one went instead when over capacity
    assert directory.is_active("a")
    await directory.ask("c", "free")
    assert directory.is_active("a")
    assert directory.is_active("c")
    assert not directory.is_active("b")
    await directory.close()


class Committing(AsyncioActor):
    """Replies Detached to `reserve` (its commit waits on `gate`), crashes on `crash`; records
    its activations and the commit landing in `events`."""

    def __init__(self, gate: asyncio.Event, events: list[str]) -> None:
        super().__init__()
        self.gate = gate
        self.events = events

    async def on_activate(self) -> None:
        self.events.append("activate")

    async def receive(self, message: Any) -> Any:
        if message == "reserve":

            async def commit() -> str:
                await self.gate.wait()
                self.events.append("commit landed")
                return "ok"

            return Detached(commit())
        if message == "crash":
            msg = "unexpected"
            raise RuntimeError(msg)
        return "hi"


async def test_after_a_crash_the_new_incarnation_waits_for_the_old_ones_commits() -> None:
    # given an actor with a commit in flight
    gate = asyncio.Event()
    events: list[str] = []
    directory: ActorDirectory[str, Committing] = ActorDirectory(
        "t", lambda _key: Committing(gate, events), capacity=10, idle_after=60
    )
    pending = asyncio.ensure_future(directory.ask("c", "reserve"))
    await asyncio.sleep(0.01)

    # when it crashes, and a message asks for a fresh incarnation meanwhile
    with pytest.raises(RuntimeError):
        await directory.ask("c", "crash")
    answered = asyncio.ensure_future(directory.ask("c", "hello"))
    await asyncio.sleep(0.01)
    assert not answered.done()
    gate.set()

    # then the fresh one is activated only after the old one's commit landed
    assert await pending == "ok" and await answered == "hi"
    assert events == ["activate", "commit landed", "activate"]
    await directory.close()
