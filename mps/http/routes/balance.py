"""The balance and its movements (decisions 5). The balance is the company actor's: the sums of
its ledger as committed, so a read never waits on a scan of the postings."""

from __future__ import annotations

from mps.actors.company import Balances
from mps.domain.ledger import MOVEMENT_TYPES, Balance
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Aggregate, Resource
from mps.http.resources import BALANCE, BALANCE_TRANSACTION, page, per_currency
from mps.http.routes._scoped import merchant_page
from mps.http.routes.payments import CURRENCY_FILTER
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Enum, Obj, Str
from mps.persistence.queries import ledger as q
from mps.representations.money import balance_json, transaction_json

__all__ = ["ROUTES"]


async def get_balance(call: Call) -> Resource | Aggregate:
    merchant, currency = call.merchant, call.query.get("currency")
    found: list[tuple[str, Balance]] = await call.services.shards.ask_company(
        merchant.company_id, Balances(merchant.mode)
    )
    if currency is not None:
        held = dict(found)
        return Resource(balance_json(currency, held.get(currency, Balance())))
    return Aggregate([balance_json(c, b) for c, b in found])


list_transactions = merchant_page(
    q.list_transactions, transaction_json, currency="currency", source_id="sourceId", kind="type"
)


_balance = RouteFamily("balance", read="payouts:read")

ROUTES = [
    _balance.get(
        "/merchant/balance",
        get_balance,
        "The balance per currency: available, pending and reserved",
        query=Obj({"currency": CURRENCY_FILTER}),
        response=per_currency(BALANCE),
    ),
    _balance.get(
        "/merchant/balance/transactions",
        list_transactions,
        "The ledger's movements, newest first",
        query=Obj(
            {
                **PAGE_FIELDS,
                "currency": CURRENCY_FILTER,
                "type": Enum(MOVEMENT_TYPES),
                "sourceId": Str(max_length=64),
            }
        ),
        response=page(BALANCE_TRANSACTION),
    ),
]
