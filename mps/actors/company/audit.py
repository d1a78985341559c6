"""Appending to the company's audit trail, in the same unit as the change each entry records.

The chain is extended in memory, in commit order, and no lock is held across a commit. A
unit's entries are numbered and hashed onto the actor's in-memory head (`link`) in the same
synchronous step that hands the unit to the writer, so the order units are linked is the order
they are sent, which is the order the writer commits them (one sender's units land in the order
sent, in the same or later group commits). Audited units therefore share group commits like any
others: twenty payouts decided in twenty turns are linked 1..20 and written together.

A unit linked after another may reach storage before anyone knows whether that other one
landed. So the unit's first entry is inserted only when the entry it was linked after is stored:
its insert names an *anchor*, the first entry of the unit linked just before it (the stored head
after activation), and writes nothing unless that row exists (`entry_insert(..., after=)`),
failing its unit with `ChainMoved` otherwise. A unit is all or nothing, so its first entry
stored means all of it is. The guarded inserts come first in their units, so within one group
commit they run in unit order (`plan_batch`), each seeing the one before.

What happens when a linked unit fails, the chain's side of `mps.actors.commits`:

    refused   (its key stored first, a guard of its own, a number taken) Nothing of it was
              stored, so every unit linked after it will fail its guard in turn. The head
              goes back to where it was before the refused unit, and the chain's *generation*
              moves on; a unit that then fails with `ChainMoved` under an older generation is
              one of those doomed followers, and is linked again onto the head as it is now
              and sent again, unchanged otherwise (it was rolled back whole, so sending it
              again is sending it once). Its caller notices nothing but the wait; the refused
              unit's caller gets the refusal.
    unknown   (Unavailable, a cancellation) The head may or may not include it: the actor is
              marked stale, reloads its head from storage before it decides again (like its
              books, mps.actors.company.ledger.require_fresh), and followers whose guard then
              fails are answered 503 with Retry-After (they were rolled back whole, so a retry
              runs them once).

Units are answered in the order they were sent (the writer answers a group commit's units in
order, and a later group commit after an earlier one), so a unit's refusal is known before that
of any unit linked after it, and the generation tells the two apart.

A unit failing `ChainMoved` under the current generation means the head in memory is not
storage's (it cannot happen while one incarnation appends; should it, the actor is marked
stale and reloads rather than keep linking onto a head that is not stored).

Re-linking rather than failing the followers: a refusal is an answer to one request (a retried
Idempotency-Key, most often), and twenty payouts behind it must not each answer 503 for it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mps.actors.commits import outcome_unknown, undo_on_failure
from mps.actors.company.state import CompanyState, require_fresh
from mps.actors.runtime import Detached
from mps.domain import audit as chain
from mps.domain.audit import SYSTEM, AuditContext, AuditEntry, AuditHead
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.errors import Unavailable
from mps.persistence.audit_store import ChainMoved, entry_insert
from mps.persistence.statements import Row, Statement

__all__ = ["RELINKS", "RecordAudit", "commit_audited", "commit_held", "entry", "record"]


@dataclass(frozen=True)
class RecordAudit:
    """Reply: None, once the entry is on the trail. For an audited act that changes nothing
    the company actor holds (revealing a card's details)."""

    action: str
    target: tuple[str, str]
    details: dict[str, Any]
    audit: AuditContext = SYSTEM


# How many times a unit doomed by refusals before it is linked again; past that (refusals
# landing one after the other, unheard of) it is answered 503.
RELINKS = 5


def entry(
    state: CompanyState,
    context: AuditContext,
    action: str,
    target: tuple[str, str] | None = None,
    **details: Any,
) -> AuditEntry:
    """A new entry for `action` on `target` (type, id), made now by `context`'s actor."""
    target_type, target_id = target if target is not None else (None, None)
    return AuditEntry(
        id=new_id("aud"),
        at=iso(state.context.clock()),
        action=action,
        context=context,
        target_type=target_type,
        target_id=target_id,
        details={k: v for k, v in details.items() if v is not None},
    )


@dataclass(frozen=True, slots=True)
class _Link:
    """A unit's place in the chain: its entries' inserts, and what the chain was before it."""

    inserts: list[Statement]
    generation: int
    head_before: AuditHead
    anchor_before: AuditHead


def _link(state: CompanyState, entries: Sequence[AuditEntry]) -> _Link:
    """Number and hash `entries` onto the head in memory, and move the head past them. Runs in
    the step that sends the unit (no await between the two)."""
    head_before = state.audit_head
    anchor_before = state.audit_anchor if state.audit_anchor is not None else head_before
    linked, head = chain.link(entries, head_before)
    first = linked[0]
    inserts = [entry_insert(state.company_id, first, after=anchor_before)]
    inserts += [entry_insert(state.company_id, e) for e in linked[1:]]
    state.audit_head = head
    state.audit_anchor = AuditHead(first.seq, first.hash)
    return _Link(inserts, state.audit_generation, head_before, anchor_before)


def _rewind(state: CompanyState, link: _Link) -> None:
    """The unit was refused: the chain in memory goes back to before it, and the units linked
    after it (doomed to fail their guard) are told apart by the generation."""
    if link.generation != state.audit_generation:
        return  # a doomed follower refused on its own account: the head was rewound already
    state.audit_head = link.head_before
    state.audit_anchor = link.anchor_before
    state.audit_generation += 1


T = TypeVar("T")


def commit_held(
    state: CompanyState,
    statements: Sequence[Statement],
    entries: Sequence[AuditEntry],
    reply: T,
    undo: Callable[[], None],
    conflict: Callable[[Exception], Exception | None] = lambda _exc: None,
) -> Detached:
    """Commit, detached, what the turn already holds in memory (`commit_audited`): `reply`
    once committed. On failure `undo` takes the change back, and the actor is marked stale
    when the outcome is unknown (mps.actors.commits); `conflict` may translate the failure
    into the error the caller should see."""

    async def work() -> T:
        try:
            with undo_on_failure(undo=undo, stale=state.mark_stale):
                await commit_audited(state, statements, entries)
        except Exception as exc:
            translated = conflict(exc)
            if translated is not None:
                raise translated from exc
            raise
        return reply

    coroutine: Coroutine[Any, Any, T] = work()
    return Detached(coroutine)


async def commit_audited(
    state: CompanyState, statements: Sequence[Statement], entries: Sequence[AuditEntry]
) -> list[list[Row]]:
    """Commit `statements` with `entries` appended to the chain; the statements' rows. Run it
    from detached work: it never holds the actor, and the chain's order is the order these
    calls reach their first await (module docstring)."""
    if not entries:
        return await state.context.commit(*statements)
    for _ in range(RELINKS):
        if state.stale:
            # Linking onto a head that may not be storage's would only be refused.
            msg = "The audit trail is being checked after a database fault; retry shortly"
            raise Unavailable(msg, retry_after=1)
        link = _link(state, entries)
        state.audit_in_flight += 1
        try:
            rows = await state.context.commit(*link.inserts, *statements)
        except ChainMoved as error:
            if link.generation != state.audit_generation:
                continue  # doomed by an earlier refusal: linked again onto the head as it is
            state.mark_stale()
            msg = "The audit trail is being reloaded; retry shortly"
            raise Unavailable(msg, retry_after=1) from error
        except BaseException as error:
            if outcome_unknown(error):
                state.mark_stale()
            else:
                _rewind(state, link)
            raise
        finally:
            state.audit_in_flight -= 1
        return rows[len(link.inserts) :]
    msg = "The audit trail is busy; retry shortly"
    raise Unavailable(msg, retry_after=1)


def record(state: CompanyState, command: RecordAudit) -> Detached:
    """An entry alone on the trail, appended in turn with the rest (its own unit)."""
    state.require()
    require_fresh(state)
    appended = entry(state, command.audit, command.action, command.target, **command.details)

    async def commit() -> None:
        await commit_audited(state, [], [appended])

    return Detached(commit())
