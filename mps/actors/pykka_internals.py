"""pykka's private names, in the one module that imports them.

Our asyncio actors (mps.actors.runtime) reuse pykka's vocabulary and its `ActorRef`, so they
meet pykka's internals in a few places. pykka says none of these is public API; a release may
rename or reshape any of them. Keeping every import here means an upgrade is checked in one
place, and tests/test_pykka_internals.py fails by name, before anything else does, if one moved.
pyproject.toml pins pykka to the version these were checked against.

What we rely on, and why:

* `Envelope(message, reply_to)` (`pykka._envelope`): what `ActorRef.tell` and `ActorRef.ask`
  put into an actor's inbox. Our loop reads `envelope.message` and answers
  `envelope.reply_to` (a future from `_create_future`, or None for a tell); the persistence
  actor takes several envelopes at once to commit them as one group.
* `_ActorStop` (`pykka.messages`): the message `ActorRef.stop` sends, and the one our `stop()`
  sends, so an actor stops after the messages queued before it. Our loop recognises it with
  `isinstance`, as pykka's does.
* The hooks pykka documents for new actor types, on `pykka.Actor`: `_create_actor_inbox`
  (called by `Actor.__init__`; ours returns an inbox bound to the running loop),
  `_create_future` (called by `ActorRef.ask`; ours returns an `AsyncioFuture`) and
  `_start_actor_loop` (called by `Actor.start`; ours creates the actor's task).
* Attributes `Actor.__init__` sets and `ActorRef` shares: `actor_inbox`, `actor_stopped`
  (an object with `is_set` and `set`) and `_actor_ref`; we give the actor and its ref a
  lighter stopped flag than a `threading.Event`.
* `Actor._stop` and `Actor._handle_failure`, which pykka's own paths call; ours override them.
* `Future._get_hook`, and `Future.get` raising `NotImplementedError` when no hook is set: our
  future's `get` falls back to its `asyncio.Future` then.
"""

from __future__ import annotations

from pykka._envelope import Envelope
from pykka.messages import _ActorStop as ActorStop

__all__ = ["ACTOR_HOOKS", "ActorStop", "Envelope"]

# The methods of `pykka.Actor` that mps.actors.runtime.AsyncioActor overrides, pykka's own
# private extension points and internal paths.
ACTOR_HOOKS = (
    "_create_actor_inbox",
    "_create_future",
    "_start_actor_loop",
    "_stop",
    "_handle_failure",
)
