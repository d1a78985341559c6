"""The company actor itself: its activation, its dispatch, and when it may passivate.

The handlers are plain functions of the actor's state (`CompanyState`) in the modules beside
this one, one per capability; the actor only routes each message to its handler, one at a time.
"""

from __future__ import annotations

from typing import Any

from mps.actors.company import (
    api_keys,
    approvals,
    audit,
    cards,
    invitations,
    invoices,
    kyc,
    ledger,
    members,
    payments,
    payouts,
    sessions,
    team,
    webhooks,
)
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
from mps.actors.company.cards import IssueCard
from mps.actors.company.claims import ClaimKey, ReleaseKey
from mps.actors.company.invitations import AcceptInvitation, CreateInvitation, DecideInvitation
from mps.actors.company.invoices import CreateInvoice
from mps.actors.company.kyc import DecideKyc, RecordKycDocument
from mps.actors.company.ledger import Balances, Book, Settle
from mps.actors.company.members import AddMember, CreateCompany, UpdateSettings
from mps.actors.company.payments import CreatePayment
from mps.actors.company.payouts_messages import (
    AdvancePayout,
    CancelPayout,
    CreateBankAccount,
    CreatePayout,
    DeleteBankAccount,
    RunPayoutSchedule,
)
from mps.actors.company.sessions import OpenSession, RevokeSession
from mps.actors.company.state import CompanyState
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
from mps.actors.context import ActorContext
from mps.actors.references import References
from mps.actors.runtime import AsyncioActor
from mps.auth.keyring import Keyring
from mps.domain.ids import payment_reference
from mps.persistence.company_snapshot import load_company

__all__ = ["CompanyActor"]


class CompanyActor(AsyncioActor):
    def __init__(
        self,
        company_id: str,
        context: ActorContext,
        keyring: Keyring,
        public_url: str,
        *,
        references: References = payment_reference,
        payout_transit_after: float = 2.0,
        payout_arrival_after: float = 2.0,
    ) -> None:
        super().__init__()
        self.state = CompanyState(
            company_id,
            context,
            keyring,
            public_url,
            references,
            payout_transit_after=payout_transit_after,
            payout_arrival_after=payout_arrival_after,
        )

    def __str__(self) -> str:
        return f"CompanyActor({self.state.company_id})"

    async def on_activate(self) -> None:
        """Load the company's state in one read (mps.persistence.company_snapshot): its row,
        members, books from their balance snapshots, bank accounts, open payouts, invoice
        numbers, audit head, roles, policies and open approvals. No company: `company` stays
        None and every command but a create answers 404."""
        state = self.state
        loaded = await load_company(state.context.database, state.company_id)
        if loaded is None:
            state.company = None
            return
        state.company = loaded.company
        state.members = loaded.members
        state.books = loaded.books
        state.bank_accounts = loaded.bank_accounts
        state.payouts = loaded.payouts
        state.invoice_numbers = loaded.invoice_numbers
        state.audit_head = loaded.audit_head
        state.roles = loaded.roles
        state.policies = loaded.policies
        state.approvals = loaded.approvals

    def can_passivate(self) -> bool:
        # An invoice number given back by a refused create lives only here, until the next
        # create takes it (the next incarnation would start after the highest one stored). The
        # keys in flight, whose waiters passivating would strand, are the runtime's to count.
        returned = any(self.state.returned_numbers.values())
        return not returned and super().can_passivate()

    async def receive(self, message: Any) -> Any:
        state = self.state
        match message:
            case CreateCompany():
                return members.create_company(state, message)
            case AddMember():
                return members.add_member(state, message)
            case UpdateSettings():
                return members.update_settings(state, message)
            case OpenSession():
                return sessions.open_session(state, message)
            case RevokeSession():
                return sessions.revoke_session(state, message)
            case CreateApiKey():
                return api_keys.create_api_key(state, message)
            case RevokeApiKey():
                return api_keys.revoke_api_key(state, message)
            case ClaimKey(key=key, owner=owner):
                return self.keys_in_flight.claim(key, owner)
            case ReleaseKey(key=key, owner=owner):
                self.keys_in_flight.release(key, owner)
                return None
            case CreatePayment():
                return payments.create_payment(state, message)
            case CreateEndpoint():
                return webhooks.create_endpoint(state, message)
            case UpdateEndpoint():
                return webhooks.update_endpoint(state, message)
            case RotateEndpointSecret():
                return webhooks.rotate_secret(state, message)
            case DeleteEndpoint():
                return webhooks.delete_endpoint(state, message)
            case RecordDeliveries():
                return webhooks.record_deliveries(state, message)
            case EmitEvent():
                return webhooks.emit_event(state, message)
            case Book():
                return ledger.book(state, message)
            case Settle():
                return ledger.settle(state, message)
            case Balances():
                return ledger.balances(state, message)
            case CreateBankAccount():
                return payouts.create_bank_account(state, message)
            case DeleteBankAccount():
                return payouts.delete_bank_account(state, message)
            case CreatePayout():
                return payouts.create_payout(state, message)
            case CancelPayout():
                return payouts.cancel_payout(state, message)
            case AdvancePayout():
                return payouts.advance_payout(state, message)
            case RunPayoutSchedule():
                return payouts.run_payout_schedule(state, message)
            case CreateInvoice():
                return invoices.create_invoice(state, message)
            case CreateRole():
                return team.create_role(state, message)
            case UpdateRole():
                return team.update_role(state, message)
            case DeleteRole():
                return team.delete_role(state, message)
            case ChangeMemberRole():
                return team.change_member_role(state, message)
            case RemoveMember():
                return team.remove_member(state, message)
            case TransferOwnership():
                return team.transfer_ownership(state, message)
            case CreateInvitation():
                return invitations.create_invitation(state, message)
            case AcceptInvitation():
                return invitations.accept_invitation(state, message)
            case DecideInvitation():
                return invitations.decide_invitation(state, message)
            case SetPolicy():
                return approvals.set_policy(state, message)
            case RequestApproval():
                return approvals.request_approval(state, message)
            case VoteOnApproval():
                return approvals.vote_on_approval(state, message)
            case CancelApproval():
                return approvals.cancel_approval(state, message)
            case ExpireApproval():
                return approvals.expire_approval(state, message)
            case FailApproval():
                return approvals.fail_approval(state, message)
            case ForgetApproval():
                return approvals.forget_approval(state, message)
            case IssueCard():
                return cards.issue_card(state, message)
            case RecordAudit():
                return audit.record(state, message)
            case RecordKycDocument():
                return kyc.record_document(state, message)
            case DecideKyc():
                return kyc.decide(state, message)
        msg = f"CompanyActor does not understand {type(message).__name__}"
        raise TypeError(msg)
