"""Response schemas of the resources, for the route table and so for the OpenAPI document.

They describe what handlers send; `tests/test_openapi.py` checks real responses against them.
"""

from __future__ import annotations

from collections.abc import Mapping

from mps.domain.approvals import APPROVAL_STATUSES
from mps.domain.invitations import INVITATION_STATUSES
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.ledger import MOVEMENT_TYPES
from mps.domain.payments import STATUSES
from mps.domain.payouts import PAYOUT_STATUSES
from mps.domain.refunds import REFUND_STATUSES
from mps.domain.scopes import ALL_SCOPES
from mps.http.schema import Anything, Array, Bool, Enum, Int, Map, Obj, Schema, Str

__all__ = [
    "API_KEY",
    "API_KEY_LOG",
    "APPROVAL",
    "APPROVAL_FIELDS",
    "APPROVAL_STATUS",
    "AUDIT_ENTRY",
    "BALANCE",
    "BALANCE_TRANSACTION",
    "BANK_ACCOUNT",
    "BANK_ACCOUNT_FIELDS",
    "CARD",
    "CARD_AUTHORIZATION",
    "CARD_FIELDS",
    "CUSTOMER",
    "ENDPOINT_STATUS",
    "INVITATION",
    "INVITATION_FIELDS",
    "INVITATION_STATUS",
    "INVOICE",
    "INVOICE_FIELDS",
    "INVOICE_STATS",
    "INVOICE_STATUS",
    "KEY_TYPE",
    "MEMBER",
    "MODE",
    "PAYMENT",
    "PAYMENT_STATS",
    "PAYMENT_STATUS",
    "PAYOUT",
    "PAYOUT_FIELDS",
    "PAYOUT_STATUS",
    "POLICY",
    "REFUND",
    "REFUND_FIELDS",
    "REFUND_STATUS",
    "ROLE",
    "ROLE_FIELDS",
    "SCOPE",
    "SESSION",
    "SETTINGS",
    "TIMELINE_ENTRY",
    "aggregate",
    "named",
    "page",
    "resource",
]

# Value sets many fields and filters share, each one named schema in the document.
MODE = Enum(["test", "live"], name="Mode")
PAYMENT_STATUS = Enum(STATUSES, name="PaymentStatus")
REFUND_STATUS = Enum(REFUND_STATUSES, name="RefundStatus")
PAYOUT_STATUS = Enum(PAYOUT_STATUSES, name="PayoutStatus")
INVOICE_STATUS = Enum(INVOICE_STATUSES, name="InvoiceStatus")
INVITATION_STATUS = Enum(INVITATION_STATUSES, name="InvitationStatus")
APPROVAL_STATUS = Enum(APPROVAL_STATUSES, name="ApprovalStatus")
KEY_TYPE = Enum(["secret", "publishable"], name="ApiKeyType")
SCOPE = Enum(list(ALL_SCOPES), name="Scope")
ENDPOINT_STATUS = Enum(["enabled", "disabled"], name="WebhookEndpointStatus")

_TIME = Str(format="date-time")
# Described per field by the glossary (what the amount is), in minor units as a string.
_MONEY = Str(pattern=r"-?[0-9]+")
_NULL_STR = Str(nullable=True)
# How the email about an invoice or invitation went; null on those from before it was recorded.
_EMAIL_STATUS = Enum(
    ["PENDING", "SENT", "FAILED"],
    nullable=True,
    description="How the latest email about it went: PENDING until tried, then SENT or FAILED.",
    example="SENT",
)
_EMAIL_ERROR = Str(
    nullable=True,
    description="Why the email could not be sent (FAILED), without server details; else null.",
    example="the mail server could not be reached or took too long",
)


_OK = Bool(description="true on every success.", example=True)
_REQUEST_ID = Str(
    description="The request's id (req_…), as in X-Request-Id.", example="req_8bVq2xN4kT6pR1sZ"
)


def resource(
    fields: dict[str, Schema] | Obj, required: list[str] | None = None, *, name: str | None = None
) -> Obj:
    """A single resource: its fields next to ok and requestId.

    A named resource (an `Obj` made by `named`) is answered as itself: its schema declares ok
    and requestId, optional because the same schema describes it as a list item, so a
    generated client has one model for it."""
    if isinstance(fields, Obj):
        assert fields.name is not None, "pass the fields of an unnamed object"
        return fields
    if name is not None:
        return named(name, fields, required)
    own = list(fields) if required is None else required
    return Obj(
        {**fields, "ok": _OK, "requestId": _REQUEST_ID},
        # A named resource's fields (spread into a variant) carry ok and requestId already.
        required=["ok", "requestId", *(f for f in own if f not in ("ok", "requestId"))],
        allow_unknown=True,
    )


def named(
    name: str,
    fields: Mapping[str, Schema] | Obj,
    required: list[str] | None = None,
    *,
    answered: bool = True,
) -> Obj:
    """A resource's schema, written once under components.schemas as `name`. One that is
    ever answered alone (`answered`) declares the envelope's ok and requestId too."""
    if isinstance(fields, Obj):
        required = list(fields.required)
        fields = fields.fields
    envelope = {"ok": _OK, "requestId": _REQUEST_ID} if answered else {}
    return Obj(
        {**fields, **envelope},
        required=required if required is not None else list(fields),
        allow_unknown=True,
        name=name,
    )


def page(item: Obj) -> Obj:
    return Obj(
        {
            "ok": _OK,
            "requestId": _REQUEST_ID,
            "data": Array(item),
            "nextCursor": Str(
                nullable=True,
                description="Pass as `cursor` for the next page; null on the last page.",
                example=None,
            ),
            "hasMore": Bool(description="Whether another page follows.", example=False),
        },
        required=["ok", "requestId", "data", "nextCursor", "hasMore"],
        allow_unknown=True,
        name=f"{item.name}List" if item.name else None,
    )


def aggregate(data: Schema) -> Obj:
    return Obj(
        {"ok": _OK, "requestId": _REQUEST_ID, "data": data},
        required=["ok", "requestId", "data"],
        allow_unknown=True,
    )


PAYMENT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "reference": Str(),
    "payUrl": Str(format="uri"),
    "status": PAYMENT_STATUS,
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
PAYMENT = named("Payment", PAYMENT_FIELDS)

_STATUS_TOTAL = Obj({"count": Int(), "amountMinor": _MONEY}, required=["count", "amountMinor"])
PAYMENT_STATS = named(
    "PaymentStats",
    Obj(
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
    ),
)

CUSTOMER = named(
    "Customer",
    Obj(
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
    ),
)

API_KEY_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "type": KEY_TYPE,
    "mode": MODE,
    "livemode": Bool(),
    "scopes": Array(Str()),
    "prefix": Str(),
    "last4": Str(),
    "createdBy": Str(),
    "createdAt": _TIME,
    "lastUsedAt": Str(format="date-time", nullable=True),
    "revokedAt": Str(format="date-time", nullable=True),
}
API_KEY = named("ApiKey", API_KEY_FIELDS)

API_KEY_LOG = named(
    "ApiKeyLogEntry",
    Obj(
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
    ),
    answered=False,
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
    "mode": MODE,
    "livemode": Bool(),
}
SESSION: dict[str, Schema] = {"sessionToken": Str(), "expiresAt": _TIME, **MEMBER_FIELDS}

SETTINGS: dict[str, Schema] = {
    "name": Str(),
    "mode": MODE,
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
    "status": ENDPOINT_STATUS,
    "disabledReason": _NULL_STR,
    "livemode": Bool(),
    "previousSecretExpiresAt": Str(format="date-time", nullable=True),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
WEBHOOK_ENDPOINT = named(
    "WebhookEndpoint",
    Obj(WEBHOOK_ENDPOINT_FIELDS, required=list(WEBHOOK_ENDPOINT_FIELDS), allow_unknown=True),
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
WEBHOOK_DELIVERY = named(
    "WebhookDelivery",
    Obj(WEBHOOK_DELIVERY_FIELDS, required=list(WEBHOOK_DELIVERY_FIELDS), allow_unknown=True),
)
WEBHOOK_ATTEMPT = named(
    "WebhookAttempt",
    Obj(
        {
            "attempt": Int(),
            "at": _TIME,
            "statusCode": Int(nullable=True),
            "error": _NULL_STR,
            "durationMs": Int(),
        },
        required=["attempt", "at", "statusCode", "error", "durationMs"],
    ),
    answered=False,
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
EVENT = named("Event", EVENT_FIELDS)

REFUND_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "paymentId": Str(),
    "amountMinor": _MONEY,
    "currency": Str(),
    "status": REFUND_STATUS,
    "reason": _NULL_STR,
    "failureReason": _NULL_STR,
    "livemode": Bool(),
    "createdAt": _TIME,
    "completedAt": Str(format="date-time", nullable=True),
    "updatedAt": _TIME,
}
REFUND = named("Refund", REFUND_FIELDS)

BALANCE = named(
    "Balance",
    Obj(
        {
            "currency": Str(),
            "availableMinor": _MONEY,
            "pendingMinor": _MONEY,
            "reservedMinor": _MONEY,
        },
        required=["currency", "availableMinor", "pendingMinor", "reservedMinor"],
        allow_unknown=True,
    ),
)

BALANCE_TRANSACTION = named(
    "BalanceTransaction",
    Obj(
        {
            "id": Str(),
            "type": Enum(MOVEMENT_TYPES),
            "amountMinor": Str(
                pattern=r"-?[0-9]+",
                description="The signed change to available + pending + reserved, in minor units.",
            ),
            "currency": Str(),
            "sourceId": Str(
                description="What moved the money: the payment, refund, payout or card."
            ),
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
    ),
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
    "createdAt": _TIME,
}
BANK_ACCOUNT = named("BankAccount", BANK_ACCOUNT_FIELDS)

PAYOUT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "amountMinor": _MONEY,
    "currency": Str(),
    "bankAccountId": Str(),
    "description": _NULL_STR,
    "status": PAYOUT_STATUS,
    "failureReason": _NULL_STR,
    "arrivalAt": Str(format="date-time", nullable=True),
    "automatic": Bool(),
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
PAYOUT = named("Payout", PAYOUT_FIELDS)

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
    "status": INVOICE_STATUS,
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
    "emailStatus": _EMAIL_STATUS,
    "emailError": _EMAIL_ERROR,
    "livemode": Bool(),
    "createdAt": _TIME,
    "updatedAt": _TIME,
}
INVOICE = named("Invoice", INVOICE_FIELDS)
INVOICE_STATS = named(
    "InvoiceStats",
    Obj(
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
    ),
)
TIMELINE_ENTRY = named(
    "InvoiceTimelineEntry",
    Obj(
        {"status": Str(), "at": _TIME, "actor": Str(), "note": _NULL_STR},
        required=["status", "at", "actor", "note"],
    ),
    answered=False,
)

ROLE_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "scopes": Array(Str()),
    "builtin": Bool(),
}
ROLE = named("Role", {**ROLE_FIELDS, "memberCount": Int()}, list(ROLE_FIELDS))
MEMBER = named(
    "Member",
    Obj(
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
    ),
)
AUDIT_ENTRY = named(
    "AuditEntry",
    Obj(
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
    ),
    answered=False,
)

INVITATION_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "email": Str(),
    "roleId": Str(),
    "status": INVITATION_STATUS,
    "invitedBy": Str(),
    "createdAt": _TIME,
    "expiresAt": _TIME,
    "decidedAt": Str(format="date-time", nullable=True),
    "emailStatus": _EMAIL_STATUS,
    "emailError": _EMAIL_ERROR,
}
INVITATION = named("Invitation", INVITATION_FIELDS)

APPROVAL_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "action": Str(),
    "status": APPROVAL_STATUS,
    "requestedBy": Str(),
    "requestedByUserId": _NULL_STR,
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
APPROVAL = named("Approval", APPROVAL_FIELDS)
POLICY = named(
    "ApprovalPolicy",
    Obj(
        {
            "action": Str(),
            "enabled": Bool(),
            "thresholds": Map(values=_MONEY),
            "requiredApprovals": Int(),
        },
        required=["action", "enabled", "thresholds", "requiredApprovals"],
        allow_unknown=True,
    ),
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
CARD = named("Card", CARD_FIELDS)
CARD_AUTHORIZATION = named(
    "CardAuthorization",
    Obj(
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
        required=[
            "id",
            "cardId",
            "amountMinor",
            "currency",
            "approved",
            "declineReason",
            "createdAt",
        ],
        allow_unknown=True,
    ),
    answered=False,
)
