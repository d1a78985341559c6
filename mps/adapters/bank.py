"""The bank payouts travel through, behind one interface. The simulator is the shipped
implementation: test mode always uses it, and so does live mode in the development server mode;
in production live payouts wait, PENDING and cancellable, until a real adapter is configured.

The simulator pays every payout except to Stripe's documented failing test account numbers, so
a failed payout can be tried end to end: `000111111116` fails with `no_account`, `000111111113`
with `account_closed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Bank", "SimulatorBank", "TransferResult"]


@dataclass(frozen=True)
class TransferResult:
    """The bank's answer: accepted (or arrived), or refused with a reason."""

    accepted: bool
    reason: str | None = None


class Bank(Protocol):
    async def send(
        self, payout_id: str, amount_minor: int, currency: str, account_number: str
    ) -> TransferResult:
        """Hand the payout to the bank. Asked again for the same payout until it answers, so
        it must be idempotent on `payout_id`."""
        ...

    async def arrival(self, payout_id: str, account_number: str) -> TransferResult:
        """Whether the payout reached the account (accepted) or came back (refused)."""
        ...


_FAILING = {"000111111116": "no_account", "000111111113": "account_closed"}


class SimulatorBank:
    async def send(
        self, payout_id: str, amount_minor: int, currency: str, account_number: str
    ) -> TransferResult:
        return TransferResult(accepted=True)

    async def arrival(self, payout_id: str, account_number: str) -> TransferResult:
        reason = _FAILING.get(account_number)
        return TransferResult(accepted=reason is None, reason=reason)
