"""The company actor itself: its activation, its dispatch, and when it may passivate.

The handlers are plain functions of the actor's state (`CompanyState`) in the modules beside
this one, one per capability; the actor only routes each message to its handler, one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
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
    payouts_messages,
    sessions,
    team,
    webhooks,
)
from mps.actors.company.claims import ClaimKey, ReleaseKey
from mps.actors.company.state import CompanyState
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
        match message:
            case ClaimKey(key=key, owner=owner):
                return self.keys_in_flight.claim(key, owner)
            case ReleaseKey(key=key, owner=owner):
                self.keys_in_flight.release(key, owner)
                return None
        handler = _HANDLERS.get(type(message))
        if handler is None:
            msg = f"CompanyActor does not understand {type(message).__name__}"
            raise TypeError(msg)
        return handler(self.state, message)


# Each command's handler, a function of the company's state in the capability's module. Looked
# up by the message's exact type: commands are final classes, never subclassed.
_HANDLERS: dict[type[Any], Callable[[CompanyState, Any], Any]] = {
    members.CreateCompany: members.create_company,
    members.AddMember: members.add_member,
    members.UpdateSettings: members.update_settings,
    sessions.OpenSession: sessions.open_session,
    sessions.RevokeSession: sessions.revoke_session,
    api_keys.CreateApiKey: api_keys.create_api_key,
    api_keys.RevokeApiKey: api_keys.revoke_api_key,
    payments.CreatePayment: payments.create_payment,
    webhooks.CreateEndpoint: webhooks.create_endpoint,
    webhooks.UpdateEndpoint: webhooks.update_endpoint,
    webhooks.RotateEndpointSecret: webhooks.rotate_secret,
    webhooks.DeleteEndpoint: webhooks.delete_endpoint,
    webhooks.RecordDeliveries: webhooks.record_deliveries,
    webhooks.EmitEvent: webhooks.emit_event,
    ledger.Book: ledger.book,
    ledger.Settle: ledger.settle,
    ledger.Balances: ledger.balances,
    payouts_messages.CreateBankAccount: payouts.create_bank_account,
    payouts_messages.DeleteBankAccount: payouts.delete_bank_account,
    payouts_messages.CreatePayout: payouts.create_payout,
    payouts_messages.CancelPayout: payouts.cancel_payout,
    payouts_messages.AdvancePayout: payouts.advance_payout,
    payouts_messages.RunPayoutSchedule: payouts.run_payout_schedule,
    invoices.CreateInvoice: invoices.create_invoice,
    team.CreateRole: team.create_role,
    team.UpdateRole: team.update_role,
    team.DeleteRole: team.delete_role,
    team.ChangeMemberRole: team.change_member_role,
    team.RemoveMember: team.remove_member,
    team.TransferOwnership: team.transfer_ownership,
    invitations.CreateInvitation: invitations.create_invitation,
    invitations.AcceptInvitation: invitations.accept_invitation,
    invitations.DecideInvitation: invitations.decide_invitation,
    approvals.SetPolicy: approvals.set_policy,
    approvals.RequestApproval: approvals.request_approval,
    approvals.VoteOnApproval: approvals.vote_on_approval,
    approvals.CancelApproval: approvals.cancel_approval,
    approvals.ExpireApproval: approvals.expire_approval,
    approvals.FailApproval: approvals.fail_approval,
    approvals.ForgetApproval: approvals.forget_approval,
    cards.IssueCard: cards.issue_card,
    audit.RecordAudit: audit.record,
    kyc.RecordKycDocument: kyc.record_document,
    kyc.DecideKyc: kyc.decide,
}
