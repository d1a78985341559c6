"""The company actor: one per company, serializing changes to its settings, members and keys.

It loads the company's snapshot and its members when activated and applies each command in
turn: decide from memory with pure rules, hold what was decided (a reservation in the books, a
payout's or an approval's new state, the company's new settings, a role), and return the commit
(with its events, its audit entries and the request's idempotency record) as `Detached` work
for the persistence actor. The caller's reply waits for the commit; the actor does not, and
takes its next message, decided against what it holds. A commit that fails undoes what its turn
held (mps.actors.commits), so a command that fails leaves the in-memory state as it was; one of
unknown outcome has the actor reload before it decides again.

A turn never awaits a read, a commit or any other round trip: whatever a command needs that the
actor does not hold is read by the caller before it asks (the key row a revoke shows, the stored
response of an idempotency key) or, when nothing decided in the turn depends on it, by the
detached work (an API key's creator for an approval request, a removed member's keys for their
audit entries). So one merchant's traffic never queues behind database round trips, and its
burst, audited writes included (mps.actors.company.audit), shares group commits.

The package is split by capability: `actor` (activation, dispatch, passivation), `state` (what
the actor holds, which every handler takes), and one module each, holding its commands (with
what each replies) beside their handlers, for `members` (the company, its members and settings),
`sessions`, `api_keys`, `claims` (Idempotency-Key claims), `payments` (creating one), `webhooks`
(endpoints, replayed deliveries, company events), `ledger` (every money movement of the company,
committed here and nowhere else), `payouts` (bank accounts and payouts, its commands in
`payouts_messages`) and `invoices` (numbering and creating invoices; an invoice's own actor
changes it afterwards), `team` (custom roles, role changes, removals, the ownership transfer),
`kyc` (documents and reviews moving the identity-verification status) and `audit` (the hash
chain every audited change is appended to, in its own unit).
"""

from mps.actors.company import payouts_messages
from mps.actors.company.actor import CompanyActor
from mps.actors.company.api_keys import CreateApiKey, RevokeApiKey
from mps.actors.company.approvals import (
    CancelApproval,
    ExpireApproval,
    FailApproval,
    ForgetApproval,
    RequestApproval,
    SetPolicy,
    VoteOnApproval,
)
from mps.actors.company.audit import RecordAudit
from mps.actors.company.cards import IssueCard, IssuedCard
from mps.actors.company.claims import ClaimKey, ReleaseKey
from mps.actors.company.invitations import AcceptInvitation, CreateInvitation, DecideInvitation
from mps.actors.company.invoices import CreateInvoice, NewInvoice
from mps.actors.company.kyc import DecideKyc, RecordKycDocument
from mps.actors.company.ledger import Balances, Book, Settle
from mps.actors.company.members import AddMember, CreateCompany, UpdateSettings
from mps.actors.company.payments import CreatePayment

# `payouts_messages` holds nothing but the payout commands and their reply: all of it is offered.
from mps.actors.company.payouts_messages import *  # noqa: F403
from mps.actors.company.sessions import OpenSession, RevokeSession
from mps.actors.company.team import (
    ChangeMemberRole,
    CreateRole,
    DeleteRole,
    RemoveMember,
    TransferOwnership,
    UpdateRole,
)
from mps.actors.company.webhooks import (
    CreateEndpoint,
    DeleteEndpoint,
    EmitEvent,
    RecordDeliveries,
    RotateEndpointSecret,
    UpdateEndpoint,
)

__all__ = [
    *payouts_messages.__all__,
    "AcceptInvitation",
    "AddMember",
    "Balances",
    "Book",
    "CancelApproval",
    "ChangeMemberRole",
    "ClaimKey",
    "CompanyActor",
    "CreateApiKey",
    "CreateCompany",
    "CreateEndpoint",
    "CreateInvitation",
    "CreateInvoice",
    "CreatePayment",
    "CreateRole",
    "DecideInvitation",
    "DecideKyc",
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
    "RecordAudit",
    "RecordDeliveries",
    "RecordKycDocument",
    "ReleaseKey",
    "RemoveMember",
    "RequestApproval",
    "RevokeApiKey",
    "RevokeSession",
    "RotateEndpointSecret",
    "SetPolicy",
    "Settle",
    "TransferOwnership",
    "UpdateEndpoint",
    "UpdateRole",
    "UpdateSettings",
    "VoteOnApproval",
]
