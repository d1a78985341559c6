"""What every resource's schema is built from: the value sets many fields and filters share
(each one named schema in the document), the field schemas several resources use, and the
envelopes: a single resource (`resource`, `named`), a page of them (`page`), a summary
(`aggregate`)."""

from __future__ import annotations

from collections.abc import Mapping

from mps.domain.approvals import APPROVAL_STATUSES
from mps.domain.invitations import INVITATION_STATUSES
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.payments import STATUSES
from mps.domain.payouts import PAYOUT_STATUSES
from mps.domain.refunds import REFUND_STATUSES
from mps.domain.scopes import ALL_SCOPES
from mps.http.schema import Array, Bool, Enum, Obj, OneOf, Schema, Str

__all__ = [
    "APPROVAL_STATUS",
    "EMAIL_ERROR",
    "EMAIL_STATUS",
    "ENDPOINT_STATUS",
    "INVITATION_STATUS",
    "INVOICE_STATUS",
    "KEY_TYPE",
    "MODE",
    "MONEY",
    "NULL_STR",
    "OK",
    "PAYMENT_STATUS",
    "PAYOUT_STATUS",
    "REFUND_STATUS",
    "REQUEST_ID",
    "SCOPE",
    "TIME",
    "aggregate",
    "deleted",
    "named",
    "page",
    "per_currency",
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


TIME = Str(format="date-time")


# Described per field by the glossary (what the amount is), in minor units as a string.
MONEY = Str(pattern=r"-?[0-9]+")


NULL_STR = Str(nullable=True)


# How the email about an invoice or invitation went; null on those from before it was recorded.
EMAIL_STATUS = Enum(
    ["PENDING", "SENT", "FAILED"],
    nullable=True,
    description="How the latest email about it went: PENDING until tried, then SENT or FAILED.",
    example="SENT",
)


EMAIL_ERROR = Str(
    nullable=True,
    description="Why the email could not be sent (FAILED), without server details; else null.",
    example="the mail server could not be reached or took too long",
)


OK = Bool(description="true on every success.", example=True)


REQUEST_ID = Str(
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
        {**fields, "ok": OK, "requestId": REQUEST_ID},
        # A named resource's fields (spread into a variant) carry ok and requestId already.
        required=["ok", "requestId", *(f for f in own if f not in ("ok", "requestId"))],
        allow_unknown=True,
    )


def deleted(fields: dict[str, Schema]) -> Obj:
    """What a DELETE answers: the record as it was, with `deleted` (true)."""
    return resource({**fields, "deleted": Bool()})


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
    envelope = {"ok": OK, "requestId": REQUEST_ID} if answered else {}
    return Obj(
        {**fields, **envelope},
        required=required if required is not None else list(fields),
        allow_unknown=True,
        name=name,
    )


def page(item: Obj) -> Obj:
    return Obj(
        {
            "ok": OK,
            "requestId": REQUEST_ID,
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
        {"ok": OK, "requestId": REQUEST_ID, "data": data},
        required=["ok", "requestId", "data"],
        allow_unknown=True,
    )


def per_currency(item: Obj) -> OneOf:
    """The answer of a summary read per currency: every currency's `item` in a list, or the one
    object alone when the query names a currency (a `currency` filter narrows to one)."""
    return OneOf(
        [aggregate(Array(item)), resource(item)],
        description="Per currency; one object when a currency is given.",
    )
