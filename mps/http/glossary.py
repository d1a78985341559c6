"""What every field of the API means, with an example, written into the OpenAPI document.

The route table declares each field's type and rules; this module says what the field is for a
merchant reading the API explorer or a generated client: one sentence (what it is, its unit,
when it is null) and an example valid for its schema. `describe` fills both in, once, at the end
of `build_openapi`; a description a route declared itself is never replaced.

A field's meaning is looked up from the most specific name to the least:

    OVERRIDES["Refund.reason"]                  a field of one component schema
    OVERRIDES["POST /merchant/refunds.reason"]  a field of one operation's inline schema
    OVERRIDES["user.id"]                        a field of a nested object, wherever it is
    FIELDS["createdAt"]                         the name's meaning across the API

and an inline schema that shows a resource (the answer of a DELETE, a create that adds the
secret) reads that resource's overrides too (`_SHOWS`). Path and query parameters have their own
table (`PARAMETERS`, by name, by "METHOD /path.name", or as "{name}" for a path parameter
other than `id`): a query field filters, so `status` there means "only the ones in this
status", not "the state". `id` is described per component, with the id prefix as its example.

Examples that depend on nothing but the schema are derived: an enum shows its first value.
Everything else is written here, so `tests/test_openapi.py` can check that each example
validates against its own schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from mps.domain.approvals import ACTIONS as APPROVAL_ACTIONS
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.payments import STATUSES as PAYMENT_STATUSES
from mps.http.routing import API_PREFIX

__all__ = ["COMPONENTS", "FIELDS", "OVERRIDES", "PARAMETERS", "Meaning", "describe", "is_scalar"]

JSON = dict[str, Any]


class Meaning(NamedTuple):
    description: str
    # None: none written here (an object or array, or an enum that shows its first value).
    example: Any = None


def _id(prefix: str, tail: str) -> str:
    # Ids are the prefix, 10 time-ordered characters and 14 random ones (mps.domain.ids): ids
    # made at about the same time share the first ten, as these do.
    return f"{prefix}_0PZk3vQx9a{tail}"


PAYMENT_ID = _id("pay", "R57pNLfUkxf8QO")
# A multi-use link whose paid children name it in linkPaymentId.
LINK_ID = _id("pay", "Qz8Wn1Lk5Rb2Xc")
REFUND_ID = _id("re", "nJqvEUwUjByc6r")
PAYOUT_ID = _id("po", "Njj5xvZlW6uXj8")
BANK_ACCOUNT_ID = _id("ba", "4Uvrf4Mh3ROT4R")
CARD_ID = _id("card", "b9tP5i6q1pGuQX")
AUTHORIZATION_ID = _id("iauth", "DUTOFECt3BoNvc")
INVOICE_ID = _id("inv", "aaukWxd97E9vby")
KEY_ID = _id("key", "cvTLrhTKq06Vq3")
LOG_ID = _id("log", "DqQEtmYKBt3Wnw")
EVENT_ID = _id("evt", "5QsFVCfynN4vl3")
ENDPOINT_ID = _id("whe", "yaN0yYDfUu2kOk")
APPROVAL_ID = _id("apr", "IYT6SIteHeXA9K")
AUDIT_ID = _id("aud", "Hk2mQ8vXz4LpT1")
DOCUMENT_ID = _id("doc", "W3nB7cR5tY9uJ0")
USER_ID = _id("usr", "fG6hJ2kL8mN4pQ")
COMPANY_ID = _id("co", "Zx1Cv3Bn5Mq7Wr")
MOVEMENT_ID = _id("txn", "Pl0Ok9Ij8Uh7Yg")
LOGIN_ID = _id("lgn", "Tf6Rd5Es4Wa3Qz")
INVITATION_ID = _id("invt", "Mn2Bv4Cx6Zl8Kj")
RECOVERY_ID = _id("rcv", "Ye5Rt7Uy9Io1Pa")
# Derived from the email or phone under a key, not drawn (mps.auth.keyring): no time part.
CUSTOMER_ID = "cus_7Hq2Zr9Kx4Lm1Np6Tb3Vc8Wd"
# A digest of (event, target, origin), so a retried fan-out makes the same delivery.
DELIVERY_ID = "whd_9f3a1c7e5b2d8046af1e3c5d"
ROLE_ID = "role_finance"
REFERENCE = "PAY-53S04BW6GX"
REQUEST_ID = "req_CKueDYM2DGIqWaFSsPIx"

AT = "2026-11-23T09:30:00.000Z"
LATER = "2026-11-23T09:31:04.000Z"
DAY = "2026-11-23"
PUBLIC_URL = "https://pay.example.com"
# What `mps.persistence.queries.paging.encode_cursor` writes for (AT, PAYMENT_ID).
CURSOR = "WyIyMDI2LTExLTIzVDA5OjMwOjAwLjAwMFoiLCJwYXlfMFBaazN2UXg5YVI1N3BOTGZVa3hmOFFPIl0"

# component -> (what its id names, the example). `id` means something else in each.
_IDS: dict[str, tuple[str, str]] = {
    "Payment": ("payment's id (pay_…)", PAYMENT_ID),
    "Refund": ("refund's id (re_…)", REFUND_ID),
    "Payout": ("payout's id (po_…)", PAYOUT_ID),
    "BankAccount": ("bank account's id (ba_…)", BANK_ACCOUNT_ID),
    "Card": ("card's id (card_…)", CARD_ID),
    "CardAuthorization": ("authorization's id (iauth_…)", AUTHORIZATION_ID),
    "Customer": ("customer's id (cus_…), the same for every payment naming them", CUSTOMER_ID),
    "Invoice": ("invoice's id (inv_…)", INVOICE_ID),
    "ApiKey": ("API key's id (key_…); not the key itself", KEY_ID),
    "ApiKeyLogEntry": ("log entry's id (log_…)", LOG_ID),
    "Event": ("event's id (evt_…); receivers dedupe deliveries on it", EVENT_ID),
    "WebhookEndpoint": ("webhook endpoint's id (whe_…)", ENDPOINT_ID),
    "WebhookDelivery": ("delivery's id (whd_…), also sent as X-Service-Delivery-Id", DELIVERY_ID),
    "Role": (
        "role's id: role_owner, role_admin, role_finance, role_developer, role_viewer, or "
        "role_… for a custom role",
        ROLE_ID,
    ),
    "Invitation": ("invitation's id (invt_…)", INVITATION_ID),
    "Approval": ("approval request's id (apr_…)", APPROVAL_ID),
    "AuditEntry": ("audit entry's id (aud_…)", AUDIT_ID),
    "KycDocument": ("document's id (doc_…)", DOCUMENT_ID),
    "BalanceTransaction": ("ledger movement's id (txn_…)", MOVEMENT_ID),
}

# A path's collection -> what the `{id}` after it names, and its example.
_COLLECTIONS: dict[str, tuple[str, str]] = {
    "payments": ("payment's id", PAYMENT_ID),
    "refunds": ("refund's id", REFUND_ID),
    "payouts": ("payout's id", PAYOUT_ID),
    "bank-accounts": ("bank account's id", BANK_ACCOUNT_ID),
    "cards": ("card's id", CARD_ID),
    "company-cards": ("company card's id", CARD_ID),
    "customers": ("customer's id", CUSTOMER_ID),
    "invoices": ("invoice's id", INVOICE_ID),
    "api-keys": ("API key's id", KEY_ID),
    "webhooks": ("webhook endpoint's id", ENDPOINT_ID),
    "deliveries": ("webhook delivery's id", DELIVERY_ID),
    "events": ("event's id", EVENT_ID),
    "roles": ("custom role's id", _id("role", "Sd3Fg5Hj7Kl9Qw")),
    "members": ("member's user id", USER_ID),
    "invitations": ("invitation's id", INVITATION_ID),
    "requests": ("approval request's id", APPROVAL_ID),
    "documents": ("KYC document's id", DOCUMENT_ID),
}

# Operations whose inline schemas show a resource's fields (plus a field or two of their own):
# those fields mean what they mean on the resource.
_SHOWS: dict[str, str] = {
    "POST /merchant/api-keys": "ApiKey",
    "DELETE /merchant/bank-accounts/{id}": "BankAccount",
    "GET /merchant/cards/{id}/details": "Card",
    "PATCH /merchant/settings": "Settings",
    "POST /merchant/webhooks": "WebhookEndpoint",
    "PATCH /merchant/webhooks/{id}": "WebhookEndpoint",
    "DELETE /merchant/webhooks/{id}": "WebhookEndpoint",
    "POST /merchant/webhooks/{id}/rotate-secret": "WebhookEndpoint",
    "GET /merchant/webhooks/deliveries/{id}": "WebhookDelivery",
    "POST /merchant/events/{id}/replay": "Event",
    "POST /team/roles": "Role",
    "PATCH /team/roles/{id}": "Role",
    "DELETE /team/roles/{id}": "Role",
    "DELETE /team/members/{id}": "Member",
    "PUT /team/approvals/policies/{action}": "ApprovalPolicy",
    "GET /auth/me": "Session",
}


COMPONENTS: dict[str, Meaning] = {
    "Error": Meaning("The envelope every error is answered with."),
    "ApiVersion": Meaning(
        "An API version: v2 (current) or v1 (deprecated); 2 and 1 are accepted too.", "v2"
    ),
    "Mode": Meaning(
        "test or live: which data a request reads and writes; the two never see each other's.",
        "test",
    ),
    "PaymentStatus": Meaning(
        "PENDING until paid, expired or cancelled; PAID; PARTIAL_REFUND or REFUNDED as refunds "
        "complete; REVERSED after a chargeback.",
        "PAID",
    ),
    "RefundStatus": Meaning(
        "PENDING while the processor works on it; COMPLETED once paid back to the shopper; "
        "REJECTED when refused (the amount returns to the balance).",
        "COMPLETED",
    ),
    "PayoutStatus": Meaning(
        "PENDING (cancellable), IN_TRANSIT once the bank took it, PAID on arrival; FAILED and "
        "CANCELLED return the amount to available.",
        "IN_TRANSIT",
    ),
    "InvoiceStatus": Meaning(
        "SENT on creation, OVERDUE once its due date passes unpaid, PAID when marked paid, VOID "
        "when cancelled.",
        "SENT",
    ),
    "InvitationStatus": Meaning(
        "PENDING until answered, then ACCEPTED, REJECTED or REVOKED by a member; EXPIRED after "
        "7 days unanswered.",
        "PENDING",
    ),
    "ApprovalStatus": Meaning(
        "PENDING while collecting votes, APPROVED while the action runs, then EXECUTED or "
        "FAILED; REJECTED by one no, CANCELLED by the requester, EXPIRED after 72 hours.",
        "PENDING",
    ),
    "ApiKeyType": Meaning(
        "secret (sk_…) or publishable (pk_…); publishable keys never call merchant routes.",
        "secret",
    ),
    "Scope": Meaning("A permission: a resource and read or write.", "payments:read"),
    "WebhookEndpointStatus": Meaning(
        "enabled endpoints get deliveries; disabled ones get none until enabled again.",
        "enabled",
    ),
    "Payment": Meaning("An amount collected through hosted checkout: a payment link."),
    "PaymentStats": Meaning("The payments of one currency created in the range: counts and sums."),
    "Refund": Meaning("Money paid back to the shopper from a PAID or PARTIAL_REFUND payment."),
    "Balance": Meaning("The balance in one currency, from the ledger."),
    "BalanceTransaction": Meaning("One balanced ledger movement and what it did to the balance."),
    "BankAccount": Meaning("A bank account payouts go to; its number is shown masked."),
    "Payout": Meaning("Money sent from the available balance to a bank account."),
    "Card": Meaning("A prepaid virtual card, funded from the available balance (the wallet)."),
    "CardAuthorization": Meaning("A spend attempted with a card, approved or declined."),
    "Customer": Meaning("A shopper, derived from the email or phone on payments."),
    "Invoice": Meaning("A line-itemized bill emailed to a customer and paid outside the service."),
    "InvoiceStats": Meaning("The invoices of one currency created in the range: counts and sums."),
    "InvoiceTimelineEntry": Meaning("One change of an invoice's status."),
    "ApiKey": Meaning("An API key; the key itself is shown only when it is created."),
    "ApiKeyLogEntry": Meaning("One request an API key made."),
    "Event": Meaning("Something that happened, as webhooks deliver it."),
    "WebhookEndpoint": Meaning("A URL events are delivered to, signed with its secret."),
    "WebhookDelivery": Meaning("One event on its way to one endpoint or webhookUrl."),
    "WebhookAttempt": Meaning("One POST of a delivery and how the receiver answered it."),
    "Role": Meaning("A named set of scopes a member holds."),
    "Member": Meaning("A person in the company's team and their role."),
    "Invitation": Meaning("An invitation to join the team, emailed with a link."),
    "InvitationPreview": Meaning("What an invitation's link shows its holder."),
    "Approval": Meaning(
        "An action held above its policy's threshold until enough teammates approve it."
    ),
    "ApprovalPolicy": Meaning("When an action needs approval, and by how many."),
    "AuditEntry": Meaning("One change in the tamper-evident audit trail."),
    "KycDocument": Meaning("An identity or business document uploaded for verification."),
    "Session": Meaning("A dashboard session: its token and who it acts for."),
    "Settings": Meaning("The company's settings in one mode."),
    "AnalyticsSeries": Meaning("Revenue and failures of one currency, per interval."),
    "AnalyticsStatusSummary": Meaning(
        "The payments of one currency created in the window, by status."
    ),
    "AnalyticsConversion": Meaning(
        "Conversion of one currency in the window against the period before."
    ),
}

FIELDS: dict[str, Meaning] = {
    # The envelope and lists.
    "ok": Meaning("true on every success.", True),
    "requestId": Meaning(
        "The request's id (req_…), as in X-Request-Id; quote it to support.", REQUEST_ID
    ),
    "data": Meaning("This page's items, in the list's order."),
    "nextCursor": Meaning("Pass as `cursor` for the next page; null on the last page.", CURSOR),
    "hasMore": Meaning("Whether another page follows.", False),
    # Times.
    "createdAt": Meaning("When the object was created (UTC, ISO 8601, milliseconds).", AT),
    "updatedAt": Meaning("When the object last changed (UTC, ISO 8601, milliseconds).", LATER),
    "at": Meaning("When it happened (UTC, ISO 8601, milliseconds).", AT),
    # Money and modes.
    "amountMinor": Meaning(
        "Amount in minor units of the currency (cents for USD), as a string so no precision "
        "is lost.",
        "1250",
    ),
    "currency": Meaning("ISO 4217 code, upper-case; lower case is accepted on input.", "USD"),
    "livemode": Meaning("true in live mode, false in test mode.", False),
    "availableMinor": Meaning(
        "Settled money that can be refunded, paid out or put on cards.", "48200"
    ),
    "pendingMinor": Meaning("Collected money waiting for its settlement delay.", "1250"),
    "reservedMinor": Meaning("Money held for refunds and payouts under way.", "500"),
    "balanceMinor": Meaning("What the card can still spend, in minor units.", "10000"),
    "grossMinor": Meaning("The amount of the payments that were paid.", "12500"),
    "refundedMinor": Meaning("The amount refunded of them.", "1250"),
    "netMinor": Meaning("Gross less refunds and chargebacks.", "11250"),
    "paidMinor": Meaning("The amount paid.", "12500"),
    "outstandingMinor": Meaning("The amount of the SENT and OVERDUE invoices.", "75000"),
    "overdueMinor": Meaning("The amount of the OVERDUE invoices.", "25000"),
    "unitAmountMinor": Meaning("The price of one unit, in minor units.", "4000"),
    "amountRefundedMinor": Meaning("The amount of the refunds completed so far.", "250"),
    "initialFundingMinor": Meaning(
        "Moved from the available balance onto the card at issue.", "5000"
    ),
    # Ids of other objects.
    "paymentId": Meaning("The payment's id (pay_…).", PAYMENT_ID),
    "refundId": Meaning("The refund's id (re_…).", REFUND_ID),
    "payoutId": Meaning("The payout's id (po_…).", PAYOUT_ID),
    "invoiceId": Meaning("The invoice's id (inv_…).", INVOICE_ID),
    "cardId": Meaning("The card's id (card_…).", CARD_ID),
    "bankAccountId": Meaning("The bank account it pays out to (ba_…).", BANK_ACCOUNT_ID),
    "companyId": Meaning("The company's id (co_…).", COMPANY_ID),
    "userId": Meaning("The member's user id (usr_…).", USER_ID),
    "memberId": Meaning(
        "The member the card is issued to (usr_…); null for a company card.", USER_ID
    ),
    "roleId": Meaning("The role's id (role_…).", ROLE_ID),
    "loginId": Meaning(
        "The sign-in the emailed code belongs to (lgn_…); send it with the code to "
        "/auth/otp/verify.",
        LOGIN_ID,
    ),
    "eventId": Meaning("The event delivered (evt_…).", EVENT_ID),
    "eventType": Meaning("The delivered event's type.", "payment.completed"),
    "endpointId": Meaning(
        "The endpoint it goes to (whe_…); null for a payment's own webhookUrl.", ENDPOINT_ID
    ),
    "customerId": Meaning(
        "The customer its email or phone names (cus_…); null when it has neither.", CUSTOMER_ID
    ),
    "linkPaymentId": Meaning(
        "For a paid child of a multi-use link, the link's id; null otherwise.", LINK_ID
    ),
    # People and contact.
    "customerEmail": Meaning(
        "The customer's email, lower-cased; null when not given.", "ana@example.com"
    ),
    "customerPhone": Meaning("The customer's phone, E.164; null when not given.", "+442079460958"),
    "phone": Meaning("The customer's phone, E.164; null when not known.", "+442079460958"),
    # Payments.
    "reference": Meaning(
        "The payment's human-readable reference (PAY- and 10 characters), shown to the shopper.",
        REFERENCE,
    ),
    "payUrl": Meaning(
        "The hosted checkout page the shopper pays on.", f"{PUBLIC_URL}/pay/{REFERENCE}"
    ),
    "paidAt": Meaning("When it was paid; null until then.", LATER),
    "allowMultiplePayments": Meaning(
        "Whether the link stays PENDING after each checkout, every successful one making a "
        "PAID child payment.",
        False,
    ),
    "successUrl": Meaning(
        "Where the shopper goes after paying, with paymentId and reference added to its query; "
        "null when none.",
        "https://shop.example.com/thanks",
    ),
    "cancelUrl": Meaning(
        "Where the shopper goes on leaving checkout unpaid; null when none.",
        "https://shop.example.com/cart",
    ),
    "webhookUrl": Meaning(
        "Receives this payment's events instead of the company's endpoints; null when none.",
        "https://shop.example.com/hooks/payments",
    ),
    "customMetadata": Meaning("The merchant's own key-value data, kept with the payment."),
    "paymentMethod": Meaning("The card that paid: brand and last four digits; null until paid."),
    "brand": Meaning("The card's brand.", "visa"),
    "last4": Meaning("The last four digits of the card number.", "4242"),
    "expMonth": Meaning("Expiry month, 1 to 12.", 12),
    "expYear": Meaning("Expiry year, four digits.", 2029),
    "byStatus": Meaning("Per payment status: how many, and their amount."),
    # Balance, bank accounts, payouts.
    "changes": Meaning("The signed change to each balance."),
    "sourceId": Meaning("The payment, refund, payout or card that moved the money.", PAYMENT_ID),
    "accountHolderName": Meaning("The name the bank account is held in.", "Acme Ltd"),
    "accountNumber": Meaning("The account number or IBAN.", "000123456789"),
    "accountNumberMasked": Meaning(
        "The account number, all but its last four characters hidden.", "****6789"
    ),
    "bankCode": Meaning("The bank's routing code (routing number, sort code, …).", "110000000"),
    "country": Meaning("The bank's country, ISO 3166 two-letter code, upper-case.", "US"),
    "arrivalAt": Meaning(
        "When it is expected to arrive (IN_TRANSIT) or arrived (PAID); null before.", LATER
    ),
    "automatic": Meaning(
        "true for a payout the payoutSchedule made, false for one asked for through the API.",
        False,
    ),
    "failureReason": Meaning("Why it failed; null unless it did.", "could_not_process"),
    # Cards.
    "cardholderName": Meaning("The name on a member card; null for a company card.", "Ana Silva"),
    "nickname": Meaning("A company card's name; null for a member card.", "Ads budget"),
    "controls": Meaning(
        "The limits and merchant categories every authorization is checked against."
    ),
    "spendingLimits": Meaning("At most one limit per interval, up to 10."),
    "interval": Meaning(
        "What the limit counts: per_transaction, daily, weekly or monthly (UTC), or all_time.",
        "daily",
    ),
    "allowedCategories": Meaning(
        "When not empty, the only merchant categories the card works at (Stripe Issuing's names)."
    ),
    "blockedCategories": Meaning(
        "Merchant categories the card is declined at (Stripe Issuing's names)."
    ),
    "approved": Meaning("Whether it was approved, the card's balance debited.", True),
    "declineReason": Meaning(
        "card_frozen, insufficient_funds, spending_limit or category_blocked; null when approved.",
        "spending_limit",
    ),
    "merchantName": Meaning("The merchant's name; null when not given.", "Blue Bottle Coffee"),
    "merchantCategory": Meaning(
        "The merchant's category (Stripe Issuing's names); null when not given.",
        "eating_places_restaurants",
    ),
    "number": Meaning("The full card number.", "4000004938201005"),
    "cvc": Meaning("The card's security code.", "123"),
    # Customers.
    "firstSeenAt": Meaning("When a payment first named the customer.", AT),
    "lastSeenAt": Meaning("When a payment last named the customer.", LATER),
    "paymentCount": Meaning("Payments naming the customer, in every status.", 3),
    "totals": Meaning("Per currency: what the customer paid and what was refunded."),
    # Invoices.
    "invoiceNumber": Meaning(
        "The merchant's number for it, shown to the customer: INV-000001 upwards unless given.",
        "INV-000042",
    ),
    "customer": Meaning("Who the invoice is for."),
    "items": Meaning("The invoice's lines; null for a single-total invoice."),
    "quantity": Meaning("How many units.", 2),
    "dueDate": Meaning(
        "When payment is due (an ISO date); past it, an unpaid invoice is OVERDUE. Null when none.",
        "2026-12-23",
    ),
    "memo": Meaning("A note shown on the invoice; null when none.", "Thank you for your business."),
    "paidReference": Meaning(
        "The payment reference mark-paid recorded; null when none.", "TRF-88213"
    ),
    "voidedAt": Meaning("When it was cancelled; null unless VOID.", LATER),
    "hostedUrl": Meaning(
        "The customer's link to the hosted invoice page.",
        f"{PUBLIC_URL}/i/{INVOICE_ID}?t=Q2x8Vb4Nm6Kj1Hg3Fd5Sa7Pz",
    ),
    "countByStatus": Meaning("How many invoices are in each status."),
    "note": Meaning("A note kept in the invoice's timeline.", "Paid by bank transfer"),
    # Team, keys, audit.
    "scopes": Meaning("The permission scopes granted."),
    "builtin": Meaning("true for the built-in roles, which cannot be changed or deleted.", False),
    "memberCount": Meaning("How many members hold the role.", 2),
    "roleName": Meaning("The name of the member's role.", "finance"),
    "joinedAt": Meaning("When they joined the company.", AT),
    "invitedBy": Meaning("The member who sent it (usr_…).", USER_ID),
    "decidedAt": Meaning("When it stopped being PENDING; null while PENDING.", LATER),
    "requestedBy": Meaning("Who asked for the action: a user id or an API key id.", USER_ID),
    "requestedByUserId": Meaning(
        "The member who asked: requestedBy itself, or the creator of the API key that asked; "
        "they cannot vote on it.",
        USER_ID,
    ),
    "payload": Meaning("The action's request, run as sent once approved."),
    "votes": Meaning("The votes cast so far."),
    "decision": Meaning("approve or reject.", "approve"),
    "comment": Meaning("The voter's comment; null when none.", "Checked against the contract."),
    "requiredApprovals": Meaning("How many approvals the action needs before it runs, 1 to 10.", 2),
    "result": Meaning(
        "What the action returned (the payout, refund or card) once EXECUTED; null before."
    ),
    "enabled": Meaning("Whether actions above their threshold wait for approval.", True),
    "thresholds": Meaning(
        "Per currency, the amount above which the action needs approval; a currency without one "
        "needs none."
    ),
    "prefix": Meaning("The key's first characters, to recognise it.", "sk_test_"),
    "createdBy": Meaning(
        "The member who created the key (usr_…); the key never does more than they may now.",
        USER_ID,
    ),
    "lastUsedAt": Meaning("When the key last made a request; null when never.", LATER),
    "revokedAt": Meaning("When the key was revoked; null while it works.", LATER),
    "method": Meaning("The request's HTTP method.", "POST"),
    "path": Meaning("The request's path.", "/api/v1/merchant/payments"),
    "statusCode": Meaning("The HTTP status of the answer.", 201),
    "ip": Meaning("The address the request came from; null when not known.", "203.0.113.7"),
    "details": Meaning("What changed, as the action records it."),
    "target": Meaning("What the action was done to."),
    "seq": Meaning("The entry's place in the company's chain, from 1.", 42),
    "prevHash": Meaning(
        "The previous entry's hash; null for the first.",
        "4275d71e90f7f09f9dcbba2aeeaafb3f30576780bc4d5419ff086d1c6f02a654",
    ),
    "hash": Meaning(
        "SHA-256 (hex) of the entry's canonical JSON, which includes prevHash: the chain.",
        "139d544b821b13ebea14f1b0fe18577222e415c2966e3a3511c4196055232202",
    ),
    # Webhooks and events.
    "url": Meaning(
        "Where deliveries are POSTed (https in production).", "https://shop.example.com/hooks"
    ),
    "events": Meaning(
        "The event types it receives: names, families such as payment.*, or * for all."
    ),
    "disabledReason": Meaning(
        "Why it was disabled (by a member, a 410 answer, 5 days of failures); null while enabled.",
        "gone (HTTP 410)",
    ),
    "previousSecretExpiresAt": Meaning(
        "Until when the previous secret still signs too, after a rotation; null when none does.",
        "2026-11-24T09:30:00.000Z",
    ),
    "secret": Meaning(
        "The signing secret (whsec_…), shown only in this answer.",
        "whsec_UNhY4JhezH9gQYqvDMWrWH9CwlcKiECVqejMrND2VFw=",
    ),
    "attempts": Meaning("How many attempts were made so far.", 2),
    "nextAttemptAt": Meaning(
        "When the next attempt is due; null unless PENDING or RETRYING.", LATER
    ),
    "lastAttemptAt": Meaning("When the last attempt was made; null before the first.", AT),
    "lastStatusCode": Meaning(
        "The receiver's HTTP status at the last attempt; null when it did not answer or none "
        "was made.",
        503,
    ),
    "lastError": Meaning(
        "Why the last attempt failed; null when it succeeded or none was made.", "HTTP 503"
    ),
    "replay": Meaning("true for a delivery made by a replay or a recovery.", False),
    "attempt": Meaning("The attempt's number, from 1.", 1),
    "durationMs": Meaning("How long the attempt took, in milliseconds.", 182),
    "sequence": Meaning("One more than the previous event of this company and mode.", 118),
    "apiVersion": Meaning("The API version the event's data is rendered in.", "v2"),
    "object": Meaning("The object the event is about, as it was when the event happened."),
    "attemptLog": Meaning("Every attempt so far, oldest first."),
    # Settings and KYC.
    "supportedCurrencies": Meaning(
        "The currencies payments, invoices, cards and bank accounts may use in this mode."
    ),
    "payoutSchedule": Meaning(
        "When automatic payouts run: manual (never), daily, or weekly (Mondays), at midnight UTC.",
        "manual",
    ),
    "settlementDelaySec": Meaning(
        "Seconds before a paid payment's money moves from pending to available.", 172800
    ),
    "defaultApiVersion": Meaning("The API version of requests without X-Api-Version.", "v2"),
    "kycStatus": Meaning(
        "Identity verification in this mode; live money movement needs VERIFIED.", "VERIFIED"
    ),
    "apiKeyAccess": Meaning(
        "Whether secret keys of this mode may call the merchant routes.", False
    ),
    "sizeBytes": Meaning("The file's size in bytes.", 482133),
    "sha256": Meaning(
        "SHA-256 (hex) of the file's content.",
        "139d544b821b13ebea14f1b0fe18577222e415c2966e3a3511c4196055232202",
    ),
    "fileName": Meaning("The name it was uploaded under.", "passport.pdf"),
    "reviewedAt": Meaning("When a review decided; null before one did.", LATER),
    "documentCount": Meaning("How many documents were uploaded in this mode.", 1),
    # Sign-in.
    "sessionToken": Meaning(
        "The bearer token for `Authorization: Bearer …`, valid 12 hours unless revoked.",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c3JfIn0.c2lnbmF0dXJl",
    ),
    "code": Meaning("The 6-digit code from the email.", "123456"),
    "companyName": Meaning("The new company's name.", "Acme Ltd"),
    "user": Meaning("The signed-in user."),
    "company": Meaning("The company the session acts for."),
    "role": Meaning("The member's role in that company."),
    "loggedOut": Meaning("true: the session is revoked, on every node.", True),
    # Analytics.
    "series": Meaning("One point per interval in the window, oldest first."),
    "current": Meaning("The window asked for."),
    "previous": Meaning("The period of equal length just before it."),
    "from": Meaning("The period's first day.", "2026-10-25"),
    "to": Meaning("The period's last day, included.", DAY),
    "date": Meaning("The bucket's first day.", DAY),
    "revenueMinor": Meaning("The amount paid in the bucket (gross).", "125000"),
    "failedCount": Meaning("Declined checkouts in the bucket.", 1),
    "failedVolumeMinor": Meaning("The declined checkouts' amounts.", "1250"),
    "created": Meaning("Payments created in the period.", 40),
    "paid": Meaning("Of those, the ones paid.", 31),
    "rate": Meaning("paid / created, 0 when none were created.", 0.775),
    "changePoints": Meaning("current.rate - previous.rate, in percentage points.", 4.5),
    "statusCounts": Meaning("Payments created in the window, by their current status."),
    # Deletions.
    "deleted": Meaning("true: it was deleted.", True),
    "removed": Meaning("true: the member was removed and their sessions ended.", True),
}


def _ids() -> dict[str, Meaning]:
    return {
        f"{name}.id": Meaning(f"The {noun}.", example) for name, (noun, example) in _IDS.items()
    }


def _per_status() -> dict[str, Meaning]:
    per: dict[str, Meaning] = {}
    for status in PAYMENT_STATUSES:
        per[f"byStatus.{status}"] = Meaning(f"The {status} payments: how many, and their amount.")
        per[f"byStatus.{status}.count"] = Meaning(f"How many payments are {status}.", 3)
        per[f"statusCounts.{status}"] = Meaning(
            f"Payments created in the window that are {status} now.", 3
        )
    for status in INVOICE_STATUSES:
        per[f"countByStatus.{status}"] = Meaning(f"How many invoices are {status}.", 3)
    return per


_CODE_EXPIRES = Meaning(
    "When the emailed code expires (10 minutes after it was sent).", "2026-11-23T09:40:00.000Z"
)

OVERRIDES: dict[str, Meaning] = {
    **_ids(),
    **_per_status(),
    # The error envelope.
    "Error.ok": Meaning("false on every error.", False),
    "Error.statusCode": Meaning("The HTTP status, repeated.", 400),
    "Error.message": Meaning("What went wrong, in words.", "amountMinor is required"),
    "Error.timestamp": Meaning("When the error was answered (UTC, ISO 8601).", AT),
    "Error.code": Meaning(
        "A stable machine-readable code, such as validation_error; not in v1 answers.",
        "validation_error",
    ),
    "Error.errors": Meaning("For validation_error, each field at fault; not in v1 answers."),
    "errors.field": Meaning("The field's path in the request.", "amountMinor"),
    "errors.message": Meaning("What is wrong with it.", "is required"),
    # Payments.
    "Payment.description": Meaning(
        "Shown to the shopper at checkout; null when none was given.", "Two flat whites"
    ),
    "Payment.expiresAt": Meaning(
        "When a PENDING link expires; null when it never does (noExpiry) and on a multi-use "
        "link's children.",
        "2026-11-24T09:30:00.000Z",
    ),
    "Payment.paidAt": Meaning("When the shopper paid; null until PAID.", LATER),
    "paymentMethod.brand": Meaning("The card's brand.", "visa"),
    "paymentMethod.last4": Meaning("The card number's last four digits.", "4242"),
    "PaymentStats.count": Meaning("How many payments were created in the range.", 12),
    "POST /merchant/payments.description": Meaning(
        "Shown to the shopper at checkout.", "Two flat whites"
    ),
    "POST /merchant/payments.customerEmail": Meaning(
        "Prefills the checkout form and names the customer.", "ana@example.com"
    ),
    "POST /merchant/payments.customerPhone": Meaning(
        "Prefills the checkout form and names the customer when there is no email; E.164.",
        "+442079460958",
    ),
    "POST /merchant/payments.expiresInSec": Meaning(
        "Seconds until the link expires, 60 to 7,776,000 (90 days); default 86,400.", 3600
    ),
    "POST /merchant/payments.noExpiry": Meaning(
        "The link never expires; overrides expiresInSec.", False
    ),
    "POST /merchant/payments.successUrl": Meaning(
        "Where the shopper goes after paying, with paymentId and reference added to its query.",
        "https://shop.example.com/thanks",
    ),
    "POST /merchant/payments.cancelUrl": Meaning(
        "Where the shopper goes on leaving checkout unpaid.", "https://shop.example.com/cart"
    ),
    "POST /merchant/payments.webhookUrl": Meaning(
        "Receives this payment's events instead of the company's endpoints, signed with the "
        "default secret.",
        "https://shop.example.com/hooks/payments",
    ),
    "POST /merchant/payments.customMetadata": Meaning(
        "Your own key-value data: up to 50 keys of up to 40 characters; values are strings (up "
        "to 500 characters), numbers, booleans or null."
    ),
    # Checkout.
    "POST /checkout/{reference}/pay.card": Meaning(
        "The card to charge; only its brand and last four digits are kept."
    ),
    "card.number": Meaning("The card number: 12 to 19 digits, spaces allowed.", "4242424242424242"),
    "card.cvc": Meaning("The card's 3- or 4-digit security code.", "123"),
    "card.expYear": Meaning("Expiry year.", 2029),
    "POST /checkout/{reference}/pay.email": Meaning(
        "The shopper's email; names the customer.", "ana@example.com"
    ),
    "POST /checkout/{reference}/pay.phone": Meaning(
        "The shopper's phone; names the customer when there is no email.", "+442079460958"
    ),
    "POST /checkout/{reference}/pay.status": Meaning(
        "The payment's status after the attempt.", "PAID"
    ),
    "POST /checkout/{reference}/pay.redirectUrl": Meaning(
        "Where to send the shopper: the successUrl with paymentId and reference added; null "
        "when the payment has none.",
        f"https://shop.example.com/thanks?paymentId={PAYMENT_ID}&reference={REFERENCE}",
    ),
    "POST /checkout/{reference}/pay.paymentMethod": Meaning("The card that paid."),
    # Refunds, balance, payouts.
    "Refund.paymentId": Meaning("The payment refunded (pay_…).", PAYMENT_ID),
    "Refund.reason": Meaning(
        "Free text given at creation, for the merchant's records; null when none.",
        "Customer returned the item",
    ),
    "Refund.failureReason": Meaning("Why it was REJECTED; null otherwise.", "rejected"),
    "Refund.completedAt": Meaning("When it was COMPLETED; null otherwise.", LATER),
    "POST /merchant/refunds.paymentId": Meaning(
        "The payment to refund: PAID or PARTIAL_REFUND.", PAYMENT_ID
    ),
    "POST /merchant/refunds.reason": Meaning(
        "Free text kept for your records.", "Customer returned the item"
    ),
    "BalanceTransaction.type": Meaning(
        "What moved the money: a payment, its settlement, a refund, a payout, a chargeback or a "
        "card movement.",
        "payment",
    ),
    "BankAccount.status": Meaning(
        "Always VERIFIED: it can receive payouts once added.", "VERIFIED"
    ),
    "BankAccount.last4": Meaning("The account number's last four characters.", "6789"),
    "Payout.description": Meaning(
        "A note kept with the payout (Automatic payout for scheduled ones); null when none.",
        "November takings",
    ),
    "Payout.failureReason": Meaning(
        "Why the bank returned it; null unless FAILED.", "could_not_process"
    ),
    "POST /merchant/payouts.description": Meaning(
        "A note kept with the payout.", "November takings"
    ),
    # Cards.
    "Card.type": Meaning(
        "member (issued to a team member) or company (owned by the company).", "member"
    ),
    "Card.status": Meaning(
        "ACTIVE; FROZEN declines every authorization until unfrozen; TERMINATED is closed for "
        "good.",
        "ACTIVE",
    ),
    "Card.last4": Meaning("The card number's last four digits.", "1005"),
    "Card.expMonth": Meaning("Expiry month, 1 to 12.", 11),
    "Card.expYear": Meaning("Expiry year, four digits.", 2029),
    "Card.number": Meaning("The full card number; showing it is audited.", "4000004938201005"),
    "Card.cvc": Meaning("The card's security code.", "314"),
    "spendingLimits.amountMinor": Meaning(
        "The most the card may spend in the interval, in minor units of its currency.", "50000"
    ),
    "CardAuthorization.cardId": Meaning("The card it was made with (card_…).", CARD_ID),
    "POST /merchant/cards.cardholderName": Meaning("The name on the card.", "Ana Silva"),
    "POST /merchant/cards.memberId": Meaning(
        "The member to issue it to (usr_…); default the member asking, required with an API key.",
        USER_ID,
    ),
    "POST /merchant/company-cards.nickname": Meaning(
        "The card's name, for the company's use.", "Ads budget"
    ),
    # Customers and invoices.
    "Customer.email": Meaning(
        "The customer's email, lower-cased; null when only a phone is known.", "ana@example.com"
    ),
    "customer.email": Meaning(
        "The customer's email; the invoice is sent there.", "ana@example.com"
    ),
    "customer.name": Meaning("The customer's name; null when not given.", "Ana Silva"),
    "items.description": Meaning("What the line is for.", "Design work, October"),
    "items.amountMinor": Meaning("quantity times unitAmountMinor.", "8000"),
    "Invoice.paidAt": Meaning("When it was paid, as mark-paid recorded; null until PAID.", LATER),
    "POST /merchant/invoices.customerEmail": Meaning(
        "Where the invoice is sent.", "ana@example.com"
    ),
    "POST /merchant/invoices.customerName": Meaning(
        "The customer's name, shown on the invoice.", "Ana Silva"
    ),
    "POST /merchant/invoices.items": Meaning(
        "The lines, up to 100; omit them for a single-total invoice."
    ),
    "POST /merchant/invoices.invoiceNumber": Meaning(
        "Your own number, unique in the company; default INV-000001 counting up.", "INV-000042"
    ),
    "POST /merchant/invoices.dueDate": Meaning("When payment is due, an ISO date.", "2026-12-23"),
    "POST /merchant/invoices.memo": Meaning(
        "A note shown on the invoice.", "Thank you for your business."
    ),
    "POST /merchant/invoices/{id}/mark-paid.reference": Meaning(
        "The payment's reference outside the service, such as a bank transfer's.", "TRF-88213"
    ),
    "InvoiceTimelineEntry.status": Meaning("The invoice's status after the change.", "SENT"),
    "InvoiceTimelineEntry.actor": Meaning(
        "Who made the change: a user id (usr_…), an API key id (key_…), or system.", USER_ID
    ),
    "InvoiceTimelineEntry.note": Meaning(
        "More about the change (resent, due …, the mark-paid note); null when nothing.", "resent"
    ),
    # API keys.
    "ApiKey.name": Meaning("The key's name, for the merchant's own use.", "backend"),
    "ApiKey.scopes": Meaning("What the key may do: never more than its creator's scopes."),
    "ApiKey.last4": Meaning("The key's last four characters.", "TVsA"),
    "POST /merchant/api-keys.key": Meaning(
        "The full key, shown only in this answer.",
        "sk_test_CKueDYM2DGIqWaFSsPIxCkKK64LPAMB4TCfTTVsA",
    ),
    "ApiKeyLogEntry.at": Meaning("When the request was made.", AT),
    "ApiKeyLogEntry.requestId": Meaning("The request's id (req_…).", REQUEST_ID),
    # Webhooks and events.
    "WebhookEndpoint.description": Meaning(
        "The merchant's note on the endpoint; null when none.", "Order system"
    ),
    "WebhookDelivery.url": Meaning(
        "Where the delivery is POSTed.", "https://shop.example.com/hooks"
    ),
    "WebhookDelivery.status": Meaning(
        "PENDING before the first attempt, SUCCEEDED on a 2xx, RETRYING between attempts, DEAD "
        "once retries ran out or the receiver ended them.",
        "SUCCEEDED",
    ),
    "WebhookAttempt.at": Meaning("When the attempt was made.", AT),
    "WebhookAttempt.statusCode": Meaning(
        "The receiver's HTTP status; null when it did not answer.", 200
    ),
    "WebhookAttempt.error": Meaning(
        "Why the attempt failed (an HTTP status, a timeout, a refused connection); null on a 2xx.",
        "no answer within 10 s",
    ),
    "GET /merchant/webhooks/default-secret.secret": Meaning(
        "The company's default signing secret, which signs deliveries to a payment's own "
        "webhookUrl.",
        "whsec_UNhY4JhezH9gQYqvDMWrWH9CwlcKiECVqejMrND2VFw=",
    ),
    "POST /merchant/webhooks/{id}/recover.id": Meaning("The recovery's id (rcv_…).", RECOVERY_ID),
    "POST /merchant/webhooks/{id}/recover.endpointId": Meaning(
        "The endpoint whose deliveries are sent again.", ENDPOINT_ID
    ),
    "POST /merchant/webhooks/{id}/recover.since": Meaning(
        "Start of the window: an ISO date or timestamp, included.", "2026-11-20"
    ),
    "POST /merchant/webhooks/{id}/recover.until": Meaning(
        "End of the window: an ISO timestamp, or a whole date; default now.", AT
    ),
    "POST /merchant/webhooks/{id}/recover.deliveries": Meaning(
        "How many deliveries that had not succeeded are sent again.", 14
    ),
    "POST /merchant/webhooks/{id}/recover.hasMore": Meaning(
        "true when the window held more than one recovery sends (1,000).", False
    ),
    "Event.type": Meaning("The event's type, from the catalog.", "payment.completed"),
    "Event.data": Meaning("What the event is about."),
    "POST /merchant/events/{id}/replay.deliveries": Meaning(
        "The new deliveries, one per endpoint subscribed now."
    ),
    # Team and audit.
    "Role.name": Meaning("The role's name.", "finance"),
    "Role.scopes": Meaning("The scopes members holding the role have."),
    "Member.email": Meaning("The member's email, used to sign in.", "ana@example.com"),
    "Member.name": Meaning("The member's name; null when none was given.", "Ana Silva"),
    "Member.roleId": Meaning("The member's role (role_…).", ROLE_ID),
    "Invitation.email": Meaning("The address invited.", "ana@example.com"),
    "Invitation.roleId": Meaning("The role the invitee gets on joining.", ROLE_ID),
    "Invitation.expiresAt": Meaning(
        "When the link stops working, 7 days after it was sent.", "2026-11-30T09:30:00.000Z"
    ),
    "Invitation.decidedAt": Meaning(
        "When it was accepted, rejected or revoked; null while PENDING.", LATER
    ),
    "InvitationPreview.company": Meaning("The inviting company."),
    "InvitationPreview.role": Meaning("The role offered."),
    "InvitationPreview.email": Meaning("The address invited.", "ana@example.com"),
    "InvitationPreview.expiresAt": Meaning(
        "When the link stops working.", "2026-11-30T09:30:00.000Z"
    ),
    "POST /team/invitations.email": Meaning(
        "Who to invite; the link is emailed there.", "ana@example.com"
    ),
    "POST /team/invitations.roleId": Meaning(
        "The role the invitee gets on joining (not owner).", ROLE_ID
    ),
    "PATCH /team/members/{id}.roleId": Meaning("The role to give the member (not owner).", ROLE_ID),
    "POST /team/transfer-ownership.userId": Meaning("The member who becomes the owner.", USER_ID),
    "POST /team/invitations/token/{token}/accept.companyId": Meaning(
        "The company joined.", COMPANY_ID
    ),
    "POST /team/invitations/token/{token}/accept.expiresAt": _CODE_EXPIRES,
    "POST /team/approvals/requests/{id}/approve.comment": Meaning(
        "A note kept with your vote.", "Checked against the contract."
    ),
    "POST /team/approvals/requests/{id}/reject.comment": Meaning(
        "A note kept with your vote.", "Not budgeted."
    ),
    "Approval.action": Meaning(
        "The action held: payout.create, refund.create, card.issue or card.fund.", "payout.create"
    ),
    "Approval.expiresAt": Meaning(
        "When it expires undecided, 72 hours after it was made.", "2026-11-26T09:30:00.000Z"
    ),
    "Approval.error": Meaning(
        "Why the action was refused once FAILED (code, message, statusCode); null otherwise."
    ),
    "votes.userId": Meaning("The voter (usr_…).", USER_ID),
    "votes.at": Meaning("When the vote was cast.", LATER),
    "ApprovalPolicy.action": Meaning(
        "The action the policy holds: payout.create, refund.create, card.issue or card.fund.",
        "payout.create",
    ),
    "AuditEntry.at": Meaning("When the change was made.", AT),
    "AuditEntry.actor": Meaning("Who made the change."),
    "AuditEntry.action": Meaning("What was done, as object.verb.", "api_key.created"),
    "AuditEntry.ip": Meaning(
        "The address the request came from; null for the service's own changes.", "203.0.113.7"
    ),
    "AuditEntry.requestId": Meaning(
        "The request that made the change (req_…); null for the service's own changes.",
        REQUEST_ID,
    ),
    "actor.type": Meaning(
        "user, api_key, system (the service itself), or anonymous (a public link).", "user"
    ),
    "actor.id": Meaning("The user's or API key's id; null for system and anonymous.", USER_ID),
    "target.type": Meaning(
        "The kind of object, such as api_key or payout; null when none.", "api_key"
    ),
    "target.id": Meaning("The object's id; null when none.", KEY_ID),
    "GET /team/audit/verify.valid": Meaning(
        "Whether every entry matches its hash and place.", True
    ),
    "GET /team/audit/verify.checked": Meaning("How many entries were checked.", 42),
    "GET /team/audit/verify.firstBrokenId": Meaning(
        "The first entry that does not match; null when all do.", AUDIT_ID
    ),
    "GET /team/roles/scopes.data": Meaning("Every scope a custom role may hold."),
    # Sessions and sign-in.
    "Session.expiresAt": Meaning("When the session token expires.", "2026-11-23T21:30:00.000Z"),
    "user.id": Meaning("The user's id (usr_…).", USER_ID),
    "user.email": Meaning("The user's email, used to sign in.", "ana@example.com"),
    "user.name": Meaning("The user's name; null when none was given.", "Ana Silva"),
    "user.createdAt": Meaning("When the user signed up or joined.", AT),
    "company.id": Meaning("The company's id (co_…).", COMPANY_ID),
    "company.name": Meaning("The company's name.", "Acme Ltd"),
    "company.createdAt": Meaning("When the company was created.", AT),
    "role.id": Meaning("The role's id (role_…).", ROLE_ID),
    "role.name": Meaning("The role's name.", "finance"),
    "InvitationPreview.role.name": Meaning(
        "The role's name; null when it no longer exists.", "finance"
    ),
    "GET /auth/me.scopes": Meaning("The session's scopes, from the member's role."),
    "POST /auth/signup.email": Meaning(
        "The owner's email; the sign-in code is sent there.", "ana@example.com"
    ),
    "POST /auth/signup.name": Meaning("The owner's name.", "Ana Silva"),
    "POST /auth/signup.companyId": Meaning("The new company's id (co_…).", COMPANY_ID),
    "POST /auth/signup.expiresAt": _CODE_EXPIRES,
    "POST /auth/login.email": Meaning(
        "The member's email; a code is sent there when it belongs to a member.",
        "ana@example.com",
    ),
    "POST /auth/login.expiresAt": _CODE_EXPIRES,
    "POST /auth/otp/request.loginId": Meaning("The sign-in to send a fresh code for.", LOGIN_ID),
    "POST /auth/otp/request.expiresAt": _CODE_EXPIRES,
    "POST /auth/otp/verify.loginId": Meaning(
        "The loginId that signup, login or an accepted invitation answered.", LOGIN_ID
    ),
    "POST /auth/otp/verify.companyId": Meaning(
        "The company to sign in to, for a member of several; default the login's own, else the "
        "first.",
        COMPANY_ID,
    ),
    # Settings and KYC.
    "Settings.name": Meaning("The company's name, shared by both modes.", "Acme Ltd"),
    "KycDocument.type": Meaning("What the document is.", "passport"),
    "KycDocument.reviewedAt": Meaning("When a review decided it; null while PENDING.", LATER),
    "POST /merchant/kyc/documents.type": Meaning("What the document is.", "passport"),
    "GET /merchant/kyc.status": Meaning(
        "The company's verification in this mode; live money movement needs VERIFIED.",
        "VERIFIED",
    ),
    "GET /merchant/kyc.reason": Meaning("", "The document has expired."),
    "GET /merchant/kyc.reviewedAt": Meaning(
        "When the last review decided; null before one.", LATER
    ),
    # Developer routes.
    "GET /developer/ping.companyId": Meaning("The company the key belongs to.", COMPANY_ID),
    "GET /developer/ping.scopes": Meaning("The key's scopes."),
    "GET /developer/versions.current": Meaning("The current API version.", "v2"),
    "GET /developer/versions.default": Meaning(
        "What a request without X-Api-Version gets: the company's pinned version for a session, "
        "else the current one.",
        "v2",
    ),
    "GET /developer/versions.versions": Meaning("Every version and its status."),
    "versions.version": Meaning("The version's name.", "v1"),
    "versions.status": Meaning(
        "current, or deprecated (still served, with Sunset headers).", "deprecated"
    ),
    "versions.sunsetAt": Meaning(
        "When a deprecated version is due to be withdrawn.", "2027-07-01T00:00:00.000Z"
    ),
    "GET /developer/openapi.json.openapi": Meaning("The OpenAPI version of the document.", "3.0.3"),
    "GET /developer/openapi.json.paths": Meaning("Every operation, by path."),
    "POST /developer/sandbox/{kind}.kind": Meaning("The kind simulated.", "payment.completed"),
    "POST /developer/sandbox/{kind}.event": Meaning(
        "The event the transition emitted; null when it emitted none."
    ),
    "event.id": Meaning("The event's id (evt_…).", EVENT_ID),
    "event.type": Meaning("The event's type.", "payment.completed"),
    "POST /developer/sandbox/{kind}.merchantName": Meaning(
        "The merchant the card is used at (card.authorization).", "Blue Bottle Coffee"
    ),
    "POST /developer/sandbox/{kind}.merchantCategory": Meaning(
        "The merchant's category, Stripe Issuing's name (card.authorization).",
        "eating_places_restaurants",
    ),
    # Health.
    "GET /health.status": Meaning(
        "up when every service is; degraded when a non-critical one is not; down (503) when the "
        "database, broker or ledger is not.",
        "up",
    ),
    "GET /health.services": Meaning("Each service's state, by name."),
    "services.status": Meaning("up, degraded, down, or disabled for a service not in use.", "up"),
    "services.detail": Meaning(
        "What the probe found; only for a session or a loopback caller.", "probe succeeded"
    ),
    "GET /health/live.status": Meaning("up whenever the service answers.", "up"),
    "GET /health/ready.status": Meaning(
        "ready when the database and broker are connected and the node serves its shards, else "
        "not_ready (503).",
        "ready",
    ),
    "GET /health/ready.shards": Meaning("How many of the 64 shards this node owns.", 64),
    # Aggregates: one item per currency, never blended.
    "GET /merchant/payments/stats.data": Meaning("One entry per currency."),
    "GET /merchant/balance.data": Meaning("One balance per currency."),
    "GET /merchant/invoices/stats.data": Meaning("One entry per currency."),
    "GET /merchant/invoices/{id}/timeline.data": Meaning(
        "The invoice's status changes, oldest first."
    ),
    "GET /merchant/analytics.data": Meaning("One series per currency."),
    "GET /merchant/analytics/payments.data": Meaning("One summary per currency."),
    "GET /merchant/analytics/conversion.data": Meaning("One comparison per currency."),
    "AnalyticsStatusSummary.count": Meaning("Payments created in the window.", 40),
    "AnalyticsSeries.series": Meaning("One point per interval in the window, oldest first."),
}

# Query and path parameters. A query parameter filters a list or narrows a figure.
PARAMETERS: dict[str, Meaning] = {
    "status": Meaning("Only the ones in this status."),
    "currency": Meaning("Only this currency.", "USD"),
    "cursor": Meaning("", CURSOR),
    "limit": Meaning("", 20),
    "from": Meaning("", "2026-11-01"),
    "to": Meaning("", "2026-11-30"),
    "interval": Meaning("", "week"),
    "type": Meaning("", "payment.completed"),
    "linkPaymentId": Meaning("Only the paid children of this multi-use link.", LINK_ID),
    "customerEmail": Meaning("Only those for this customer email, in any case.", "ana@example.com"),
    "email": Meaning("Only the customer with this email, in any case.", "ana@example.com"),
    "paymentId": Meaning("Only the refunds of this payment.", PAYMENT_ID),
    "bankAccountId": Meaning("Only the payouts to this bank account.", BANK_ACCOUNT_ID),
    "sourceId": Meaning("Only the movements of this payment, refund, payout or card.", PAYMENT_ID),
    "mode": Meaning("Only the keys of this mode.", "test"),
    "actorId": Meaning("Only the changes made by this user or API key.", USER_ID),
    "action": Meaning("Only the changes of this action.", "api_key.created"),
    "format": Meaning("The file's format: jsonl (the default) or csv, in chain order.", "jsonl"),
    "GET /merchant/balance/transactions.type": Meaning(
        "Only the movements of this type.", "payment"
    ),
    "GET /merchant/cards.type": Meaning("Only member or only company cards.", "member"),
    # Path parameters other than {id}, which is described from its collection.
    "{reference}": Meaning("The payment link's reference (PAY-…), as in its payUrl.", REFERENCE),
    "{token}": Meaning(
        "The invitation's token, from the link emailed to the invitee.",
        "3WBP5YN3gslzRGQSfJgKwKNzAm-_P4d_IN7qt-GjcBE",
    ),
    "{kind}": Meaning(
        "What to simulate: the transition and event the real trigger would cause.",
        "payment.completed",
    ),
    "{action}": Meaning(
        "The action the policy holds: payout.create, refund.create, card.issue or card.fund.",
        "payout.create",
    ),
    # The request headers every operation shares (components.parameters).
    "X-Api-Version": Meaning("", "v2"),
    "Idempotency-Key": Meaning("", "order-1001"),
}

_SANDBOX = "/developer/sandbox/{kind}"
_POLICY = "/team/approvals/policies/{action}"
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


def describe(document: JSON) -> None:
    """Fill in a description and an example for every field, parameter and component schema of
    `document` (an OpenAPI 3.0 document as `build_openapi` makes it) that has none; a
    description or example already there stays. `{"$ref": …}` gets no siblings (OpenAPI 3.0
    ignores them): the schema it names carries its own."""
    # The document holds some module-level dicts of mps.http.openapi (the success and error
    # schemas) in several places at once: filled in place, the constants would change, and
    # every place would get the first one's text. A copy gives each place its own.
    document.update(orjson.loads(orjson.dumps(document)))
    components = document["components"]
    schemas: dict[str, JSON] = components["schemas"]
    for name, schema in schemas.items():
        _component(name, schema)
        _walk(schema, (name,))
    for parameter in components.get("parameters", {}).values():
        _parameter(parameter, "", "", schemas)
    for path, operations in document["paths"].items():
        template = path.removeprefix(API_PREFIX)
        for method, operation in operations.items():
            where = f"{method.upper()} {template}"
            for parameter in operation.get("parameters", []):
                if "$ref" not in parameter:
                    _parameter(parameter, where, template, schemas)
            for schema in _media_schemas(operation):
                _walk(schema, (where,))


def _media_schemas(operation: JSON) -> Iterable[JSON]:
    answers = [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
    for answer in answers:
        for media in answer.get("content", {}).values():
            if "schema" in media:
                yield media["schema"]


def _component(name: str, schema: JSON) -> None:
    meaning = COMPONENTS.get(name)
    if meaning is None and name.endswith("List"):
        meaning = Meaning(f"A page of {name[:-4]} objects, with the cursor of the next page.")
    if meaning is not None:
        schema.setdefault("description", meaning.description)
    if "enum" in schema and "example" not in schema:
        schema["example"] = _example(schema, meaning)


def _walk(schema: JSON, owner: tuple[str, ...]) -> None:
    """Describe the properties of `schema` and of the schemas inside it; `owner` names where it
    is: a component or an operation, then the properties leading to it."""
    if "$ref" in schema:
        return
    for key in ("allOf", "oneOf", "anyOf"):
        for option in schema.get(key, []):
            _walk(option, owner)
    for name, field in schema.get("properties", {}).items():
        _field(field, owner, name)
        _walk(field, (*owner, name))
    if isinstance(schema.get("items"), dict):
        _walk(schema["items"], owner)
    if isinstance(schema.get("additionalProperties"), dict):
        _walk(schema["additionalProperties"], owner)


def _field(field: JSON, owner: tuple[str, ...], name: str) -> None:
    if "$ref" in field:
        return
    meaning = _meaning(owner, name)
    if meaning is not None and meaning.description:
        field.setdefault("description", meaning.description)
    if is_scalar(field) and "example" not in field:
        example = _example(field, meaning)
        if example is not None:
            field["example"] = example


def _meaning(owner: tuple[str, ...], name: str) -> Meaning | None:
    """The most specific meaning of `name` in `owner` (see the module's docstring)."""
    heads = [owner]
    shown = _SHOWS.get(owner[0])
    if shown is not None:
        heads.append((shown, *owner[1:]))
    for head in heads:
        for start in range(len(head)):
            found = OVERRIDES.get(".".join((*head[start:], name)))
            if found is not None:
                return found
    return FIELDS.get(name)


def is_scalar(schema: JSON) -> bool:
    """Whether a field holds one value a reader can be shown: a string, number or boolean (an
    enum among them). A file (`format: binary`) is no value to show."""
    return schema.get("type") in _SCALARS and schema.get("format") != "binary"


def _example(schema: JSON, meaning: Meaning | None) -> Any:
    if meaning is not None and meaning.example is not None:
        return meaning.example
    values = [v for v in schema.get("enum", []) if v is not None]
    return values[0] if values else None


def _parameter(parameter: JSON, where: str, template: str, schemas: dict[str, JSON]) -> None:
    name, schema = parameter["name"], parameter.setdefault("schema", {})
    if parameter["in"] == "path":
        meaning = _path_meaning(name, template)
        if template == _SANDBOX and name == "kind":
            # Imported when needed: the sandbox's module loads the route table, whose
            # developer routes import mps.http.openapi and so this module (an import cycle).
            from mps.http.routes.sandbox import KINDS

            schema.setdefault("enum", sorted(KINDS))
        if template == _POLICY and name == "action":
            schema.setdefault("enum", sorted(APPROVAL_ACTIONS))
    else:
        meaning = PARAMETERS.get(f"{where}.{name}") or PARAMETERS.get(name)
    if "description" not in parameter:
        # The parameter's own words first, then what its schema says (a route's declaration).
        words = [meaning.description if meaning else "", schema.get("description", "")]
        described = " ".join(w for w in words if w)
        if described:
            parameter["description"] = described
    if "example" not in parameter and "examples" not in parameter:
        example = schema.get("example")
        if example is None:
            example = _example(_resolved(schema, schemas), meaning)
        if example is not None:
            parameter["example"] = example


def _path_meaning(name: str, template: str) -> Meaning | None:
    if name != "id":
        return PARAMETERS.get(f"{{{name}}}")
    parts = template.split("/")
    collection = parts[parts.index("{id}") - 1]
    known = _COLLECTIONS.get(collection)
    return Meaning(f"The {known[0]}.", known[1]) if known else None


def _resolved(schema: JSON, schemas: dict[str, JSON]) -> JSON:
    """A parameter's schema with a reference to a component followed (for its enum)."""
    ref = schema.get("$ref", "")
    prefix = "#/components/schemas/"
    return schemas.get(ref.removeprefix(prefix), schema) if ref.startswith(prefix) else schema
