"""Cards and their authorizations as the API and its events show them (decisions 6)."""

from __future__ import annotations

from typing import Any

from mps.domain.issuing import Card

__all__ = ["authorization_json", "card_json"]


def card_json(card: Card, balance: int) -> dict[str, Any]:
    """Never the full number or CVC: those only through the audited details route."""
    return {
        "id": card.id,
        "type": card.type,
        "cardholderName": card.cardholder_name,
        "nickname": card.nickname,
        "brand": card.brand,
        "last4": card.last4,
        "expMonth": card.exp_month,
        "expYear": card.exp_year,
        "currency": card.currency,
        "balanceMinor": str(balance),
        "status": card.status,
        "controls": card.controls.to_json(),
        "memberId": card.member_id,
        "livemode": card.livemode,
        "createdAt": card.created_at,
        "updatedAt": card.updated_at,
    }


def authorization_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "cardId": row["card_id"],
        "amountMinor": str(row["amount_minor"]),
        "currency": row["currency"],
        "approved": bool(row["approved"]),
        "declineReason": row["decline_reason"],
        "merchantName": row["merchant_name"],
        "merchantCategory": row["category"],
        "createdAt": row["created_at"],
    }
