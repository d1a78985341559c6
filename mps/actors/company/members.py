"""The company and the people in it: creating the company with its owner, adding members,
changing its settings. Each decides in the turn and commits detached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from mps.actors.commits import undo_on_failure
from mps.actors.company.audit import commit_held, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.runtime import Detached
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.company import Company
from mps.domain.ids import new_id
from mps.domain.payouts import next_run
from mps.domain.scopes import OWNER_ROLE
from mps.errors import Conflict
from mps.persistence import company_store as store
from mps.persistence import payout_store
from mps.persistence.database import IntegrityConflict

__all__ = [
    "AddMember",
    "CreateCompany",
    "UpdateSettings",
    "add_member",
    "create_company",
    "member_once",
    "update_settings",
]


@dataclass(frozen=True)
class CreateCompany:
    """Reply: the owner's user id."""

    name: str
    owner_email: str
    owner_name: str | None


@dataclass(frozen=True)
class AddMember:
    """Reply: the member's user id. Creates the user when the email has no account yet; 409
    when they are a member already. (Invitations accept through this.)"""

    email: str
    name: str | None
    role_id: str


@dataclass(frozen=True)
class UpdateSettings:
    """Reply: the company after the change. `changes` are already validated field values of
    the mode's settings; `name`, when given, renames the company (shared by both modes)."""

    mode: str
    changes: dict[str, Any]
    audit: AuditContext = SYSTEM
    name: str | None = None


def create_company(state: CompanyState, command: CreateCompany) -> Detached:
    """Reply: the owner's user id, once committed. The company is held from the turn on (a
    second create finds it); its owner joins the members once the commit names them."""
    if state.company is not None:
        # The same sign-up's code entered twice at once, both spends landing before the company
        # did (a sign-up's code stays spendable until its company exists): one makes it.
        raise Conflict("The company was created already", code="invalid_state")
    now = iso(state.context.clock())
    company = Company(id=state.company_id, name=command.name, version=1, created_at=now)
    # A fresh id is harmless when the email already has an account: that user is kept, and
    # the membership names whichever user holds the email.
    statements = [
        store.company_insert(company),
        *store.membership(
            company.id, new_id("usr"), command.owner_email, command.owner_name, OWNER_ROLE, now
        ),
    ]
    state.company = company

    def undo() -> None:
        if state.company is company:
            state.company = None

    async def commit() -> str:
        with undo_on_failure(undo=undo, stale=state.mark_stale):
            rows = await state.context.commit(*statements)
        return state.hold_member(rows, OWNER_ROLE)

    return Detached(commit())


@contextmanager
def member_once() -> Iterator[None]:
    """409 `already_member` for a membership unit refused because the person is one."""
    try:
        yield
    except IntegrityConflict as exc:
        raise Conflict("That person is a member already", code="already_member") from exc


def add_member(state: CompanyState, command: AddMember) -> Detached:
    """Reply: the member's user id, once committed. Who the user is (a new one, or the account
    the email has already) is known only from the commit, so the member is held from then on;
    a message sent after the reply finds them."""
    state.require()
    now = iso(state.context.clock())
    statements = store.membership(
        state.company_id, new_id("usr"), command.email, command.name, command.role_id, now
    )

    async def commit() -> str:
        with member_once(), undo_on_failure(stale=state.mark_stale):
            rows = await state.context.commit(*statements)
        return state.hold_member(rows, command.role_id)

    return Detached(commit())


def update_settings(state: CompanyState, command: UpdateSettings) -> Detached:
    """Reply: the company as updated, once committed; held from the turn on, so the next
    settings change (or a payout checking the live account) is decided against it."""
    require_fresh(state)
    company = state.require()
    updated = company.with_settings(
        command.mode, replace(company.settings[command.mode], **command.changes)
    )
    if command.name is not None:
        updated = replace(updated, name=command.name)
    moment = state.context.clock()
    now = iso(moment)
    statements = [store.company_update(company, updated, now)]
    schedule = updated.settings[command.mode].payout_schedule
    if schedule != company.settings[command.mode].payout_schedule:
        upcoming = next_run(schedule, moment)
        statements.append(
            payout_store.schedule_set(
                company.id, command.mode, schedule, iso(upcoming) if upcoming else None
            )
        )
    shown = {k: list(v) if isinstance(v, tuple) else v for k, v in command.changes.items()}
    if command.name is not None:
        shown["name"] = command.name
    audit = entry(
        state, command.audit, "settings.updated", ("company", company.id),
        mode=command.mode, changes=shown,
    )  # fmt: skip
    undo = state.hold_company(company, updated)
    # The reply is the company as held from now on (its version moved on).
    return commit_held(state, statements, [audit], state.require(), undo)
