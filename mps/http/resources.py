"""Response schemas of the resources, for the route table and so for the OpenAPI document.

They describe what handlers send; `tests/test_openapi.py` checks real responses against them.
"""

from __future__ import annotations

from mps.domain.approvals import APPROVAL_STATUSES
from mps.domain.invitations import INVITATION_STATUSES
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.ledger import MOVEMENT_TYPES
from mps.domain.payments import STATUSES
from mps.domain.payouts import PAYOUT_STATUSES
from mps.domain.refunds import REFUND_STATUSES
from mps.http.schema import Anything, Array, Bool, Enum, Int, Map, Obj, Schema, Str

__all__ = [
    "API_KEY",
    "API_KEY_LOG",
    "APPROVAL",
    "APPROVAL_FIELDS",
    "AUDIT_ENTRY",
    "BALANCE",
    "BALANCE_TRANSACTION",
    "BANK_ACCOUNT",
    "BANK_ACCOUNT_FIELDS",
    "CARD",
    "CARD_AUTHORIZATION",
    "CARD_FIELDS",
    "CUSTOMER",
    "INVITATION",
    "INVITATION_FIELDS",
    "INVOICE",
    "INVOICE_FIELDS",
    "INVOICE_STATS",
    "MEMBER",
    "PAYMENT",
    "PAYMENT_STATS",
    "PAYOUT",
    "PAYOUT_FIELDS",
    "POLICY",
    "REFUND",
    "REFUND_FIELDS",
    "ROLE",
    "ROLE_FIELDS",
    "SESSION",
    "SETTINGS",
    "TIMELINE_ENTRY",
    "aggregate",
    "page",
    "resource",
]

_TIME = Str(format="date-time")
_MONEY = Str(pattern=r"-?[0-9]+", description="Minor units, as a string.")
_NULL_STR = Str(nullable=True)


def resource(fields: dict[str, Schema], required: list[str] | None = None) -> Obj:
    """A single resource: its fields next to ok and requestId."""
    return Obj(
        {"ok": Bool(), "requestId": Str(), **fields},
        required=["ok", "requestId", *(required if required is not None else list(fields))],
        allow_unknown=True,
    )


def page(item: Obj) -> Obj:
    return Obj(
        {
            "ok": Bool(),
            "requestId": Str(),
            "data": Array(item),
            "nextCursor": _NULL_STR,
            "hasMore": Bool(),
        },
        required=["ok", "requestId", "data", "nextCursor", "hasMore"],
        allow_unknown=True,
    )


def aggregate(data: Schema) -> Obj:
    return Obj(
        {"ok": Bool(), "requestId": Str(), "data": data},
        required=["ok", "requestId", "data"],
        allow_unknown=True,
    )


PAYMENT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "reference": Str(),
    "payUrl": Str(format="uri"),
    "status": Enum(STATUSES),
    "amountMinor": _MONEY,
    "currency": Str(),
    "createdAt": _TIME,
    "description": _NULL_STR,
    "customerEmail": _NULL_STR,
    "customerPhone": _NULL_STR,
    "customerId": _NULL_STR,
    "expiresAt": Str(format="date-time", nullable=True),
    "allowMultiplePayments": Bool(),
    "successUrl": _NULL_STR,
    "cancelUrl": _NULL_STR,
    "webhookUrl": _NULL_STR,
    "customMetadata": Map(values=Anything()),
    "livemode": Bool(),
    "paidAt": Str(format="date-time", nullable=True),
    "amountRefundedMinor": _MONEY,
    "linkPaymentId": _NULL_STR,
    "paymentMethod": Obj({"brand": Str(), "last4": Str()}, nullable=True, allow_unknown=True),
    "updatedAt": _TIME,
}
PAYMENT = Obj(PAYMENT_FIELDS, required=list(PAYMENT_FIELDS), allow_unknown=True)

_STATUS_TOTAL = Obj({"count": Int(), "amountMinor": _MONEY}, required=["count", "amountMinor"])
PAYMENT_STATS = Obj(
    {
        "currency": Str(),
        "count": Int(),
        "byStatus": Obj(dict.fromkeys(STATUSES, _STATUS_TOTAL), required=list(STATUSES)),
        "grossMinor": _MONEY,
        "refundedMinor": _MONEY,
        "netMinor": _MONEY,
    },
    required=["currency", "count", "byStatus", "grossMinor", "refundedMinor", "netMinor"],
    allow_unknown=True,
)

CUSTOMER = Obj(
    {
        "id": Str(),
        "email": _NULL_STR,
        "phone": _NULL_STR,
        "firstSeenAt": _TIME,
        "lastSeenAt": _TIME,
        "paymentCount": Int(),
        "totals": Array(
            Obj(
                {"currency": Str(), "paidMinor": _MONEY, "refundedMinor": _MONEY},
                required=["currency", "paidMinor", "refundedMinor"],
            )
        ),
        "createdAt": _TIME,
    },
    required=["id", "email", "phone", "firstSeenAt", "lastSeenAt", "paymentCount", "totals"],
    allow_unknown=True,
)

API_KEY_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "type": Enum(["secret", "publishable"]),
    "mode": Enum(["test", "live"]),
    "livemode": Bool(),
    "scopes": Array(Str()),
    "prefix": Str(),
    "last4": Str(),
    "createdAt": _TIME,
    "lastUsedAt": Str(format="date-time", nullable=True),
    "revokedAt": Str(format="date-time", nullable=True),
}
API_KEY = Obj(API_KEY_FIELDS, required=list(API_KEY_FIELDS), allow_unknown=True)

API_KEY_LOG = Obj(
    {
        "id": Str(),
        "at": _TIME,
        "method": Str(),
        "path": Str(),
        "statusCode": Int(),
        "ip": _NULL_STR,
        "requestId": Str(),
    },
    required=["id", "at", "method", "path", "statusCode", "ip", "requestId"],
)

_USER = Obj(
    {"id": Str(), "email": Str(), "name": _NULL_STR, "createdAt": _TIME},
    required=["id", "email", "name", "createdAt"],
)
_COMPANY = Obj(
    {"id": Str(), "name": Str(), "createdAt": _TIME}, required=["id", "name", "createdAt"]
)
_ROLE = Obj({"id": Str(), "name": Str()}, required=["id", "name"])
MEMBER_FIELDS: dict[str, Schema] = {
    "user": _USER,
    "company": _COMPANY,
    "role": _ROLE,
    "mode": Enum(["test", "live"]),
    "livemode": Bool(),
}
SESSION: dict[str, Schema] = {"sessionToken": Str(), "expiresAt": _TIME, **MEMBER_FIELDS}

SETTINGS: dict[str, Schema] = {
    "name": Str(),
    "mode": Enum(["test", "live"]),
    "supportedCurrencies": Array(Str()),
    "payoutSchedule": Enum(["manual", "daily", "weekly"]),
    "settlementDelaySec": Int(),
    "defaultApiVersion": Enum(["v1", "v2"]),
    "kycStatus": Enum(["UNVERIFIED", "PENDING", "VERIFIED", "REJECTED"]),
    "apiKeyAccess": Bool(
        description="Whether secret keys of this mode may call the payment, refund, balance, "
        "payout, bank-account, card, customer, invoice and event routes."
    ),
}

WEBHOOK_ENDPOINT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "url": Str(),
    "description": _NULL_STR,
    "events": Array(Str()),
    "status": Enum(["enabled", "disabled"]),
    "disabledReason": _NULL_STR,
    "livemode": Bool(),
    "previousSecretExpiresAt": Str(format="date-time", nullable=True),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
WEBHOOK_ENDPOINT = Obj(
    WEBHOOK_ENDPOINT_FIELDS, required=list(WEBHOOK_ENDPOINT_FIELDS), allow_unknown=True
)

WEBHOOK_DELIVERY_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "eventId": Str(),
    "eventType": Str(),
    "endpointId": _NULL_STR,
    "url": Str(),
    "status": Enum(["PENDING", "SUCCEEDED", "RETRYING", "DEAD"]),
    "attempts": Int(),
    "nextAttemptAt": Str(format="date-time", nullable=True),
    "lastAttemptAt": Str(format="date-time", nullable=True),
    "lastStatusCode": Int(nullable=True),
    "lastError": _NULL_STR,
    "replay": Bool(),
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
WEBHOOK_DELIVERY = Obj(
    WEBHOOK_DELIVERY_FIELDS, required=list(WEBHOOK_DELIVERY_FIELDS), allow_unknown=True
)
WEBHOOK_ATTEMPT = Obj(
    {
        "attempt": Int(),
        "at": _TIME,
        "statusCode": Int(nullable=True),
        "error": _NULL_STR,
        "durationMs": Int(),
    },
    required=["attempt", "at", "statusCode", "error", "durationMs"],
)

EVENT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "type": Str(),
    "createdAt": _TIME,
    "livemode": Bool(),
    "apiVersion": Str(),
    "sequence": Int(description="One more than the previous event of this company and mode."),
    "data": Obj({"object": Map(values=Anything())}, required=["object"]),
}
EVENT = Obj(EVENT_FIELDS, required=list(EVENT_FIELDS), allow_unknown=True)

REFUND_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "paymentId": Str(),
    "amountMinor": _MONEY,
    "currency": Str(),
    "status": Enum(REFUND_STATUSES),
    "reason": _NULL_STR,
    "failureReason": _NULL_STR,
    "livemode": Bool(),
    "createdAt": _TIME,
    "completedAt": Str(format="date-time", nullable=True),
    "updatedAt": _TIME,
}
REFUND = Obj(REFUND_FIELDS, required=list(REFUND_FIELDS), allow_unknown=True)

BALANCE = Obj(
    {
        "currency": Str(),
        "availableMinor": _MONEY,
        "pendingMinor": _MONEY,
        "reservedMinor": _MONEY,
    },
    required=["currency", "availableMinor", "pendingMinor", "reservedMinor"],
    allow_unknown=True,
)

BALANCE_TRANSACTION = Obj(
    {
        "id": Str(),
        "type": Enum(MOVEMENT_TYPES),
        "amountMinor": Str(
            pattern=r"-?[0-9]+",
            description="The signed change to available + pending + reserved, in minor units.",
        ),
        "currency": Str(),
        "sourceId": Str(description="The payment, refund or payout that moved the money."),
        "changes": Obj(
            {"availableMinor": _MONEY, "pendingMinor": _MONEY, "reservedMinor": _MONEY},
            required=["availableMinor", "pendingMinor", "reservedMinor"],
            description="The signed change to each balance.",
        ),
        "livemode": Bool(),
        "createdAt": _TIME,
    },
    required=["id", "type", "amountMinor", "currency", "sourceId", "changes", "createdAt"],
    allow_unknown=True,
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
    "createdAt": _TIME,
}
BANK_ACCOUNT = Obj(BANK_ACCOUNT_FIELDS, required=list(BANK_ACCOUNT_FIELDS), allow_unknown=True)

PAYOUT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "amountMinor": _MONEY,
    "currency": Str(),
    "bankAccountId": Str(),
    "description": _NULL_STR,
    "status": Enum(PAYOUT_STATUSES),
    "failureReason": _NULL_STR,
    "arrivalAt": Str(format="date-time", nullable=True),
    "automatic": Bool(),
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
PAYOUT = Obj(PAYOUT_FIELDS, required=list(PAYOUT_FIELDS), allow_unknown=True)

_LINE = Obj(
    {
        "description": Str(),
        "quantity": Int(),
        "unitAmountMinor": _MONEY,
        "amountMinor": _MONEY,
    },
    required=["description", "quantity", "unitAmountMinor", "amountMinor"],
)
INVOICE_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "status": Enum(INVOICE_STATUSES),
    "invoiceNumber": Str(),
    "amountMinor": _MONEY,
    "currency": Str(),
    "customer": Obj({"email": Str(), "name": _NULL_STR}, required=["email", "name"]),
    "items": Array(_LINE, nullable=True, description="None for a single-total invoice."),
    "dueDate": Str(format="date", nullable=True),
    "memo": _NULL_STR,
    "paidAt": Str(format="date-time", nullable=True),
    "paidReference": _NULL_STR,
    "voidedAt": Str(format="date-time", nullable=True),
    "hostedUrl": Str(format="uri", description="The customer's link to the hosted page."),
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
INVOICE = Obj(INVOICE_FIELDS, required=list(INVOICE_FIELDS), allow_unknown=True)
INVOICE_STATS = Obj(
    {
        "currency": Str(),
        "countByStatus": Obj(
            dict.fromkeys(INVOICE_STATUSES, Int()), required=list(INVOICE_STATUSES)
        ),
        "outstandingMinor": _MONEY,
        "overdueMinor": _MONEY,
        "paidMinor": _MONEY,
    },
    required=["currency", "countByStatus", "outstandingMinor", "overdueMinor", "paidMinor"],
    allow_unknown=True,
)
TIMELINE_ENTRY = Obj(
    {"status": Str(), "at": _TIME, "actor": Str(), "note": _NULL_STR},
    required=["status", "at", "actor", "note"],
)

ROLE_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "scopes": Array(Str()),
    "builtin": Bool(),
}
ROLE = Obj({**ROLE_FIELDS, "memberCount": Int()}, required=list(ROLE_FIELDS), allow_unknown=True)
MEMBER = Obj(
    {
        "userId": Str(),
        "email": Str(),
        "name": _NULL_STR,
        "roleId": _NULL_STR,
        "roleName": _NULL_STR,
        "joinedAt": _TIME,
    },
    required=["userId", "email", "name", "roleId", "roleName", "joinedAt"],
    allow_unknown=True,
)
AUDIT_ENTRY = Obj(
    {
        "id": Str(),
        "at": _TIME,
        "actor": Obj({"type": Str(), "id": _NULL_STR}, required=["type", "id"]),
        "action": Str(),
        "target": Obj({"type": _NULL_STR, "id": _NULL_STR}, required=["type", "id"]),
        "details": Map(values=Anything()),
        "ip": _NULL_STR,
        "requestId": _NULL_STR,
        "seq": Int(),
        "prevHash": _NULL_STR,
        "hash": Str(),
    },
    required=["id", "at", "actor", "action", "target", "details", "seq", "prevHash", "hash"],
    allow_unknown=True,
)

INVITATION_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "email": Str(),
    "roleId": Str(),
    "status": Enum(INVITATION_STATUSES),
    "invitedBy": Str(),
    "createdAt": _TIME,
    "expiresAt": _TIME,
    "decidedAt": Str(format="date-time", nullable=True),
}
INVITATION = Obj(INVITATION_FIELDS, required=list(INVITATION_FIELDS), allow_unknown=True)

APPROVAL_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "action": Str(),
    "status": Enum(APPROVAL_STATUSES),
    "requestedBy": Str(),
    "payload": Map(values=Anything()),
    "votes": Array(
        Obj(
            {"userId": Str(), "decision": Str(), "comment": _NULL_STR, "at": _TIME},
            required=["userId", "decision", "comment", "at"],
        )
    ),
    "requiredApprovals": Int(),
    "result": Map(values=Anything(), nullable=True),
    "error": Map(values=Anything(), nullable=True),
    "livemode": Bool(),
    "createdAt": _TIME,
    "expiresAt": _TIME,
    "decidedAt": Str(format="date-time", nullable=True),
}
APPROVAL = Obj(APPROVAL_FIELDS, required=list(APPROVAL_FIELDS), allow_unknown=True)
POLICY = Obj(
    {
        "action": Str(),
        "enabled": Bool(),
        "thresholds": Map(values=_MONEY),
        "requiredApprovals": Int(),
    },
    required=["action", "enabled", "thresholds", "requiredApprovals"],
    allow_unknown=True,
)

_LIMIT = Obj({"amountMinor": _MONEY, "interval": Str()}, required=["amountMinor", "interval"])
CARD_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "type": Enum(["member", "company"]),
    "cardholderName": _NULL_STR,
    "nickname": _NULL_STR,
    "brand": Str(),
    "last4": Str(),
    "expMonth": Int(),
    "expYear": Int(),
    "currency": Str(),
    "balanceMinor": _MONEY,
    "status": Enum(["ACTIVE", "FROZEN", "TERMINATED"]),
    "controls": Obj(
        {
            "spendingLimits": Array(_LIMIT),
            "allowedCategories": Array(Str()),
            "blockedCategories": Array(Str()),
        },
        required=["spendingLimits", "allowedCategories", "blockedCategories"],
    ),
    "memberId": _NULL_STR,
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
CARD = Obj(CARD_FIELDS, required=list(CARD_FIELDS), allow_unknown=True)
CARD_AUTHORIZATION = Obj(
    {
        "id": Str(),
        "cardId": Str(),
        "amountMinor": _MONEY,
        "currency": Str(),
        "approved": Bool(),
        "declineReason": _NULL_STR,
        "merchantName": _NULL_STR,
        "merchantCategory": _NULL_STR,
        "createdAt": _TIME,
    },
    required=["id", "cardId", "amountMinor", "currency", "approved", "declineReason", "createdAt"],
    allow_unknown=True,
)
