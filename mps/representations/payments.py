"""A payment as the API and its events show it (interface 3, decisions 4)."""

from __future__ import annotations

from typing import Any

from mps.domain.payments import Payment

__all__ = ["payment_json"]


def payment_json(payment: Payment, public_url: str) -> dict[str, Any]:
    """The payment's public representation; `public_url` is the base of its `payUrl`."""
    return {
        "id": payment.id,
        "reference": payment.reference,
        "payUrl": f"{public_url}/pay/{payment.reference}",
        "status": payment.status,
        "amountMinor": str(payment.amount_minor),
        "currency": payment.currency,
        "createdAt": payment.created_at,
        "description": payment.description,
        "customerEmail": payment.customer_email,
        "customerPhone": payment.customer_phone,
        "customerId": payment.customer_id,
        "expiresAt": payment.expires_at,
        "allowMultiplePayments": payment.allow_multiple,
        "successUrl": payment.success_url,
        "cancelUrl": payment.cancel_url,
        "webhookUrl": payment.webhook_url,
        "customMetadata": payment.metadata,
        "livemode": payment.livemode,
        "paidAt": payment.paid_at,
        "amountRefundedMinor": str(payment.amount_refunded_minor),
        "linkPaymentId": payment.link_payment_id,
        "paymentMethod": (
            {"brand": payment.card_brand, "last4": payment.card_last4}
            if payment.card_last4
            else None
        ),
        "updatedAt": payment.updated_at,
    }
