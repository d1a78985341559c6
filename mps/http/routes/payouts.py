"""Bank accounts and payouts (decisions 5): accounts to pay out to, off-cycle payouts that
reserve available funds, cancelling one while PENDING.

Bank-account changes notify the company's owners by email: a changed destination for the
company's money is what an owner must hear about even when someone else made it. The mail is
sent once the change is committed; a crash between the two loses the notice, not the change.
"""

from __future__ import annotations

from mps.actors.company import (
    CancelPayout,
    CreateBankAccount,
    CreatePayout,
    DeleteBankAccount,
    PayoutOutcome,
)
from mps.adapters.mail import Mail
from mps.domain.approvals import ApprovalRequest
from mps.domain.countries import COUNTRIES
from mps.domain.payouts import BankAccount
from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY
from mps.http.replies import Resource
from mps.http.resources import (
    BANK_ACCOUNT,
    BANK_ACCOUNT_FIELDS,
    PAYOUT,
    PAYOUT_STATUS,
    deleted,
    page,
    resource,
)
from mps.http.routes._scoped import merchant_one, merchant_page, one_in_mode
from mps.http.routes.approvals import HELD, approval_accepted
from mps.http.routes.payments import CURRENCY
from mps.http.routing import Call, LimitRule, RouteFamily
from mps.http.schema import Amount, Obj, Str
from mps.limits import Limit
from mps.persistence.queries import payouts as q
from mps.persistence.queries.members import owner_emails
from mps.representations.money import bank_account_json, payout_json

__all__ = ["ROUTES"]


async def _tell_owners(call: Call, account: BankAccount, change: str) -> None:
    services = call.services
    mode = "live" if account.livemode else "test"
    for email in await owner_emails(services.database, account.company_id):
        await services.mailer.send(
            Mail(
                to=email,
                subject=f"A bank account was {change}",
                text=(
                    f"The bank account ending in {account.last4} ({account.currency}, "
                    f"{account.account_holder_name}, {mode} mode) was {change} by "
                    f"{call.merchant.described}. If you did not expect this, review your team's "
                    "access and the company's bank accounts now."
                ),
            )
        )


async def create_bank_account(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    idem = call.idempotent(lambda account: Resource(bank_account_json(account), 201))
    account: BankAccount = await call.services.shards.ask_company(
        merchant.company_id,
        CreateBankAccount(
            merchant.mode,
            body["accountHolderName"].strip(),
            body["accountNumber"].replace(" ", ""),
            body["bankCode"].strip(),
            body["currency"],
            body["country"],
            call.audit(),
            idempotency=idem,
        ),
    )
    await _tell_owners(call, account, "added")
    return Resource(bank_account_json(account), 201)


list_bank_accounts = merchant_page(q.list_bank_accounts, bank_account_json)
get_bank_account = merchant_one(q.get_bank_account, bank_account_json, "No such bank account")


async def delete_bank_account(call: Call) -> Resource:
    merchant = call.merchant
    account: BankAccount = await call.services.shards.ask_company(
        merchant.company_id, DeleteBankAccount(merchant.mode, call.param("id"), call.audit())
    )
    await _tell_owners(call, account, "removed")
    return Resource({**bank_account_json(account), "deleted": True})


def _payout(outcome: PayoutOutcome, status: int = 200) -> Resource:
    return Resource(payout_json(outcome.payout), status)


def _created_or_held(outcome: PayoutOutcome | ApprovalRequest) -> Resource:
    if isinstance(outcome, ApprovalRequest):
        return approval_accepted(outcome)
    return _payout(outcome, 201)


async def create_payout(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    idem = call.idempotent(_created_or_held)
    outcome: PayoutOutcome | ApprovalRequest = await call.services.shards.ask_company(
        merchant.company_id,
        CreatePayout(
            merchant.mode,
            body["amountMinor"],
            body["currency"],
            body["bankAccountId"],
            body.get("description"),
            idempotency=idem,
            audit=call.audit(),
            requested_by=merchant.actor_id,
        ),
    )
    return _created_or_held(outcome)


list_payouts = merchant_page(
    q.list_payouts, payout_json, status="status", bank_account_id="bankAccountId"
)
get_payout = merchant_one(q.get_payout, payout_json, "No such payout")


async def cancel_payout(call: Call) -> Resource:
    merchant = call.merchant
    stored = await one_in_mode(call, merchant, q.get_payout, "No such payout")
    outcome: PayoutOutcome = await call.services.shards.ask_company(
        merchant.company_id,
        CancelPayout(stored, call.audit(), idempotency=call.idempotent(_payout)),
    )
    return _payout(outcome)


_payouts = RouteFamily("payouts", read="payouts:read", write="payouts:write")

ROUTES = [
    _payouts.post(
        "/merchant/bank-accounts",
        create_bank_account,
        "Add a bank account to pay out to; the owners are told by email",
        status=201,
        body=Obj(
            {
                "accountHolderName": Str(min_length=1, max_length=200),
                "accountNumber": Str(
                    pattern=r"[0-9A-Za-z ]{4,34}",
                    message="must be 4 to 34 letters and digits (an account number or IBAN)",
                    description="Stored encrypted; only its last four characters are shown.",
                ),
                "bankCode": Str(min_length=1, max_length=34),
                "currency": CURRENCY,
                "country": Str(
                    pattern="|".join(sorted(COUNTRIES)),
                    upper=True,
                    message="must be an ISO 3166-1 alpha-2 country code",
                ),
            },
            required=["accountHolderName", "accountNumber", "bankCode", "currency", "country"],
        ),
        response=resource(BANK_ACCOUNT),
        commits_key=True,
    ),
    _payouts.get(
        "/merchant/bank-accounts",
        list_bank_accounts,
        "List bank accounts, newest first",
        query=PAGE_QUERY,
        response=page(BANK_ACCOUNT),
    ),
    _payouts.get(
        "/merchant/bank-accounts/{id}",
        get_bank_account,
        "Retrieve a bank account",
        response=resource(BANK_ACCOUNT),
    ),
    _payouts.delete(
        "/merchant/bank-accounts/{id}",
        delete_bank_account,
        "Remove a bank account; the owners are told by email",
        response=deleted(BANK_ACCOUNT_FIELDS),
    ),
    _payouts.post(
        "/merchant/payouts",
        create_payout,
        "Pay out available funds to a bank account (an off-cycle payout)",
        status=201,
        limits=(LimitRule.per_actor(Limit("payout-create", 30, 60)),),
        body=Obj(
            {
                "amountMinor": Amount(),
                "currency": CURRENCY,
                "bankAccountId": Str(max_length=64),
                "description": Str(max_length=200),
            },
            required=["amountMinor", "currency", "bankAccountId"],
        ),
        response=resource(PAYOUT),
        also=HELD,
        commits_key=True,
    ),
    _payouts.get(
        "/merchant/payouts",
        list_payouts,
        "List payouts, newest first",
        query=Obj(
            {
                **PAGE_FIELDS,
                "status": PAYOUT_STATUS,
                "bankAccountId": Str(max_length=64),
            }
        ),
        response=page(PAYOUT),
    ),
    _payouts.get(
        "/merchant/payouts/{id}", get_payout, "Retrieve a payout", response=resource(PAYOUT)
    ),
    _payouts.post(
        "/merchant/payouts/{id}/cancel",
        cancel_payout,
        "Cancel a PENDING payout; its funds return to available",
        response=resource(PAYOUT),
        commits_key=True,
    ),
]
