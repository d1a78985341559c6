"""The schemas of what moves or asks for money: payments and their customers, refunds, the
balance and its transactions, bank accounts and payouts, invoices, cards and their
authorizations."""

from __future__ import annotations

from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.ledger import MOVEMENT_TYPES
from mps.domain.payments import STATUSES
from mps.http.resources.common import (
    EMAIL_ERROR,
    EMAIL_STATUS,
    INVOICE_STATUS,
    MONEY,
    NULL_STR,
    PAYMENT_STATUS,
    PAYOUT_STATUS,
    REFUND_STATUS,
    TIME,
    named,
)
from mps.http.schema import Anything, Array, Bool, Enum, Int, Map, Obj, Schema, Str

__all__ = [
    "BALANCE",
    "BALANCE_TRANSACTION",
    "BANK_ACCOUNT",
    "BANK_ACCOUNT_FIELDS",
    "CARD",
    "CARD_AUTHORIZATION",
    "CARD_FIELDS",
    "CUSTOMER",
    "INVOICE",
    "INVOICE_FIELDS",
    "INVOICE_STATS",
    "PAYMENT",
    "PAYMENT_FIELDS",
    "PAYMENT_STATS",
    "PAYOUT",
    "PAYOUT_FIELDS",
    "REFUND",
    "REFUND_FIELDS",
    "TIMELINE_ENTRY",
]

PAYMENT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "reference": Str(),
    "payUrl": Str(format="uri"),
    "status": PAYMENT_STATUS,
    "amountMinor": MONEY,
    "currency": Str(),
    "createdAt": TIME,
    "description": NULL_STR,
    "customerEmail": NULL_STR,
    "customerPhone": NULL_STR,
    "customerId": NULL_STR,
    "expiresAt": Str(format="date-time", nullable=True),
    "allowMultiplePayments": Bool(),
    "successUrl": NULL_STR,
    "cancelUrl": NULL_STR,
    "webhookUrl": NULL_STR,
    "customMetadata": Map(values=Anything()),
    "livemode": Bool(),
    "paidAt": Str(format="date-time", nullable=True),
    "amountRefundedMinor": MONEY,
    "linkPaymentId": NULL_STR,
    "paymentMethod": Obj({"brand": Str(), "last4": Str()}, nullable=True, allow_unknown=True),
    "updatedAt": TIME,
}


PAYMENT = named("Payment", PAYMENT_FIELDS)


_STATUS_TOTAL = Obj({"count": Int(), "amountMinor": MONEY}, required=["count", "amountMinor"])


PAYMENT_STATS = named(
    "PaymentStats",
    {
        "currency": Str(),
        "count": Int(),
        "byStatus": Obj(dict.fromkeys(STATUSES, _STATUS_TOTAL), required=list(STATUSES)),
        "grossMinor": MONEY,
        "refundedMinor": MONEY,
        "netMinor": MONEY,
    },
)


CUSTOMER = named(
    "Customer",
    {
        "id": Str(),
        "email": NULL_STR,
        "phone": NULL_STR,
        "firstSeenAt": TIME,
        "lastSeenAt": TIME,
        "paymentCount": Int(),
        "totals": Array(
            Obj(
                {"currency": Str(), "paidMinor": MONEY, "refundedMinor": MONEY},
                required=["currency", "paidMinor", "refundedMinor"],
            )
        ),
        "createdAt": TIME,
    },
    required=["id", "email", "phone", "firstSeenAt", "lastSeenAt", "paymentCount", "totals"],
)


REFUND_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "paymentId": Str(),
    "amountMinor": MONEY,
    "currency": Str(),
    "status": REFUND_STATUS,
    "reason": NULL_STR,
    "failureReason": NULL_STR,
    "livemode": Bool(),
    "createdAt": TIME,
    "completedAt": Str(format="date-time", nullable=True),
    "updatedAt": TIME,
}


REFUND = named("Refund", REFUND_FIELDS)


BALANCE = named(
    "Balance",
    {
        "currency": Str(),
        "availableMinor": MONEY,
        "pendingMinor": MONEY,
        "reservedMinor": MONEY,
    },
)


BALANCE_TRANSACTION = named(
    "BalanceTransaction",
    {
        "id": Str(),
        "type": Enum(MOVEMENT_TYPES),
        "amountMinor": Str(
            pattern=r"-?[0-9]+",
            description="The signed change to available + pending + reserved, in minor units.",
        ),
        "currency": Str(),
        "sourceId": Str(description="What moved the money: the payment, refund, payout or card."),
        "changes": Obj(
            {"availableMinor": MONEY, "pendingMinor": MONEY, "reservedMinor": MONEY},
            required=["availableMinor", "pendingMinor", "reservedMinor"],
            description="The signed change to each balance.",
        ),
        "livemode": Bool(),
        "createdAt": TIME,
    },
    required=["id", "type", "amountMinor", "currency", "sourceId", "changes", "createdAt"],
    answered=False,
)


BANK_ACCOUNT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "accountHolderName": Str(),
    "last4": Str(),
    "accountNumberMasked": Str(),
    "bankCode": Str(),
    "currency": Str(),
    "country": Str(),
    "status": Enum(["VERIFIED"]),
    "livemode": Bool(),
    "createdAt": TIME,
}


BANK_ACCOUNT = named("BankAccount", BANK_ACCOUNT_FIELDS)


PAYOUT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "amountMinor": MONEY,
    "currency": Str(),
    "bankAccountId": Str(),
    "description": NULL_STR,
    "status": PAYOUT_STATUS,
    "failureReason": NULL_STR,
    "arrivalAt": Str(format="date-time", nullable=True),
    "automatic": Bool(),
    "livemode": Bool(),
    "createdAt": TIME,
    "updatedAt": TIME,
}


PAYOUT = named("Payout", PAYOUT_FIELDS)


_LINE = Obj(
    {
        "description": Str(),
        "quantity": Int(),
        "unitAmountMinor": MONEY,
        "amountMinor": MONEY,
    },
    required=["description", "quantity", "unitAmountMinor", "amountMinor"],
)


INVOICE_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "status": INVOICE_STATUS,
    "invoiceNumber": Str(),
    "amountMinor": MONEY,
    "currency": Str(),
    "customer": Obj({"email": Str(), "name": NULL_STR}, required=["email", "name"]),
    "items": Array(_LINE, nullable=True, description="None for a single-total invoice."),
    "dueDate": Str(format="date", nullable=True),
    "memo": NULL_STR,
    "paidAt": Str(format="date-time", nullable=True),
    "paidReference": NULL_STR,
    "voidedAt": Str(format="date-time", nullable=True),
    "hostedUrl": Str(format="uri", description="The customer's link to the hosted page."),
    "emailStatus": EMAIL_STATUS,
    "emailError": EMAIL_ERROR,
    "livemode": Bool(),
    "createdAt": TIME,
    "updatedAt": TIME,
}


INVOICE = named("Invoice", INVOICE_FIELDS)


INVOICE_STATS = named(
    "InvoiceStats",
    {
        "currency": Str(),
        "countByStatus": Obj(
            dict.fromkeys(INVOICE_STATUSES, Int()), required=list(INVOICE_STATUSES)
        ),
        "outstandingMinor": MONEY,
        "overdueMinor": MONEY,
        "paidMinor": MONEY,
    },
)


TIMELINE_ENTRY = named(
    "InvoiceTimelineEntry",
    {"status": Str(), "at": TIME, "actor": Str(), "note": NULL_STR},
    answered=False,
)


_LIMIT = Obj({"amountMinor": MONEY, "interval": Str()}, required=["amountMinor", "interval"])


CARD_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "type": Enum(["member", "company"]),
    "cardholderName": NULL_STR,
    "nickname": NULL_STR,
    "brand": Str(),
    "last4": Str(),
    "expMonth": Int(),
    "expYear": Int(),
    "currency": Str(),
    "balanceMinor": MONEY,
    "status": Enum(["ACTIVE", "FROZEN", "TERMINATED"]),
    "controls": Obj(
        {
            "spendingLimits": Array(_LIMIT),
            "allowedCategories": Array(Str()),
            "blockedCategories": Array(Str()),
        },
        required=["spendingLimits", "allowedCategories", "blockedCategories"],
    ),
    "memberId": NULL_STR,
    "livemode": Bool(),
    "createdAt": TIME,
    "updatedAt": TIME,
}


CARD = named("Card", CARD_FIELDS)


CARD_AUTHORIZATION = named(
    "CardAuthorization",
    {
        "id": Str(),
        "cardId": Str(),
        "amountMinor": MONEY,
        "currency": Str(),
        "approved": Bool(),
        "declineReason": NULL_STR,
        "merchantName": NULL_STR,
        "merchantCategory": NULL_STR,
        "createdAt": TIME,
    },
    required=["id", "cardId", "amountMinor", "currency", "approved", "declineReason", "createdAt"],
    answered=False,
)
