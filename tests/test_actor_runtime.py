"""The asyncio actor runtime: asks, futures, crashes and stops (mps.actors.runtime)."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pykka
import pytest

from mps.actors.runtime import (
    ActorDeadError,
    ActorRef,
    ActorStoppedBeforeHandling,
    AsyncioActor,
    AsyncioFuture,
    Detached,
    ask,
    stop,
)
from mps.errors import Conflict
from tests.actors import assert_nobody_left_waiting
from tests.fakes import wait_until

# Long enough for any honest wait, short enough that a hang fails the test instead of the run.
PATIENCE = 5.0


@dataclass(frozen=True)
class Echo:
    value: Any


@dataclass(frozen=True)
class WaitFor:
    """Reply `value` once `gate` is set."""

    gate: asyncio.Event
    value: Any


@dataclass(frozen=True)
class Raise:
    error: Exception


@dataclass
class Journal:
    """What a probe actor did, kept outside it so it outlives the incarnation."""

    handled: list[Any] = field(default_factory=list)
    passivations: int = 0


class Probe(AsyncioActor):
    def __init__(self, journal: Journal, *, fail_activation: bool = False) -> None:
        super().__init__()
        self.journal = journal
        self.fail_activation = fail_activation

    async def on_activate(self) -> None:
        if self.fail_activation:
            msg = "storage is unreadable"
            raise OSError(msg)

    async def on_passivate(self) -> None:
        self.journal.passivations += 1

    async def receive(self, message: Any) -> Any:
        match message:
            case Echo(value):
                self.journal.handled.append(value)
                return value
            case WaitFor(gate, value):
                await gate.wait()
                self.journal.handled.append(value)
                return value
            case Raise(error):
                raise error
        msg = f"unexpected {message!r}"
        raise TypeError(msg)


@pytest.fixture
async def spawn() -> AsyncIterator[Callable[..., ActorRef[Probe]]]:
    """Start probe actors; whatever is still running at the end is stopped."""
    started: list[ActorRef[Probe]] = []

    def start(journal: Journal | None = None, **kwargs: Any) -> ActorRef[Probe]:
        ref = Probe.start(journal or Journal(), **kwargs)
        started.append(ref)
        return ref

    yield start
    for ref in started:
        await stop(ref)


async def test_ask_returns_each_reply_when_many_callers_ask_concurrently(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    journal = Journal()
    ref = spawn(journal)

    # when
    async with asyncio.timeout(PATIENCE):
        replies = await asyncio.gather(*(ask(ref, Echo(i)) for i in range(1_000)))

    # then
    assert replies == list(range(1_000))
    assert journal.handled == list(range(1_000))


async def test_awaiting_a_reply_lets_other_coroutines_run_when_the_reply_is_pending(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given: a reply that only comes once another coroutine has run
    gate = asyncio.Event()
    ref = spawn()
    future = ref.ask(WaitFor(gate, "done"), block=False)
    others_ran: list[str] = []

    async def other() -> None:
        others_ran.append("other")
        gate.set()

    # when
    other_task = asyncio.create_task(other())
    async with asyncio.timeout(PATIENCE):
        reply = await future

    # then
    assert reply == "done"
    assert others_ran == ["other"]
    await other_task


async def test_future_get_raises_when_called_on_the_event_loop_before_completion() -> None:
    # given
    future: AsyncioFuture[int] = AsyncioFuture()

    # when / then
    with pytest.raises(RuntimeError, match="would block the event loop"):
        future.get()
    future.set(7)
    assert future.get() == 7


async def _thread_is_waiting_on_the_loop(
    tasks_before: set[asyncio.Task[Any]], waiting: asyncio.Task[Any]
) -> None:
    """Wait until a thread blocked in `AsyncioFuture.get()` has its waiter on the loop (a new
    task), or until `waiting`, the thread's call, has returned, as a get() that fails to wait
    would; then insist the call has not returned."""
    await wait_until(lambda: bool(asyncio.all_tasks() - tasks_before) or waiting.done())
    assert not waiting.done()


async def test_future_get_returns_the_value_when_called_from_another_thread() -> None:
    # given: a thread blocked in get() on a future that is not done yet
    future: AsyncioFuture[int] = AsyncioFuture()
    getter_started = threading.Event()

    def get_in_thread() -> int:
        getter_started.set()
        return future.get(timeout=PATIENCE)

    tasks_before = asyncio.all_tasks()
    waiting = asyncio.create_task(asyncio.to_thread(get_in_thread))
    await asyncio.to_thread(getter_started.wait, PATIENCE)
    await _thread_is_waiting_on_the_loop(tasks_before | {waiting}, waiting)

    # when
    future.set(42)

    # then
    async with asyncio.timeout(PATIENCE):
        assert await waiting == 42


async def test_future_get_raises_the_error_when_called_from_another_thread() -> None:
    # given
    future: AsyncioFuture[int] = AsyncioFuture()
    tasks_before = asyncio.all_tasks()
    waiting = asyncio.create_task(asyncio.to_thread(future.get, timeout=PATIENCE))
    await _thread_is_waiting_on_the_loop(tasks_before | {waiting}, waiting)

    # when
    error = Conflict("taken")
    future.set_exception((Conflict, error, None))

    # then
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(Conflict) as raised:
            await waiting
    assert raised.value is error


async def test_future_get_times_out_without_leaving_a_waiter_when_called_from_another_thread() -> (
    None
):
    # given
    future: AsyncioFuture[int] = AsyncioFuture()
    tasks_before = asyncio.all_tasks()

    # when
    with pytest.raises(pykka.Timeout):
        await asyncio.to_thread(future.get, timeout=0.05)

    # then: the thread's waiter on the loop is withdrawn, and the future can still complete
    await wait_until(lambda: asyncio.all_tasks() == tasks_before)
    future.set(1)
    assert await future == 1


async def test_actor_answers_and_keeps_running_when_it_raises_an_expected_error(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    ref = spawn()

    # when
    with pytest.raises(Conflict, match="already paid"):
        await ask(ref, Raise(Conflict("already paid")))

    # then
    assert ref.is_alive()
    assert await ask(ref, Echo("still here")) == "still here"


async def test_actor_stops_and_fails_queued_messages_when_it_raises_an_unexpected_error(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given: a crash with two messages queued behind it
    journal = Journal()
    ref = spawn(journal)
    crash = ref.ask(Raise(ValueError("half-applied")), block=False)
    behind = [ref.ask(Echo(i), block=False) for i in range(2)]

    # when
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(ValueError, match="half-applied"):
            await crash
        outcomes = await asyncio.gather(*behind, return_exceptions=True)

    # then
    assert all(isinstance(o, ActorStoppedBeforeHandling) for o in outcomes), outcomes
    assert journal.handled == []
    assert not ref.is_alive()
    with pytest.raises(ActorDeadError):
        await ask(ref, Echo("late"))
    # A crash is not a passivation: there was nothing consistent left to save.
    assert journal.passivations == 0


async def test_callers_get_an_error_when_the_actor_task_is_cancelled_mid_message() -> None:
    # given: one message in progress, one queued, as the loop starts shutting down
    gate = asyncio.Event()
    actor = Probe.launch(Journal())
    in_progress = actor.actor_ref.ask(WaitFor(gate, "never"), block=False)
    queued = actor.actor_ref.ask(Echo("queued"), block=False)
    await wait_until(lambda: actor.busy)

    # when
    actor.task.cancel()

    # then
    await assert_nobody_left_waiting(in_progress, queued, "cancelled while handling", PATIENCE)
    assert not actor.is_alive()


async def test_actor_fails_queued_asks_when_on_activate_raises(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    journal = Journal()
    ref = spawn(journal, fail_activation=True)

    # when
    queued = [ref.ask(Echo(i), block=False) for i in range(3)]
    async with asyncio.timeout(PATIENCE):
        outcomes = await asyncio.gather(*queued, return_exceptions=True)

    # then
    assert all(isinstance(o, ActorStoppedBeforeHandling) for o in outcomes), outcomes
    assert journal.handled == []
    assert not ref.is_alive()


async def test_stop_handles_queued_messages_first_when_the_actor_is_busy(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given: one message in progress and two queued
    journal = Journal()
    gate = asyncio.Event()
    ref = spawn(journal)
    queued = [
        ref.ask(WaitFor(gate, 0), block=False),
        *(ref.ask(Echo(i), block=False) for i in (1, 2)),
    ]

    # when
    stopping = asyncio.create_task(stop(ref))
    await asyncio.sleep(0)  # the stop request is now queued behind the two messages
    after_stop = ref.ask(Echo("after stop"), block=False)
    gate.set()
    async with asyncio.timeout(PATIENCE):
        stopped = await stopping
        replies = await asyncio.gather(*queued)

    # then
    assert stopped is True
    assert replies == [0, 1, 2]
    assert journal.handled == [0, 1, 2]
    assert journal.passivations == 1
    with pytest.raises(ActorStoppedBeforeHandling):
        await after_stop


async def test_ask_raises_actor_dead_error_when_the_actor_has_stopped(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    ref = spawn()
    assert await stop(ref) is True

    # when / then
    with pytest.raises(ActorDeadError):
        await ask(ref, Echo(1))
    assert await stop(ref) is False


async def test_actor_keeps_running_when_a_caller_gives_up_waiting(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    journal = Journal()
    gate = asyncio.Event()
    ref = spawn(journal)

    # when: the caller's wait is cancelled while the actor works on its message
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.02):
            await ask(ref, WaitFor(gate, "abandoned"))
    gate.set()

    # then: the work still happens, and the actor serves the next caller
    assert await ask(ref, Echo("next")) == "next"
    assert journal.handled == ["abandoned", "next"]


async def test_actors_are_not_registered_when_started(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given
    refs = [spawn() for _ in range(3)]

    # when
    replies = [await ask(ref, Echo(i)) for i, ref in enumerate(refs)]

    # then
    assert replies == [0, 1, 2]
    assert pykka.ActorRegistry.get_all() == []


class Deferring(AsyncioActor):
    """Replies to ("later", gate, value) once the gate opens, without holding up its mailbox."""

    def __init__(self) -> None:
        super().__init__()
        self.handled: list[Any] = []

    async def receive(self, message: Any) -> Any:
        self.handled.append(message[0])
        if message[0] == "later":
            _, gate, value = message
            return Detached(self._after(gate, value))
        return message[1]

    @staticmethod
    async def _after(gate: asyncio.Event, value: Any) -> Any:
        await gate.wait()
        if isinstance(value, Exception):
            raise value
        return value


async def test_detached_work_replies_later_while_the_actor_takes_its_next_messages() -> None:
    # given an actor whose first message's work waits on a gate
    actor = Deferring.launch()
    gate = asyncio.Event()
    later = asyncio.ensure_future(ask(actor.actor_ref, ("later", gate, "done")))

    # when a second message arrives, it is answered while the first is still pending
    now = await asyncio.wait_for(ask(actor.actor_ref, ("now", "quick")), 1)
    assert now == "quick" and not later.done()
    assert not actor.can_passivate()

    # then opening the gate answers the first caller
    gate.set()
    assert await asyncio.wait_for(later, 1) == "done"
    assert actor.can_passivate()
    await stop(actor.actor_ref)


async def test_an_error_in_detached_work_goes_to_its_caller_and_the_actor_lives_on() -> None:
    actor = Deferring.launch()
    gate = asyncio.Event()
    gate.set()

    with pytest.raises(Conflict):
        await ask(actor.actor_ref, ("later", gate, Conflict("taken")))

    assert actor.is_alive()
    assert await ask(actor.actor_ref, ("now", 1)) == 1
    await stop(actor.actor_ref)


async def test_stop_waits_for_detached_work_and_answers_its_caller() -> None:
    actor = Deferring.launch()
    gate = asyncio.Event()
    later = asyncio.ensure_future(ask(actor.actor_ref, ("later", gate, "finished")))
    await asyncio.sleep(0)
    stopping = asyncio.ensure_future(stop(actor.actor_ref))
    # The actor has taken the stop (it accepts nothing more) and is now waiting for its work.
    await wait_until(lambda: not actor.is_alive() or stopping.done())
    assert not stopping.done()
    assert not later.done()

    gate.set()

    assert await asyncio.wait_for(later, 1) == "finished"
    assert await asyncio.wait_for(stopping, 1) is True


class Bulky:
    """A message a test can watch for being freed."""


async def test_an_idle_actor_keeps_nothing_of_the_message_it_last_handled(
    spawn: Callable[..., ActorRef[Probe]],
) -> None:
    # given an actor that handled a message and now waits for the next
    journal = Journal()
    ref = spawn(journal)
    payload = Bulky()
    watched = weakref.ref(payload)
    assert await ask(ref, Echo(payload)) is payload

    # when every other reference to the message is gone
    journal.handled.clear()
    del payload
    await asyncio.sleep(0)
    gc.collect()

    # then the message is freed: an idle actor holds only its own state
    assert watched() is None
