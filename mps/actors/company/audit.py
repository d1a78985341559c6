"""Appending to the company's audit trail, in the same unit as the change each entry records.

The chain is extended one unit at a time: a unit's entries are numbered and hashed onto the
chain's head only when the units before it have landed (an `asyncio.Lock` held from linking to
commit), so a refused unit never leaves a later entry pointing at a hash that does not exist.
Only audited units wait for each other; the rest of the actor's traffic does not. A turn that
must not wait hands `commit_audited` to a detached task; the lock orders those tasks.

A unit of unknown outcome may or may not have extended the chain: the actor is marked stale
and reloads its head from storage before deciding again (mps.actors.company.ledger).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mps.actors.commits import undo_on_failure
from mps.actors.company.messages import RecordAudit
from mps.actors.company.state import CompanyState
from mps.actors.runtime import Detached
from mps.domain.audit import AuditContext, AuditEntry, link
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.persistence.audit_store import entry_insert
from mps.persistence.statements import Row, Statement

__all__ = ["commit_audited", "entry", "record"]


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


async def commit_audited(
    state: CompanyState, statements: Sequence[Statement], entries: Sequence[AuditEntry]
) -> list[list[Row]]:
    """Commit `statements` with `entries` appended to the chain; the statements' rows."""
    if not entries:
        return await state.context.commit(*statements)
    async with state.audit_lock:
        linked, head = link(entries, state.audit_head)
        rows_of = [entry_insert(state.company_id, e) for e in linked]
        with undo_on_failure(stale=state.mark_stale):
            rows = await state.context.commit(*statements, *rows_of)
        state.audit_head = head
    return rows[: len(statements)]


def record(state: CompanyState, command: RecordAudit) -> Detached:
    """An entry alone on the trail, appended in turn with the rest (its own unit)."""
    state.require()
    appended = entry(state, command.audit, command.action, command.target, **command.details)

    async def commit() -> None:
        await commit_audited(state, [], [appended])

    return Detached(commit())
