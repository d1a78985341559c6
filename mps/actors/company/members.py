"""The company and the people in it: creating the company with its owner, adding members,
changing its settings."""

from __future__ import annotations

from dataclasses import replace

from mps.actors.company.audit import commit_audited, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.messages import AddMember, CreateCompany, UpdateSettings
from mps.actors.company.state import CompanyState
from mps.auth.scopes import OWNER_ROLE
from mps.domain.clock import iso
from mps.domain.company import Company
from mps.domain.ids import new_id
from mps.domain.payouts import next_run
from mps.errors import Conflict
from mps.persistence import company_store as store
from mps.persistence import payout_store
from mps.persistence.database import IntegrityConflict

__all__ = ["add_member", "create_company", "update_settings"]


async def create_company(state: CompanyState, command: CreateCompany) -> str:
    if state.company is not None:
        msg = "company already exists"
        raise RuntimeError(msg)
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
    rows = await state.context.commit(*statements)
    owner: str = rows[-1][0]["user_id"]
    state.company = company
    state.members = {owner: OWNER_ROLE}
    return owner


async def add_member(state: CompanyState, command: AddMember) -> str:
    state.require()
    now = iso(state.context.clock())
    statements = store.membership(
        state.company_id, new_id("usr"), command.email, command.name, command.role_id, now
    )
    try:
        rows = await state.context.commit(*statements)
    except IntegrityConflict as exc:
        raise Conflict("That person is a member already", code="already_member") from exc
    user_id: str = rows[-1][0]["user_id"]
    state.members[user_id] = command.role_id
    return user_id


async def update_settings(state: CompanyState, command: UpdateSettings) -> Company:
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
    await commit_audited(state, statements, [audit])
    state.company = replace(updated, version=company.version + 1)
    return state.company
