"""Actors on the asyncio event loop, in pykka's vocabulary.

pykka ships a thread per actor (`ThreadingActor`); its extension points for new actor types are
`_create_actor_inbox`, `_create_future` and `_start_actor_loop`. Those hooks alone cannot make an
asyncio actor: pykka's message loop calls the inbox's blocking `get()` and the handler
synchronously, so here the loop itself is a coroutine (`AsyncioActor._run`) and handlers are
`async def receive(message)`.

Three more departures from pykka, each on purpose:

* `AsyncioFuture.__await__` (mps.actors.mailbox, with the inbox) awaits an `asyncio.Future`.
  pykka's `Future.__await__` calls the blocking `get()`, which on the event loop would freeze
  every other request; `get()` there refuses to block the loop thread and says so.
* Actors are not put in pykka's `ActorRegistry`: it is a locked list that is scanned, and there is
  one actor per payment. `ActorDirectory` (mps.actors.directory) is the lookup instead.
* An unexpected exception stops the actor even when the message had a caller waiting. pykka keeps
  such an actor running, but ours may have half-applied state; stopping it means the next message
  activates a fresh incarnation from the last committed snapshot. The caller whose message failed
  gets the exception; callers queued behind it get `ActorStoppedBeforeHandling`, which the
  directory retries on the fresh incarnation because their message was never started. Errors
  listed in `expected_errors` (the contract's 4xx answers) are replies, not crashes.

Two additions. A command whose `idempotency` record carries its key's claim
(mps.actors.idempotency.CarriedKey) has the key claimed before `receive` decides it, held until
its handling ends (its reply set, by the turn or by the detached work the turn returned, however
long ago its caller gave up); a command arriving under a key already held is answered
`KeyInFlight` without being handled. So a keyed request costs its actor one message, whichever
actor it is. And a write still running after its sender was answered (the writer's deadline,
mps.actors.persistence) holds the actor that sent it (`hold_until`): it neither passivates nor
ends its task before that write has ended, and the directory activates no new incarnation before
the old one's task has ended, so a reload never reads storage the write may still change.

Concurrency context: every method here runs on the event loop thread; the future and the inbox
(mps.actors.mailbox) also take replies and messages from other threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar, cast

import pykka
from pykka import ActorDeadError, ActorRef

from mps.actors.idempotency import CarriedKey, KeyInFlight, KeysInFlight, carried_key
from mps.actors.mailbox import AsyncioFuture, AsyncioInbox, StoppedFlag
from mps.actors.pykka_internals import ActorStop as _ActorStop
from mps.actors.pykka_internals import Envelope
from mps.errors import KeyAlreadyStored, ServiceError

__all__ = [
    "ActorDeadError",
    "ActorRef",
    "ActorStoppedBeforeHandling",
    "AsyncioActor",
    "AsyncioFuture",
    "Detached",
    "Reload",
    "ask",
    "hold_until",
    "stop",
]

T = TypeVar("T")
logger = logging.getLogger(__name__)

# The actor whose task is running: set as each actor's task starts, and inherited by the tasks
# it starts (its detached work), which is how `hold_until` finds the actor a commit was for.
_current_actor: contextvars.ContextVar[AsyncioActor | None] = contextvars.ContextVar(
    "mps_current_actor", default=None
)


def hold_until(landing: asyncio.Future[Any]) -> None:
    """Keep the actor running this code (its turn or its detached work) from passivating and
    from ending its task until `landing` is done: storage may change under it until then (a
    unit of its own whose write outlived its answer). Unbounded on purpose: a reload before
    the write has ended would decide from a guess, so the actor stays unavailable meanwhile.
    Outside any actor, nothing to hold."""
    actor = _current_actor.get()
    if actor is not None and not landing.done():
        actor._hold_until_landed(landing)


@dataclass(frozen=True, slots=True)
class Detached:
    """What `receive` returns to reply later without holding up the mailbox: the reply is the
    result (or error) of `work`, which runs while the actor takes its next messages.

    For work that changes no state of the actor, such as committing a new payment whose rules
    were already checked, or whose effect on the actor's memory the turn already made (a
    reservation, undone if the work fails: `mps.actors.commits.UnitChain`). A stop waits
    for detached work before the actor ends; an error in it goes to its caller only, and never
    stops the actor.
    """

    work: Coroutine[Any, Any, Any]


class ActorStoppedBeforeHandling(ActorDeadError):
    """The actor stopped (passivated or crashed) before it started on this message, so sending
    the same message to a fresh incarnation is safe."""


class Reload(ActorStoppedBeforeHandling):
    """Raised by `receive` before the message changed anything, when the actor's memory may no
    longer match storage (a commit of unknown outcome). The actor stops, and the directory hands
    the message to a fresh incarnation, which loads what storage holds."""


class AsyncioActor(pykka.Actor):
    """An actor whose message loop is a task on the running event loop.

    Subclasses implement `receive`, and may implement `on_activate` (awaited before the first
    message; a failure there stops the actor and fails every queued message) and `on_passivate`
    (awaited when the actor is stopped on purpose, not after a crash).
    """

    # Exceptions that are answers to the caller, not signs of a broken actor: the contract's
    # errors, and a unit refused because its Idempotency-Key was stored first (nothing of the
    # actor's state was adopted, so there is nothing to reload).
    expected_errors: ClassVar[tuple[type[BaseException], ...]] = (ServiceError, KeyAlreadyStored)

    # Running actors, held strongly: the event loop keeps only weak references to tasks, and an
    # ActorRef holds its actor weakly, so without this an idle actor could be collected.
    _running: ClassVar[set[AsyncioActor]] = set()

    # The Idempotency-Keys claimed by the commands this actor is deciding or committing
    # (mps.actors.idempotency). Made on the first claim: most actors never hold one, and one
    # per idle payment would cost memory for nothing.
    _keys: KeysInFlight | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        flag = cast("threading.Event", StoppedFlag())
        self.actor_stopped = self._actor_ref.actor_stopped = flag
        self._task: asyncio.Task[None] | None = None
        # Detached work, and writes of its units still running (`hold_until`): the task ends
        # only once they have.
        self._detached: set[asyncio.Future[Any]] = set()
        self.busy = False
        self.last_active = asyncio.get_running_loop().time()

    @staticmethod
    def _create_actor_inbox() -> AsyncioInbox:
        return AsyncioInbox(asyncio.get_running_loop())

    @staticmethod
    def _create_future() -> AsyncioFuture[Any]:
        return AsyncioFuture()

    @classmethod
    def start(cls, *args: Any, **kwargs: Any) -> ActorRef[Self]:
        """Create the actor and start its loop; unlike pykka's, it is not registered."""
        return cls.launch(*args, **kwargs).actor_ref

    @classmethod
    def launch(cls, *args: Any, **kwargs: Any) -> Self:
        """Like `start`, but return the actor itself, for owners that track its lifetime."""
        actor = cls(*args, **kwargs)
        actor._start_actor_loop()
        return actor

    def _start_actor_loop(self) -> None:
        AsyncioActor._running.add(self)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=str(self))

    @property
    def task(self) -> asyncio.Task[None]:
        assert self._task is not None, "actor was not started"
        return self._task

    @property
    def inbox(self) -> AsyncioInbox:
        inbox = self.actor_inbox
        assert isinstance(inbox, AsyncioInbox)
        return inbox

    def is_alive(self) -> bool:
        return not self.actor_stopped.is_set()

    # Hooks for subclasses --------------------------------------------------------------------

    async def on_activate(self) -> None:
        """Load state before the first message. Runs in the actor's own task."""

    async def on_passivate(self) -> None:
        """Release resources when stopped on purpose. Not called after a crash."""

    async def receive(self, message: Any) -> Any:
        """Handle one message; the return value is the reply to an ask."""
        raise NotImplementedError

    def can_passivate(self) -> bool:
        """False while the actor holds something its next incarnation could not rebuild from
        storage (waiters of an in-flight request, detached work); the directory then keeps it
        active. Subclasses extend it with `and super().can_passivate()`."""
        return not self._detached and not self._keys

    @property
    def keys_in_flight(self) -> KeysInFlight:
        """The Idempotency-Keys held in this actor, and the futures their duplicates wait on."""
        if self._keys is None:
            self._keys = KeysInFlight()
        return self._keys

    # The loop --------------------------------------------------------------------------------

    async def _run(self) -> None:
        _current_actor.set(self)
        try:
            try:
                await self.on_activate()
            except Exception:
                self._handle_failure(*sys.exc_info())
                return
            await self._message_loop()
            if self._detached:
                # Crashed with commits still in flight: the task (which the directory waits
                # for before it activates a new incarnation) ends only once they have, so the
                # next incarnation loads a snapshot that holds them. What is queued is answered
                # first: detached work may be waiting on a follow-up queued behind the crash.
                self._fail_queued()
                await self._detached_ended()
        finally:
            self.actor_stopped.set()
            self._fail_queued()
            AsyncioActor._running.discard(self)

    async def _message_loop(self) -> None:
        while not self.actor_stopped.is_set():
            envelope = await self.inbox.get_async()
            if isinstance(envelope.message, _ActorStop):
                await self._stop_async(envelope)
                return
            handled = await self._handle(envelope)
            # Drop the envelope before waiting for the next one: an idle actor would otherwise
            # keep its last request alive (the command, its idempotency claim with the stored
            # response, the HTTP request behind it), some 20 KiB per idle actor.
            del envelope
            if not handled:
                return

    async def _handle(self, envelope: Envelope[Any]) -> bool:
        """Handle one envelope; False when the actor crashed and must stop."""
        record = carried_key(envelope.message)
        key: str | None = None
        if record is not None:
            proceed, key = self._claim(record, envelope)
            if not proceed:
                return True
        self.busy = True
        try:
            response = await self.receive(envelope.message)
        except self.expected_errors:
            if record is not None and key is not None:
                # Refused, nothing kept: a retry of the command claims the key again.
                record.arm()
            if envelope.reply_to is not None:
                envelope.reply_to.set_exception()
            else:
                logger.warning("%s: error answering a tell", self, exc_info=True)
            self._release_key(key)
            return True
        except Exception:
            exc_info = sys.exc_info()
            if record is not None and key is not None:
                # The directory may hand the command to a fresh incarnation (Reload), which
                # must claim its key there.
                record.arm()
            if envelope.reply_to is not None:
                envelope.reply_to.set_exception(exc_info)
            self._release_key(key)
            self._handle_failure(*exc_info)
            try:
                self.on_failure(*exc_info)
            except Exception:
                logger.exception("%s: on_failure raised", self)
            return False
        except BaseException as exc:
            # The actor's task was cancelled mid-message (the loop is shutting down). The envelope
            # is already out of the inbox, so `_fail_queued` will not reach it: answer it here,
            # or its caller waits forever. Whether the message took effect is unknown.
            if envelope.reply_to is not None:
                error = ActorDeadError(f"{self} was cancelled while handling the message")
                error.__cause__ = exc
                envelope.reply_to.set_exception((ActorDeadError, error, None))
            self._release_key(key)
            raise
        else:
            if isinstance(response, Detached):
                self._detach(response, envelope, key)
            else:
                if envelope.reply_to is not None:
                    envelope.reply_to.set(response)
                self._release_key(key)
            return True
        finally:
            self.busy = False
            self.last_active = asyncio.get_running_loop().time()

    def _claim(self, record: CarriedKey, envelope: Envelope[Any]) -> tuple[bool, str | None]:
        """Claim the key `record` carries for the command of `envelope`: (whether to handle
        the command, the key this actor took, to release once its handling ends). Not handled,
        with `KeyInFlight` as the reply, when another request holds the key.

        Held until the handling ends, not until the caller stops waiting: a caller that gives
        up (its request's deadline) leaves the unit in the chain or the writer, and a retry
        must wait for that unit rather than be decided again beside it."""
        # A tell has no reply to settle, and nobody waits on its outcome: no claim to hold.
        if not isinstance(envelope.reply_to, AsyncioFuture):
            return True, None
        key = record.take_key()
        if key is None:
            return True, None
        waiter = self.keys_in_flight.claim(key)
        if waiter is not None:
            record.arm()
            envelope.reply_to.set_exception((KeyInFlight, KeyInFlight(key, waiter), None))
            return False, None
        return True, key

    def _release_key(self, key: str | None) -> None:
        if key is not None and self._keys is not None:
            self._keys.release(key)

    def _hold_until_landed(self, landing: asyncio.Future[Any]) -> None:
        # Shielded: the gathers that wait for it must never cancel the writer's own future.
        held = asyncio.shield(landing)
        self._detached.add(held)
        held.add_done_callback(self._detached.discard)

    async def _detached_ended(self) -> None:
        # Detached work may add holds while it is awaited (a write that outlived its answer).
        while self._detached:
            await asyncio.gather(*self._detached, return_exceptions=True)

    def _detach(self, detached: Detached, envelope: Envelope[Any], key: str | None) -> None:
        task = asyncio.get_running_loop().create_task(detached.work)
        self._detached.add(task)

        def settle(done: asyncio.Future[Any]) -> None:
            self._detached.discard(done)
            self.last_active = asyncio.get_running_loop().time()
            try:
                self._answer_detached(done, envelope)
            finally:
                self._release_key(key)

        task.add_done_callback(settle)

    def _answer_detached(self, done: asyncio.Future[Any], envelope: Envelope[Any]) -> None:
        """Answer `envelope` with the outcome of its detached work."""
        if envelope.reply_to is None:
            if not done.cancelled() and done.exception() is not None:
                logger.warning(
                    "%s: detached work for a tell failed", self, exc_info=done.exception()
                )
            return
        if done.cancelled():
            error = ActorDeadError(f"{self} was stopped before its work finished")
            envelope.reply_to.set_exception((ActorDeadError, error, None))
        elif (exc := done.exception()) is not None:
            envelope.reply_to.set_exception((type(exc), exc, exc.__traceback__))
        else:
            envelope.reply_to.set(done.result())

    async def _stop_async(self, envelope: Envelope[Any]) -> None:
        self.actor_stopped.set()
        if self._detached:
            # Work already handed out finishes (and answers its callers) before the actor goes.
            # What was queued behind the stop is answered first, so that detached work waiting
            # on a follow-up message to this actor is not left waiting on a mailbox nobody reads.
            self._fail_queued()
            await self._detached_ended()
        try:
            await self.on_passivate()
        except Exception:
            logger.exception("%s: on_passivate raised", self)
        if envelope.reply_to is not None:
            envelope.reply_to.set(None)

    def _fail_queued(self) -> None:
        while not self.inbox.empty():
            envelope = self.inbox.get()
            if envelope.reply_to is None:
                continue
            if isinstance(envelope.message, _ActorStop):
                envelope.reply_to.set(None)
                continue
            error = ActorStoppedBeforeHandling(f"{self} stopped before handling the message")
            envelope.reply_to.set_exception((type(error), error, None))

    def _stop(self) -> None:
        # pykka's synchronous stop path; ours is `_stop_async`, reached through the inbox.
        self.actor_stopped.set()

    def _handle_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        if isinstance(exception_value, Reload):
            logger.warning("%s reloads from storage: %s", self, exception_value)
            self.actor_stopped.set()
            return
        logger.error(
            "Unhandled exception in %s; it stops and restarts from its last snapshot",
            self,
            exc_info=(exception_type, exception_value, traceback),
        )
        self.actor_stopped.set()


async def ask(ref: ActorRef[Any], message: Any) -> Any:
    """Send `message` and await the reply without blocking the loop."""
    future = ref.ask(message, block=False)
    assert isinstance(future, AsyncioFuture), "ask() is for asyncio actors"
    return await future


async def stop(ref: ActorRef[Any]) -> bool:
    """Ask the actor to stop after the messages already queued; False if it was already dead."""
    try:
        await ask(ref, _ActorStop())
    except ActorDeadError:
        return False
    return True
