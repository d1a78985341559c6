"""The commands for bank accounts and payouts, and what each replies.

Their handlers are in mps.actors.company.payouts; the commands have a module of their own only so
that neither module outgrows a reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mps.actors.idempotency import IdempotentCommand
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.payouts import Payout

__all__ = [
    "AdvancePayout",
    "CancelPayout",
    "CreateBankAccount",
    "CreatePayout",
    "DeleteBankAccount",
    "PayoutOutcome",
    "RunPayoutSchedule",
]


@dataclass(frozen=True)
class CreateBankAccount(IdempotentCommand):
    """Reply: the BankAccount, once committed. The number is sealed before it is stored."""

    mode: str
    account_holder_name: str
    account_number: str
    bank_code: str
    currency: str
    country: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteBankAccount:
    """Reply: the BankAccount as it was. 409 while an open payout goes to it."""

    mode: str
    account_id: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class CreatePayout(IdempotentCommand):
    """Reply: a PayoutOutcome with the PENDING payout and its payout.created event; or, when
    the amount is above the payout.create policy's threshold (and `approved` is not set), the
    PENDING ApprovalRequest made instead (only when `requested_by` is given)."""

    mode: str
    amount_minor: int
    currency: str
    bank_account_id: str
    description: str | None = None
    automatic: bool = False
    audit: AuditContext = SYSTEM
    # Who asks, for an approval request should the amount be above the policy's threshold;
    # None (an automatic payout, an approved request being run) asks for none.
    requested_by: str | None = None


@dataclass(frozen=True)
class CancelPayout(IdempotentCommand):
    """Reply: a PayoutOutcome. `stored` is the payout as the caller read it (404 before asking
    when there is none), so a closed payout's 409 can name its state without a read."""

    stored: Payout
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class AdvancePayout(IdempotentCommand):
    """Reply: a PayoutOutcome. The bank's next step for an open payout: `transit` (it took the
    payout), `paid` (it arrived) or `failed` (it came back, for `reason`). 409 unless the payout
    is open and the step follows from its state."""

    payout_id: str
    step: str
    reason: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class PayoutOutcome:
    payout: Payout
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class RunPayoutSchedule:
    """Reply: the PayoutOutcomes of the automatic payouts made. The mode's schedule run due at
    `due_at` (as stored): pay out the whole available balance of each currency to the oldest
    bank account in that currency, and move the schedule on."""

    mode: str
    due_at: str
