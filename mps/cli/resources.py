"""The commands beyond payments: balance, refunds, payouts, invoices, customers, events and
webhook endpoints. Each calls one route with the stored credential (the session, else the API
key) and prints the answer as JSON, as the payments commands do (mps.cli.commands).

Lists and retrievals are declared as data (`_LISTS`, `_GETS`): a path, and which options become
which query fields, so each new resource is a line rather than a function.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from mps.cli.amounts import add_amount_options, amount_minor
from mps.cli.client import Api
from mps.cli.commands import Context, _path_id, _print_json
from mps.cli.parsing import SubParsers, add_command, add_group
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.payouts import PAYOUT_STATUSES
from mps.domain.refunds import REFUND_STATUSES

__all__ = ["add_resource_parsers"]


@dataclass(frozen=True, slots=True)
class _Filter:
    option: str  # --payment-id
    field: str  # paymentId
    help: str
    upper: bool = False  # statuses are upper case; the CLI takes either


@dataclass(frozen=True, slots=True)
class _List:
    resource: str
    path: str
    filters: tuple[_Filter, ...] = ()


_STATUS = "status"
_LISTS = (
    _List(
        "refunds",
        "/merchant/refunds",
        (
            _Filter("--payment-id", "paymentId", "only this payment's refunds (pay_…)"),
            _Filter("--status", _STATUS, ", ".join(REFUND_STATUSES), upper=True),
        ),
    ),
    _List(
        "payouts",
        "/merchant/payouts",
        (
            _Filter("--status", _STATUS, ", ".join(PAYOUT_STATUSES), upper=True),
            _Filter("--bank-account", "bankAccountId", "only payouts to this account (ba_…)"),
        ),
    ),
    _List(
        "invoices",
        "/merchant/invoices",
        (
            _Filter("--status", _STATUS, ", ".join(INVOICE_STATUSES), upper=True),
            _Filter("--customer-email", "customerEmail", "only this customer's invoices"),
        ),
    ),
    _List(
        "customers",
        "/merchant/customers",
        (_Filter("--email", "email", "the customer with this email"),),
    ),
    _List("events", "/merchant/events", (_Filter("--type", "type", "payment.completed, …"),)),
    _List("webhooks", "/merchant/webhooks"),
)
_GETS = {
    "refunds": ("/merchant/refunds/{id}", "REFUND_ID", "re_…"),
    "payouts": ("/merchant/payouts/{id}", "PAYOUT_ID", "po_…"),
    "invoices": ("/merchant/invoices/{id}", "INVOICE_ID", "inv_…"),
    "customers": ("/merchant/customers/{id}", "CUSTOMER_ID", "the customer's id"),
}
_HELP = {
    "refunds": "create, list and read refunds",
    "payouts": "create, list, read and cancel payouts",
    "invoices": "list and read invoices",
    "customers": "list and read customers",
    "events": "list the company's events",
    "webhooks": "list webhook endpoints",
}


async def _call(ctx: Context, method: str, path: str, **kwargs: Any) -> int:
    async with Api(ctx.url, ctx.credential()) as api:
        _print_json(await api.call(method, path, **kwargs))
    return 0


async def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    spec: _List = args.spec
    query: dict[str, str] = {}
    if args.limit is not None:
        query["limit"] = str(args.limit)
    if args.cursor:
        query["cursor"] = args.cursor
    for item in spec.filters:
        value = getattr(args, item.option.lstrip("-").replace("-", "_"))
        if value:
            query[item.field] = value.upper() if item.upper else value
    return await _call(ctx, "GET", spec.path, query=query)


async def cmd_get(ctx: Context, args: argparse.Namespace) -> int:
    return await _call(ctx, "GET", args.path.format(id=_path_id(args.id)))


async def cmd_balance(ctx: Context, args: argparse.Namespace) -> int:
    query = {"currency": args.currency.upper()} if args.currency else {}
    return await _call(ctx, "GET", "/merchant/balance", query=query)


def _idempotency(args: argparse.Namespace) -> dict[str, str]:
    return {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else {}


async def cmd_refunds_create(ctx: Context, args: argparse.Namespace) -> int:
    payment_id = _path_id(args.payment_id)
    async with Api(ctx.url, ctx.credential()) as api:
        if args.amount_minor is not None:
            currency = ""
        else:
            # Major units need the payment's currency for its exponent.
            payment = await api.call("GET", f"/merchant/payments/{payment_id}")
            currency = str(payment["currency"])
        body: dict[str, Any] = {
            "paymentId": payment_id,
            "amountMinor": amount_minor(args, currency),
        }
        if args.reason is not None:
            body["reason"] = args.reason
        refund = await api.call("POST", "/merchant/refunds", body=body, headers=_idempotency(args))
        _print_json(refund)
    return 0


async def cmd_payouts_create(ctx: Context, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "amountMinor": amount_minor(args, args.currency),
        "currency": args.currency,
        "bankAccountId": args.bank_account,
    }
    if args.description is not None:
        body["description"] = args.description
    return await _call(ctx, "POST", "/merchant/payouts", body=body, headers=_idempotency(args))


async def cmd_payouts_cancel(ctx: Context, args: argparse.Namespace) -> int:
    path = f"/merchant/payouts/{_path_id(args.id)}/cancel"
    return await _call(ctx, "POST", path, headers=_idempotency(args))


def _idempotency_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--idempotency-key", help="repeat the command with the same key to run it once"
    )


def add_resource_parsers(top: SubParsers, common: argparse.ArgumentParser) -> None:
    balance = add_command(
        top,
        "balance",
        common,
        cmd_balance,
        summary="show the balance, per currency",
        description="Show the balance: available and pending funds, per currency.",
    )
    balance.add_argument("--currency", help="only this currency: usd, eur, …")

    actions: dict[str, SubParsers] = {}
    for spec in _LISTS:
        sub = add_group(top, spec.resource, common, summary=_HELP[spec.resource])
        actions[spec.resource] = sub
        listing = add_command(
            sub,
            "list",
            common,
            cmd_list,
            summary=f"list {spec.resource}, newest first",
            description=f"List {spec.resource}, newest first.",
        )
        listing.add_argument("--limit", type=int, help="page size, 1 to 100 (20)")
        listing.add_argument("--cursor", help="the nextCursor of the previous page")
        for item in spec.filters:
            listing.add_argument(item.option, help=item.help)
        listing.set_defaults(spec=spec)
        if spec.resource in _GETS:
            path, metavar, example = _GETS[spec.resource]
            get = add_command(
                sub, "get", common, cmd_get, summary="show one", description="Show one."
            )
            get.add_argument("id", metavar=metavar, help=example)
            get.set_defaults(path=path)

    refund = add_command(
        actions["refunds"],
        "create",
        common,
        cmd_refunds_create,
        summary="refund a paid payment, in full or in part",
        description="Refund a PAID or PARTIAL_REFUND payment; --amount is in the payment's"
        " currency.",
    )
    refund.add_argument("--payment-id", required=True, help="the payment to refund (pay_…)")
    add_amount_options(refund)
    refund.add_argument("--reason")
    _idempotency_option(refund)

    payout = add_command(
        actions["payouts"],
        "create",
        common,
        cmd_payouts_create,
        summary="pay out available funds to a bank account",
        description="Pay out available funds to one of the company's bank accounts.",
    )
    add_amount_options(payout, currency=True)
    payout.add_argument("--bank-account", required=True, help="the bank account's id (ba_…)")
    payout.add_argument("--description")
    _idempotency_option(payout)

    cancel = add_command(
        actions["payouts"],
        "cancel",
        common,
        cmd_payouts_cancel,
        summary="cancel a PENDING payout",
        description="Cancel a PENDING payout; its funds return to available.",
    )
    cancel.add_argument("id", metavar="PAYOUT_ID", help="po_…")
    _idempotency_option(cancel)
