"""Bank accounts and payouts (decisions 5), as pure values and transitions.

Vocabulary (payout states):
    PENDING     created: the amount is reserved from available; cancellable
    IN_TRANSIT  the bank took it; it arrives at `arrivalAt`
    PAID        it arrived; the reservation is spent
    FAILED      the bank returned it (`failureReason`); the reservation is released
    CANCELLED   cancelled while PENDING; the reservation is released

The company actor applies these one at a time with the ledger movement each makes
(mps.domain.ledger), so a payout can neither be paid twice nor both paid and cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from mps.domain.clock import iso
from mps.domain.company import InMode
from mps.errors import Conflict

__all__ = [
    "OPEN",
    "PAYOUT_SCHEDULES",
    "PAYOUT_STATUSES",
    "BankAccount",
    "Payout",
    "arrive",
    "cancel",
    "create",
    "fail",
    "next_run",
    "to_transit",
]

PAYOUT_STATUSES = ("PENDING", "IN_TRANSIT", "PAID", "FAILED", "CANCELLED")
OPEN = frozenset({"PENDING", "IN_TRANSIT"})
PAYOUT_SCHEDULES = ("manual", "daily", "weekly")


@dataclass(frozen=True)
class BankAccount(InMode):
    id: str
    company_id: str
    mode: str
    account_holder_name: str
    last4: str
    bank_code: str
    currency: str
    country: str
    status: str
    created_at: str
    deleted_at: str | None = None


@dataclass(frozen=True)
class Payout(InMode):
    id: str
    company_id: str
    mode: str
    status: str
    amount_minor: int
    currency: str
    bank_account_id: str
    created_at: str
    updated_at: str
    version: int = 1
    description: str | None = None
    failure_reason: str | None = None
    automatic: bool = False
    arrival_at: str | None = None
    # When the bank takes the next step of an open payout (mps.actors.schedulers.money).
    next_step_at: str | None = None


def create(
    *,
    payout_id: str,
    account: BankAccount,
    amount: int,
    description: str | None,
    automatic: bool,
    now: datetime,
    transit_after: timedelta,
) -> Payout:
    stamp = iso(now)
    return Payout(
        id=payout_id,
        company_id=account.company_id,
        mode=account.mode,
        status="PENDING",
        amount_minor=amount,
        currency=account.currency,
        bank_account_id=account.id,
        description=description,
        automatic=automatic,
        created_at=stamp,
        updated_at=stamp,
        next_step_at=iso(now + transit_after),
    )


def _require(payout: Payout, allowed: frozenset[str], action: str) -> None:
    if payout.status not in allowed:
        wanted = " or ".join(sorted(allowed))
        msg = f"Cannot {action} a payout that is {payout.status}; it must be {wanted}"
        raise Conflict(msg, code="invalid_state")


def _bump(payout: Payout, now: datetime, **changes: object) -> Payout:
    return replace(payout, version=payout.version + 1, updated_at=iso(now), **changes)  # type: ignore[arg-type]


def to_transit(payout: Payout, now: datetime, arrival_after: timedelta) -> Payout:
    _require(payout, frozenset({"PENDING"}), "send")
    arrival = iso(now + arrival_after)
    return _bump(payout, now, status="IN_TRANSIT", arrival_at=arrival, next_step_at=arrival)


def arrive(payout: Payout, now: datetime) -> Payout:
    _require(payout, OPEN, "pay")
    return _bump(payout, now, status="PAID", arrival_at=iso(now), next_step_at=None)


def fail(payout: Payout, now: datetime, reason: str) -> Payout:
    _require(payout, OPEN, "fail")
    return _bump(payout, now, status="FAILED", failure_reason=reason, next_step_at=None)


def cancel(payout: Payout, now: datetime) -> Payout:
    _require(payout, frozenset({"PENDING"}), "cancel")
    return _bump(payout, now, status="CANCELLED", next_step_at=None)


def next_run(schedule: str, after: datetime) -> datetime | None:
    """When an automatic payout next runs: the next midnight UTC (daily) or the next Monday's
    (weekly) strictly after `after`; None for `manual`."""
    midnight = after.replace(hour=0, minute=0, second=0, microsecond=0)
    if schedule == "daily":
        return midnight + timedelta(days=1)
    if schedule == "weekly":
        return midnight + timedelta(days=7 - midnight.weekday())
    return None
