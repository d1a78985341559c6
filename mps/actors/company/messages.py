"""The commands a company actor takes, and what each replies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mps.actors.idempotency import IdempotencyRecord
from mps.domain.approvals import Policy
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.company import ModeSettings
from mps.domain.invitations import Invitation
from mps.domain.invoices import LineItem
from mps.domain.issuing import Card, Controls
from mps.domain.kyc import KycDocument, Review
from mps.domain.ledger import Books, Movement
from mps.domain.payments import NewPayment
from mps.domain.payouts import Payout
from mps.persistence.statements import Row, Statement

__all__ = [
    "AcceptInvitation",
    "AddMember",
    "AdvancePayout",
    "Balances",
    "Book",
    "CancelApproval",
    "CancelPayout",
    "ChangeMemberRole",
    "ClaimKey",
    "CreateApiKey",
    "CreateBankAccount",
    "CreateCompany",
    "CreateEndpoint",
    "CreateInvitation",
    "CreateInvoice",
    "CreatePayment",
    "CreatePayout",
    "CreateRole",
    "DecideInvitation",
    "DecideKyc",
    "DeleteBankAccount",
    "DeleteEndpoint",
    "DeleteRole",
    "EmitEvent",
    "ExpireApproval",
    "FailApproval",
    "ForgetApproval",
    "IssueCard",
    "IssuedCard",
    "NewInvoice",
    "OpenSession",
    "PayoutOutcome",
    "RecordAudit",
    "RecordDeliveries",
    "RecordKycDocument",
    "ReleaseKey",
    "RemoveMember",
    "RequestApproval",
    "RevokeApiKey",
    "RevokeSession",
    "RotateEndpointSecret",
    "RunPayoutSchedule",
    "SetPolicy",
    "Settle",
    "TransferOwnership",
    "UpdateEndpoint",
    "UpdateRole",
    "UpdateSettings",
    "VoteOnApproval",
]


@dataclass(frozen=True)
class CreateCompany:
    """Reply: the owner's user id."""

    name: str
    owner_email: str
    owner_name: str | None


@dataclass(frozen=True)
class AddMember:
    """Reply: the member's user id. Creates the user when the email has no account yet; 409
    when they are a member already. (Invitations accept through this.)"""

    email: str
    name: str | None
    role_id: str


@dataclass(frozen=True)
class UpdateSettings:
    """Reply: the company after the change. `changes` are already validated field values of
    the mode's settings; `name`, when given, renames the company (shared by both modes)."""

    mode: str
    changes: dict[str, Any]
    audit: AuditContext = SYSTEM
    name: str | None = None


@dataclass(frozen=True)
class OpenSession:
    """Reply: (session id, expiry). The user must be a member."""

    user_id: str
    mode: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RevokeSession:
    session_id: str


@dataclass(frozen=True)
class CreateApiKey:
    """Reply: (the key's row as stored, the full key shown once)."""

    created_by: str
    creator_scopes: frozenset[str]
    name: str
    type: str
    mode: str
    scopes: tuple[str, ...]
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RevokeApiKey:
    """Reply: the key's row after revocation. `key` is the row as the caller read it (404 before
    asking when there is none), so the turn can present the result without a read."""

    key: Row
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class ClaimKey:
    """Reply: None when the key is now in flight for the caller, who must look for a stored
    response (outside this actor) before running, and release the key when done; or an asyncio
    future to await while another request holds the key, then claim again."""

    key: str


@dataclass(frozen=True)
class ReleaseKey:
    """The request holding the key finished; wake whoever waits for it."""

    key: str


@dataclass(frozen=True)
class CreatePayment:
    """Reply: an Outcome with the new PENDING payment and its payment.created event."""

    mode: str
    spec: NewPayment
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class CreateEndpoint:
    """Reply: (the endpoint's row as stored, its secret shown once). `stored_count` is how many
    endpoints the caller read for the mode, used until the actor counts them itself."""

    mode: str
    url: str
    events: tuple[str, ...]
    description: str | None
    stored_count: int
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class UpdateEndpoint:
    """Reply: the endpoint's row after the change. `endpoint` is the row as the caller read it;
    `changes` are validated column values (url, events, description, status)."""

    endpoint: Row
    changes: dict[str, Any]
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RotateEndpointSecret:
    """Reply: (the endpoint's row after, the new secret shown once)."""

    endpoint: Row
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteEndpoint:
    """Reply: the row that was deleted."""

    endpoint: Row
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RecordDeliveries:
    """Reply: the rows, once committed. New deliveries of a replay or a recovery."""

    rows: tuple[Row, ...]
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class EmitEvent:
    """Reply: the event's body. An event about the company itself (webhook.ping)."""

    mode: str
    type: str
    obj: dict[str, Any]
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class Book:
    """Reply: the movements, once committed. Sent by a payment's actor for a change that moves
    money: `decide` picks the movements from the company's books and the mode's settings (and
    raises when the balance cannot take them), and `statements` is the caller's change, given
    the movements, to commit in the same unit."""

    mode: str
    decide: Callable[[Books, ModeSettings], list[Movement]]
    statements: Callable[[list[Movement]], Sequence[Statement]]


@dataclass(frozen=True)
class Settle:
    """Reply: how many credits settled. Due credits the settlement scheduler found in storage,
    as (mode, currency, payment id, amount)."""

    due: tuple[tuple[str, str, str, int], ...]


@dataclass(frozen=True)
class Balances:
    """Reply: [(currency, Balance)] as committed, for the mode."""

    mode: str


@dataclass(frozen=True)
class CreateBankAccount:
    """Reply: the BankAccount, once committed. The number is sealed before it is stored."""

    mode: str
    account_holder_name: str
    account_number: str
    bank_code: str
    currency: str
    country: str
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteBankAccount:
    """Reply: the BankAccount as it was. 409 while an open payout goes to it."""

    mode: str
    account_id: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class CreatePayout:
    """Reply: a PayoutOutcome with the PENDING payout and its payout.created event; or, when
    the amount is above the payout.create policy's threshold (and `approved` is not set), the
    PENDING ApprovalRequest made instead (only when `requested_by` is given)."""

    mode: str
    amount_minor: int
    currency: str
    bank_account_id: str
    description: str | None = None
    automatic: bool = False
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM
    # Who asks, for an approval request should the amount be above the policy's threshold;
    # None (an automatic payout, an approved request being run) asks for none.
    requested_by: str | None = None


@dataclass(frozen=True)
class CancelPayout:
    """Reply: a PayoutOutcome. `stored` is the payout as the caller read it (404 before asking
    when there is none), so a closed payout's 409 can name its state without a read."""

    stored: Payout
    idempotency: IdempotencyRecord | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class AdvancePayout:
    """Reply: a PayoutOutcome. The bank's next step for an open payout: `transit` (it took the
    payout), `paid` (it arrived) or `failed` (it came back, for `reason`). 409 unless the payout
    is open and the step follows from its state."""

    payout_id: str
    step: str
    reason: str | None = None
    mode: str | None = None
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class PayoutOutcome:
    payout: Payout
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class RunPayoutSchedule:
    """Reply: the PayoutOutcomes of the automatic payouts made. The mode's schedule run due at
    `due_at` (as stored): pay out the whole available balance of each currency to the oldest
    bank account in that currency, and move the schedule on."""

    mode: str
    due_at: str


@dataclass(frozen=True)
class NewInvoice:
    """A validated create request: `items`, or a single `amount_minor` (exactly one of them)."""

    currency: str
    customer_email: str
    customer_name: str | None = None
    items: tuple[LineItem, ...] | None = None
    amount_minor: int | None = None
    invoice_number: str | None = None
    due_date: str | None = None
    memo: str | None = None


@dataclass(frozen=True)
class CreateInvoice:
    """Reply: the SENT Invoice, once committed with its timeline entry and invoice.sent event.
    Numbered `INV-000001` upwards per mode unless `spec.invoice_number` is given (409
    `duplicate` when another invoice of the mode has it)."""

    mode: str
    spec: NewInvoice
    actor: str
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class CreateRole:
    """Reply: the new custom Role. `granter_scopes`: the creator's own scopes, its ceiling."""

    name: str
    scopes: frozenset[str]
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class UpdateRole:
    """Reply: the Role after the change (None fields stay). 409 for a built-in role."""

    role_id: str
    name: str | None
    scopes: frozenset[str] | None
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DeleteRole:
    """Reply: the Role as it was. 409 `role_in_use` while a member holds it."""

    role_id: str
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class ChangeMemberRole:
    """Reply: (user id, the new role id)."""

    user_id: str
    role_id: str
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class RemoveMember:
    """Reply: (user id, the role id they held). Their sessions in the company end. Refused
    when the member holds scopes `granter_scopes` lacks (None: no such check, an operator)."""

    user_id: str
    audit: AuditContext = SYSTEM
    granter_scopes: frozenset[str] | None = None


@dataclass(frozen=True)
class TransferOwnership:
    """Reply: the new owner's user id. `owner` must hold the owner role; they become admin."""

    owner: str
    user_id: str
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class CreateInvitation:
    """Reply: (the PENDING Invitation, its token, to be sent only in the email's link)."""

    email: str
    role_id: str
    invited_by: str
    granter_scopes: frozenset[str]
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None
    # The account the email already has, if any (read by the caller): the actor, which holds
    # the members, refuses to invite a member.
    user_id: str | None = None


@dataclass(frozen=True)
class AcceptInvitation:
    """Reply: the new member's user id. The membership and the ACCEPTED status commit in one
    unit; 409 when the invitation is no longer PENDING or has expired."""

    invitation: Invitation


@dataclass(frozen=True)
class DecideInvitation:
    """Reply: the Invitation after. `status` REJECTED (the invitee) or REVOKED (a member)."""

    invitation: Invitation
    status: str
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class SetPolicy:
    """Reply: the Policy as set."""

    policy: Policy
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RequestApproval:
    """Reply: the new PENDING ApprovalRequest when the action is above its policy's threshold
    (committed with its approval.requested event), else None: run the action now."""

    mode: str
    action: str
    currency: str
    amount_minor: int
    payload: dict[str, Any]
    requested_by: str
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class VoteOnApproval:
    """Reply: the request after the vote (PENDING, APPROVED or REJECTED)."""

    mode: str
    request_id: str
    voter: str
    voter_scopes: frozenset[str]
    decision: str  # approve | reject
    comment: str | None = None
    audit: AuditContext = SYSTEM
    # Stored with the vote unless the vote approves: the response is then the request as the
    # action leaves it, stored in the action's unit (mps.actors.approvals.ApprovalGuard).
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class CancelApproval:
    """Reply: the CANCELLED request; only its requester may."""

    mode: str
    request_id: str
    user_id: str
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class ExpireApproval:
    """Reply: the EXPIRED request, or None when it is not PENDING past its expiry."""

    request_id: str


@dataclass(frozen=True)
class FailApproval:
    """Reply: the FAILED request. The approved action ran and was refused with `error`."""

    request_id: str
    error: dict[str, Any]
    # The approving vote's key: its response is this FAILED request.
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class ForgetApproval:
    """Reply: None. The request's action committed (EXECUTED): it is no longer open."""

    request_id: str


@dataclass(frozen=True)
class IssueCard:
    """Reply: IssuedCard, once the card, its card.created event (and its funding from the
    wallet, with card.funded) committed. A member card goes to `member_id`."""

    mode: str
    type: str  # member | company
    currency: str
    controls: Controls
    cardholder_name: str | None = None
    nickname: str | None = None
    member_id: str | None = None
    initial_funding_minor: int = 0
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None
    # Who asks, for an approval request should the card.issue policy apply; None (an approved
    # request being run) asks for none.
    requested_by: str | None = None


@dataclass(frozen=True)
class IssuedCard:
    card: Card
    balance: int
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class RecordAudit:
    """Reply: None, once the entry is on the trail. For an audited act that changes nothing
    the company actor holds (revealing a card's details)."""

    action: str
    target: tuple[str, str]
    details: dict[str, Any]
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class RecordKycDocument:
    """Reply: (the document as stored, the mode's status after it). Its file is in object
    storage already; the row, the status it moves and its audit entry commit together."""

    document: KycDocument
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class DecideKyc:
    """Reply: the event's body. A review decides the mode's status (mps.domain.kyc): an
    operator's for live, the sandbox's for test."""

    review: Review
    audit: AuditContext = SYSTEM
    idempotency: IdempotencyRecord | None = None
    # Committed with the decision: the operator's request marked done, so that a request is
    # carried out once however often it is seen.
    extra: tuple[Statement, ...] = ()
