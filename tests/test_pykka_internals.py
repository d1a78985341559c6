"""The private parts of pykka our actors rely on (mps.actors.pykka_internals), checked against
the installed pykka: a release that renames or reshapes one fails here, by name, before the
actor runtime misbehaves somewhere less obvious.

These use pykka's own `Actor` and `ActorRef` with a hand-written actor type whose hooks only
record what pykka asks of them: no thread, no event loop."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pykka
import pytest

from mps.actors.pykka_internals import ACTOR_HOOKS, ActorStop, Envelope
from mps.actors.runtime import AsyncioActor

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


class _Inbox:
    """Keeps what pykka puts in it, in order."""

    def __init__(self) -> None:
        self.items: list[Envelope[Any]] = []

    def put(self, envelope: Envelope[Any], /) -> None:
        self.items.append(envelope)

    def get(self) -> Envelope[Any]:
        return self.items.pop(0)

    def empty(self) -> bool:
        return not self.items


class _Future(pykka.Future[Any]):
    pass


class _RecordingActor(pykka.Actor):
    """An actor type made through pykka's extension points; its loop never runs."""

    started: list[_RecordingActor] = []  # noqa: RUF012 (a record, read by the tests)

    @staticmethod
    def _create_actor_inbox() -> _Inbox:
        return _Inbox()

    @staticmethod
    def _create_future() -> _Future:
        return _Future()

    def _start_actor_loop(self) -> None:
        _RecordingActor.started.append(self)


@pytest.fixture
def actor_ref() -> Any:
    ref = _RecordingActor.start()
    yield ref
    pykka.ActorRegistry.unregister(ref)
    _RecordingActor.started.clear()


def _pinned_pykka() -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    [pin] = [d for d in dependencies if re.match(r"pykka\b", d)]
    return pin.removeprefix("pykka==")


def test_installed_pykka_is_the_version_pinned_in_pyproject() -> None:
    # given the exact pin our private names were checked against
    pinned = _pinned_pykka()

    # when / then the installed pykka is that one (a range would let an unchecked release in)
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"pykka must be pinned exactly, not {pinned!r}"
    assert version("pykka") == pinned


def test_envelope_carries_the_message_and_the_future_to_reply_to() -> None:
    # given a future
    future = _Future()

    # when envelopes are made for an ask and for a tell
    asked = Envelope("question", reply_to=future)
    told = Envelope("news")

    # then they hold exactly those two fields
    assert (asked.message, asked.reply_to) == ("question", future)
    assert (told.message, told.reply_to) == ("news", None)
    assert set(Envelope.__slots__) == {"message", "reply_to"}


def test_pykka_makes_an_actor_with_our_inbox_and_starts_it_through_our_loop_hook(
    actor_ref: Any,
) -> None:
    # given an actor type that only overrides pykka's hooks, started above
    [actor] = _RecordingActor.started

    # then pykka started its loop through our hook, asked our hook for the inbox, and shares
    # the inbox and the stopped flag with the ref
    assert isinstance(actor.actor_inbox, _Inbox)
    assert actor_ref.actor_inbox is actor.actor_inbox
    assert actor._actor_ref is actor_ref
    assert actor_ref.actor_stopped is actor.actor_stopped
    assert not actor.actor_stopped.is_set()
    assert actor_ref.actor_class is _RecordingActor


def test_a_tell_puts_an_envelope_without_a_future_in_the_inbox(actor_ref: Any) -> None:
    # when
    actor_ref.tell("news")

    # then
    [envelope] = actor_ref.actor_inbox.items
    assert isinstance(envelope, Envelope)
    assert (envelope.message, envelope.reply_to) == ("news", None)


def test_an_ask_puts_an_envelope_replying_to_the_future_our_hook_made(actor_ref: Any) -> None:
    # when
    future = actor_ref.ask("question", block=False)

    # then the caller holds the future our hook made, and the envelope replies to it
    [envelope] = actor_ref.actor_inbox.items
    assert isinstance(future, _Future)
    assert envelope.message == "question"
    assert envelope.reply_to is future


def test_a_stop_sends_the_actor_stop_message_behind_queued_ones(actor_ref: Any) -> None:
    # given a message already queued
    actor_ref.tell("first")

    # when the actor is asked to stop
    actor_ref.stop(block=False)

    # then the stop is the private message we recognise, after the one queued
    first, stop = actor_ref.actor_inbox.items
    assert first.message == "first"
    assert isinstance(stop.message, ActorStop)
    assert isinstance(stop.reply_to, _Future)
    assert ActorStop() == ActorStop()


def test_every_hook_we_override_is_still_one_of_pykka_actor() -> None:
    # then each name AsyncioActor overrides is defined by pykka.Actor itself
    for name in ACTOR_HOOKS:
        assert callable(getattr(pykka.Actor, name, None)), f"pykka.Actor.{name} is gone"
        assert name in vars(AsyncioActor), f"AsyncioActor no longer overrides {name}"
    for name in ("_create_actor_inbox", "_create_future"):
        assert isinstance(inspect.getattr_static(pykka.Actor, name), staticmethod), name
    assert list(inspect.signature(pykka.Actor._handle_failure).parameters) == [
        "self",
        "exception_type",
        "exception_value",
        "traceback",
    ]


def test_a_future_without_a_get_hook_leaves_get_to_the_subclass() -> None:
    # given pykka's base future, with no get hook
    future = _Future()

    # then it says so by raising NotImplementedError, which AsyncioFuture.get relies on
    assert future._get_hook is None
    with pytest.raises(NotImplementedError):
        future.get(timeout=0)
