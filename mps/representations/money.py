"""Refunds, balances, ledger movements, bank accounts and payouts as the API and its events show
them (decisions 5)."""

from __future__ import annotations

from typing import Any

from mps.domain.ledger import Balance
from mps.domain.refunds import Refund

__all__ = ["balance_json", "refund_json", "transaction_json"]


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
