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
    claims,
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
from mps.actors.company.messages import (
    AcceptInvitation,
    AddMember,
    AdvancePayout,
    Balances,
    Book,
    CancelApproval,
    CancelPayout,
    ChangeMemberRole,
    ClaimKey,
    CreateApiKey,
    CreateBankAccount,
    CreateCompany,
    CreateEndpoint,
    CreateInvitation,
    CreateInvoice,
    CreatePayment,
    CreatePayout,
    CreateRole,
    DecideInvitation,
    DecideKyc,
    DeleteBankAccount,
    DeleteEndpoint,
    DeleteRole,
    EmitEvent,
    ExpireApproval,
    FailApproval,
    ForgetApproval,
    IssueCard,
    OpenSession,
    RecordAudit,
    RecordDeliveries,
    RecordKycDocument,
    ReleaseKey,
    RemoveMember,
    RequestApproval,
    RevokeApiKey,
    RevokeSession,
    RotateEndpointSecret,
    RunPayoutSchedule,
    SetPolicy,
    Settle,
    TransferOwnership,
    UpdateEndpoint,
    UpdateRole,
    UpdateSettings,
    VoteOnApproval,
)
from mps.actors.company.state import CompanyState
from mps.actors.context import ActorContext
from mps.actors.references import References
from mps.actors.runtime import AsyncioActor
from mps.auth.keyring import Keyring
from mps.domain.ids import payment_reference
from mps.errors import NotFound
from mps.persistence import approval_store, audit_store, invoice_store, payout_store, team_store
from mps.persistence.ledger_store import load_books
from mps.persistence.queries import companies

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
        state = self.state
        try:
            state.company = await companies.company(state.context.database, state.company_id)
        except NotFound:
            state.company = None
            return
        state.members = await companies.member_roles(state.context.database, state.company_id)
        db = state.context.database
        state.books = await load_books(db, state.company_id)
        state.bank_accounts = await payout_store.load_bank_accounts(db, state.company_id)
        state.payouts = await payout_store.load_open_payouts(db, state.company_id)
        state.invoice_numbers = await invoice_store.load_invoice_numbers(db, state.company_id)
        state.audit_head = await audit_store.load_head(db, state.company_id)
        state.roles = await team_store.load_roles(db, state.company_id)
        state.policies = await approval_store.load_policies(db, state.company_id)
        state.approvals = await approval_store.load_open(db, state.company_id)

    def can_passivate(self) -> bool:
        # The futures of in-flight keys live here; passivating would strand their waiters. An
        # invoice number given back by a refused create lives only here too, until the next
        # create takes it (the next incarnation would start after the highest one stored).
        state = self.state
        returned = any(state.returned_numbers.values())
        return not state.in_flight and not returned and super().can_passivate()

    async def receive(self, message: Any) -> Any:
        state = self.state
        match message:
            case CreateCompany():
                return await members.create_company(state, message)
            case AddMember():
                return await members.add_member(state, message)
            case UpdateSettings():
                return await members.update_settings(state, message)
            case OpenSession():
                return await sessions.open_session(state, message)
            case RevokeSession():
                return await sessions.revoke_session(state, message)
            case CreateApiKey():
                return await api_keys.create_api_key(state, message)
            case RevokeApiKey():
                return await api_keys.revoke_api_key(state, message)
            case ClaimKey(key=key):
                return claims.claim_key(state, key)
            case ReleaseKey(key=key):
                claims.release_key(state, key)
                return None
            case CreatePayment():
                return payments.create_payment(state, message)
            case CreateEndpoint():
                return await webhooks.create_endpoint(state, message)
            case UpdateEndpoint():
                return await webhooks.update_endpoint(state, message)
            case RotateEndpointSecret():
                return await webhooks.rotate_secret(state, message)
            case DeleteEndpoint():
                return await webhooks.delete_endpoint(state, message)
            case RecordDeliveries():
                return await webhooks.record_deliveries(state, message)
            case EmitEvent():
                return await webhooks.emit_event(state, message)
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
                return await invitations.create_invitation(state, message)
            case AcceptInvitation():
                return await invitations.accept_invitation(state, message)
            case DecideInvitation():
                return await invitations.decide_invitation(state, message)
            case SetPolicy():
                return await approvals.set_policy(state, message)
            case RequestApproval():
                return await approvals.request_approval(state, message)
            case VoteOnApproval():
                return await approvals.vote_on_approval(state, message)
            case CancelApproval():
                return await approvals.cancel_approval(state, message)
            case ExpireApproval():
                return await approvals.expire_approval(state, message)
            case FailApproval():
                return await approvals.fail_approval(state, message)
            case ForgetApproval():
                return approvals.forget_approval(state, message)
            case IssueCard():
                return cards.issue_card(state, message)
            case RecordAudit():
                return audit.record(state, message)
            case RecordKycDocument():
                return await kyc.record_document(state, message)
            case DecideKyc():
                return await kyc.decide(state, message)
        msg = f"CompanyActor does not understand {type(message).__name__}"
        raise TypeError(msg)
