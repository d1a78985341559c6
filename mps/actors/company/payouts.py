"""Bank accounts and payouts: the company actor holds its bank accounts and its open payouts,
and moves each payout's money through its ledger (mps.actors.company.ledger) in the same unit
as the payout's change.

Every command decides from memory and the commits are detached. A payout's new state is held
from the moment it is decided, so the next command for it (a cancel racing the bank) is decided
against it; should the commit fail, the payout's state before is put back, and when the
outcome is unknown the books are marked stale too, so the next money command reloads the actor
(mps.actors.commits, mps.actors.company.ledger). A bank account is held once its insert has
landed; a deleted one is dropped at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from datetime import timedelta
from typing import Any

from mps.actors.commits import undo_on_failure
from mps.actors.company.approvals import RequestApproval, request_approval
from mps.actors.company.audit import commit_audited, commit_held, entry
from mps.actors.company.ledger import commit_movements, require_fresh
from mps.actors.company.payouts_messages import (
    AdvancePayout,
    CancelPayout,
    CreateBankAccount,
    CreatePayout,
    DeleteBankAccount,
    PayoutOutcome,
    RunPayoutSchedule,
)
from mps.actors.company.state import CompanyState
from mps.actors.runtime import Detached
from mps.domain import payouts as rules
from mps.domain import purposes
from mps.domain.approvals import needs_approval
from mps.domain.audit import AuditEntry
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.ledger import Movement
from mps.domain.payouts import BankAccount, Payout
from mps.errors import Conflict, FieldError, Forbidden, NotFound, ValidationFailed
from mps.persistence import payout_store as store
from mps.persistence.outbox import event_writes
from mps.persistence.statements import Statement
from mps.representations.money import payout_json

__all__ = [
    "BANK_ACCOUNT_NUMBER_PURPOSE",
    "advance_payout",
    "cancel_payout",
    "create_bank_account",
    "create_payout",
    "delete_bank_account",
    "run_payout_schedule",
]

# The sealing purpose of account numbers (mps.auth.keyring): a sealed number opens only as one.
BANK_ACCOUNT_NUMBER_PURPOSE = purposes.BANK_ACCOUNT_NUMBER


def _require_verified(state: CompanyState, mode: str, what: str) -> None:
    company = state.require()
    if mode == "live" and company.settings["live"].kyc_status != "VERIFIED":
        raise Forbidden(f"Live {what} need a verified account", code="account_not_verified")


def create_bank_account(state: CompanyState, command: CreateBankAccount) -> Detached:
    require_fresh(state)
    company = state.require()
    _require_verified(state, command.mode, "bank accounts")
    supported = company.settings[command.mode].supported_currencies
    if command.currency not in supported:
        raise ValidationFailed([FieldError("currency", f"must be one of {', '.join(supported)}")])
    account = BankAccount(
        id=new_id("ba"),
        company_id=state.company_id,
        mode=command.mode,
        account_holder_name=command.account_holder_name,
        last4=command.account_number[-4:],
        bank_code=command.bank_code,
        currency=command.currency,
        country=command.country,
        # No micro-deposit check exists in this version: test accounts, and live ones of a
        # verified company, are usable at once.
        status="VERIFIED",
        created_at=iso(state.context.clock()),
    )
    sealed = state.keyring.seal(command.account_number.encode(), BANK_ACCOUNT_NUMBER_PURPOSE)
    statements = [store.bank_account_insert(account, sealed)]
    if command.idempotency is not None:
        statements += command.idempotency.statements(account)

    audit = entry(
        state, command.audit, "bank_account.created", ("bank_account", account.id),
        mode=account.mode, currency=account.currency, last4=account.last4,
    )  # fmt: skip

    async def commit() -> BankAccount:
        await commit_audited(state, statements, [audit])
        state.bank_accounts[account.id] = account
        return account

    return Detached(commit())


def _account(state: CompanyState, mode: str, account_id: str) -> BankAccount | None:
    account = state.bank_accounts.get(account_id)
    return account if account is not None and account.mode == mode else None


def delete_bank_account(state: CompanyState, command: DeleteBankAccount) -> Detached:
    require_fresh(state)
    state.require()
    account = _account(state, command.mode, command.account_id)
    if account is None:
        raise NotFound("No such bank account")
    if any(p.bank_account_id == account.id for p in state.payouts.values()):
        msg = "The bank account has payouts under way; wait for them or cancel them first"
        raise Conflict(msg, code="invalid_state")
    statement = store.bank_account_delete(account, iso(state.context.clock()))
    audit = entry(
        state, command.audit, "bank_account.deleted", ("bank_account", account.id),
        last4=account.last4,
    )  # fmt: skip
    # Gone from memory at once, so no payout is created to it while the delete commits.
    del state.bank_accounts[account.id]

    def undo() -> None:
        state.bank_accounts[account.id] = account

    return commit_held(state, [statement], [audit], account, undo)


def create_payout(
    state: CompanyState, command: CreatePayout, extra: Sequence[Statement] = ()
) -> Detached:
    """A PENDING payout reserving its amount; `extra` statements commit in the same unit."""
    state.require()
    require_fresh(state)
    _require_verified(state, command.mode, "payouts")
    account = _account(state, command.mode, command.bank_account_id)
    if account is None:
        raise ValidationFailed([FieldError("bankAccountId", "no such bank account")])
    if account.currency != command.currency:
        raise ValidationFailed(
            [FieldError("currency", f"must be the bank account's currency, {account.currency}")]
        )
    if command.requested_by is not None and needs_approval(
        state.policies, "payout.create", command.currency, command.amount_minor
    ):
        payload = {
            "amountMinor": str(command.amount_minor),
            "currency": command.currency,
            "bankAccountId": command.bank_account_id,
            "description": command.description,
        }
        gate = RequestApproval(
            command.mode, "payout.create", command.currency, command.amount_minor, payload,
            command.requested_by, command.audit, idempotency=command.idempotency,
        )  # fmt: skip
        return request_approval(state, gate)
    now = state.context.clock()
    payout = rules.create(
        payout_id=new_id("po"),
        account=account,
        amount=command.amount_minor,
        description=command.description,
        automatic=command.automatic,
        now=now,
        transit_after=timedelta(seconds=state.payout_transit_after),
    )
    movement = state.books.payout_reservation(
        payout.mode, payout.currency, payout.id, payout.amount_minor, payout.created_at
    )
    events, bodies = event_writes(payout, ("payout.created",), payout_json(payout))
    outcome = PayoutOutcome(payout, bodies)
    statements: list[Statement] = [store.payout_insert(payout), *events, *extra]
    if command.idempotency is not None:
        statements += command.idempotency.statements(outcome)
    audit = entry(
        state, command.audit, "payout.created", ("payout", payout.id),
        amountMinor=str(payout.amount_minor), currency=payout.currency,
        bankAccountId=payout.bank_account_id, automatic=payout.automatic,
    )  # fmt: skip
    return _commit(state, payout, [movement], statements, outcome, [audit])


def run_payout_schedule(state: CompanyState, command: RunPayoutSchedule) -> Detached:
    """Pay out each currency's whole available balance to its oldest bank account, if the mode
    still has a schedule and this run was not handled already; move the schedule on in the
    same unit as the first payout (or alone, when there is nothing to pay out)."""
    company = state.require()
    require_fresh(state)
    schedule = company.settings[command.mode].payout_schedule
    upcoming = rules.next_run(schedule, state.context.clock())
    done = state.schedule_runs.get(command.mode)
    if upcoming is None or (done is not None and done >= command.due_at):

        async def nothing() -> list[PayoutOutcome]:
            return []

        return Detached(nothing())
    state.schedule_runs[command.mode] = command.due_at
    advance = store.schedule_advance(state.company_id, command.mode, command.due_at, iso(upcoming))
    accounts = sorted(
        (a for a in state.bank_accounts.values() if a.mode == command.mode),
        key=lambda a: (a.created_at, a.id),
    )
    if command.mode == "live" and company.settings["live"].kyc_status != "VERIFIED":
        accounts = []  # live payouts need a verified account: the run only moves on
    work: list[Coroutine[Any, Any, PayoutOutcome]] = []
    for currency in sorted({a.currency for a in accounts}):
        amount = state.books.low((command.mode, currency)).available
        if amount <= 0:
            continue
        account = next(a for a in accounts if a.currency == currency)
        request = CreatePayout(
            command.mode, amount, currency, account.id, "Automatic payout", automatic=True
        )
        work.append(create_payout(state, request, [] if work else [advance]).work)

    def undo() -> None:
        # The schedule did not move on: the next pass must be free to run it again.
        if state.schedule_runs.get(command.mode) == command.due_at:
            del state.schedule_runs[command.mode]

    async def run() -> list[PayoutOutcome]:
        with undo_on_failure(undo=undo, stale=state.mark_stale):
            if not work:
                await state.context.commit(advance)
                return []
            return list(await asyncio.gather(*work))

    return Detached(run())


def cancel_payout(state: CompanyState, command: CancelPayout) -> Detached:
    state.require()
    require_fresh(state)
    payout = state.payouts.get(command.stored.id)
    if payout is None:
        # Not open here: closed since the caller read it, or closed already.
        stored = command.stored
        if stored.status in rules.OPEN:
            raise Conflict("The payout is no longer PENDING", code="invalid_state")
        rules.cancel(stored, state.context.clock())  # raises the 409 naming its state
    assert payout is not None
    after = rules.cancel(payout, state.context.clock())
    audit = entry(state, command.audit, "payout.cancelled", ("payout", payout.id))
    return _transition(state, payout, after, "payout.cancelled", command.idempotency, [audit])


def advance_payout(state: CompanyState, command: AdvancePayout) -> Detached:
    state.require()
    require_fresh(state)
    payout = state.payouts.get(command.payout_id)
    if payout is None or (command.mode is not None and payout.mode != command.mode):
        raise Conflict("The payout is not PENDING or IN_TRANSIT", code="invalid_state")
    now = state.context.clock()
    match command.step:
        case "transit":
            after = rules.to_transit(payout, now, timedelta(seconds=state.payout_arrival_after))
            return _transition(state, payout, after, None, command.idempotency)
        case "paid":
            return _transition(
                state, payout, rules.arrive(payout, now), "payout.paid", command.idempotency
            )
        case "failed":
            after = rules.fail(payout, now, command.reason or "failed")
            return _transition(state, payout, after, "payout.failed", command.idempotency)
    msg = f"unknown payout step {command.step!r}"
    raise ValueError(msg)


def _transition(
    state: CompanyState,
    before: Payout,
    after: Payout,
    event: str | None,
    idempotency: Any,
    audit: Sequence[AuditEntry] = (),
) -> Detached:
    books, stamp = state.books, after.updated_at
    movements: list[Movement] = []
    if after.status == "PAID":
        movements = [books.payout(after.mode, after.currency, after.id, after.amount_minor, stamp)]
    elif after.status in ("FAILED", "CANCELLED"):
        movements = [
            books.payout_release(after.mode, after.currency, after.id, after.amount_minor, stamp)
        ]
    events, bodies = event_writes(after, (event,) if event else (), payout_json(after))
    outcome = PayoutOutcome(after, bodies)
    statements: list[Statement] = [store.payout_update(before, after), *events]
    if idempotency is not None:
        statements += idempotency.statements(outcome)
    return _commit(state, after, movements, statements, outcome, audit)


def _commit(
    state: CompanyState,
    payout: Payout,
    movements: list[Movement],
    statements: list[Statement],
    outcome: PayoutOutcome,
    audit: Sequence[AuditEntry] = (),
) -> Detached:
    """Commit the payout's change with its movements (and audit entries), holding its new
    state from now on. Should the commit fail, the payout gets its state before back
    (mps.actors.commits): a unit refused whole (its key stored by an earlier try, an approved
    request run twice) leaves nothing else behind; one of unknown outcome also has the actor
    reload before its next money decision."""
    before = state.payouts.get(payout.id)
    if payout.status in rules.OPEN:
        state.payouts[payout.id] = payout
    else:
        state.payouts.pop(payout.id, None)
    detached = commit_movements(state, movements, statements, outcome, audit)

    def undo() -> None:
        if before is None:
            state.payouts.pop(payout.id, None)
        else:
            state.payouts[payout.id] = before

    async def commit() -> PayoutOutcome:
        with undo_on_failure(undo=undo, stale=state.mark_stale):
            result: PayoutOutcome = await detached.work
        return result

    return Detached(commit())
