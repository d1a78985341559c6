"""Refunds, balances, ledger movements, bank accounts and payouts as the API and its events show
them (decisions 5)."""

from __future__ import annotations

from typing import Any

from mps.domain.ledger import Balance
from mps.domain.payouts import BankAccount, Payout
from mps.domain.refunds import Refund

__all__ = ["balance_json", "bank_account_json", "payout_json", "refund_json", "transaction_json"]


def refund_json(refund: Refund) -> dict[str, Any]:
    return {
        "id": refund.id,
        "paymentId": refund.payment_id,
        "amountMinor": str(refund.amount_minor),
        "currency": refund.currency,
        "status": refund.status,
        "reason": refund.reason,
        "failureReason": refund.failure_reason,
        "livemode": refund.livemode,
        "createdAt": refund.created_at,
        "completedAt": refund.completed_at,
        "updatedAt": refund.updated_at,
    }


def balance_json(currency: str, balance: Balance) -> dict[str, Any]:
    return {
        "currency": currency,
        "availableMinor": str(balance.available),
        "pendingMinor": str(balance.pending),
        "reservedMinor": str(balance.reserved),
    }


def transaction_json(row: dict[str, Any]) -> dict[str, Any]:
    """A ledger movement from its row and the sums of its postings per merchant account."""
    available, pending, reserved = (
        int(row["available"]),
        int(row["pending"]),
        int(row["reserved"]),
    )
    return {
        "id": row["id"],
        "type": row["type"],
        "amountMinor": str(available + pending + reserved),
        "currency": row["currency"],
        "sourceId": row["source_id"],
        "changes": {
            "availableMinor": str(available),
            "pendingMinor": str(pending),
            "reservedMinor": str(reserved),
        },
        "livemode": row["mode"] == "live",
        "createdAt": row["created_at"],
    }


def bank_account_json(account: BankAccount) -> dict[str, Any]:
    """Masked: only the last four digits of the number are ever shown."""
    return {
        "id": account.id,
        "accountHolderName": account.account_holder_name,
        "last4": account.last4,
        "accountNumberMasked": f"****{account.last4}",
        "bankCode": account.bank_code,
        "currency": account.currency,
        "country": account.country,
        "status": account.status,
        "livemode": account.livemode,
        "createdAt": account.created_at,
    }


def payout_json(payout: Payout) -> dict[str, Any]:
    return {
        "id": payout.id,
        "amountMinor": str(payout.amount_minor),
        "currency": payout.currency,
        "bankAccountId": payout.bank_account_id,
        "description": payout.description,
        "status": payout.status,
        "failureReason": payout.failure_reason,
        "arrivalAt": payout.arrival_at,
        "automatic": payout.automatic,
        "livemode": payout.livemode,
        "createdAt": payout.created_at,
        "updatedAt": payout.updated_at,
    }
