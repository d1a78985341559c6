"""The cleanup contexts of the work that runs beside requests: the deadlines' watchdog, the
periodic schedulers and webhook deliveries.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

from aiohttp import web

from mps.actors.key_usage import KeyUsage
from mps.actors.schedulers.approvals import Approvals
from mps.actors.schedulers.expiry import PaymentExpiry
from mps.actors.schedulers.housekeeping import Housekeeping
from mps.actors.schedulers.invoice_overdue import InvoiceOverdue
from mps.actors.schedulers.kyc_desk import KycDesk
from mps.actors.schedulers.money import MoneyWork
from mps.actors.schedulers.reconciliation import Reconciliation
from mps.actors.webhooks import Webhooks
from mps.adapters.bank import Bank, SimulatorBank
from mps.composition.parts import PARTS, Schedulers, Worker, running
from mps.config import Settings
from mps.http.deadlines import Deadlines
from mps.http.statuses import status_of


def _banks(settings: Settings) -> dict[str, Bank | None]:
    """Like the processors: test payouts always go to the simulated bank, live ones only in the
    development server mode (production has no real bank adapter yet: they wait)."""
    simulator = SimulatorBank()
    return {"test": simulator, "live": simulator if settings.development else None}


_W = TypeVar("_W", bound=Worker)


async def deadlines(app: web.Application) -> AsyncIterator[None]:
    """The watchdog of requests that run past their deadline."""
    parts = app[PARTS]
    deadlines = Deadlines()
    parts.deadlines = deadlines
    async with running(deadlines):
        yield


async def schedulers(app: web.Application) -> AsyncIterator[None]:
    """The periodic work, each started in turn and closed in reverse. In a cluster each runs
    over the shards this node owns; housekeeping, which is cluster-wide, on shard 0's owner.
    Key uses are started last so they close first: the server takes no more requests by then,
    and what they recorded is written before the writer stops."""
    parts = app[PARTS]
    settings, extra, database, shards = parts.settings, parts.extra, parts.database, parts.shards
    async with contextlib.AsyncExitStack() as running:

        def started(worker: _W) -> _W:
            worker.start()
            running.push_async_callback(worker.close)
            return worker

        started(PaymentExpiry(database, shards, extra.clock, settings.expiry_interval))
        money = started(
            MoneyWork(
                database,
                shards,
                extra.clock,
                parts.processors,
                _banks(settings),
                parts.keyring,
                settings.money_interval,
            )
        )
        reconciliation = started(Reconciliation(database, shards, settings.reconciliation_interval))
        overdue = started(
            InvoiceOverdue(database, shards, extra.clock, settings.invoice_overdue_interval)
        )
        approvals = started(
            Approvals(
                database, shards, extra.clock, settings.approval_interval, status_of=status_of
            )
        )
        kyc = started(
            KycDesk(parts.context, shards, parts.objects, extra.clock, settings.kyc_interval)
        )
        started(
            Housekeeping(
                parts.context, settings.housekeeping_interval, when=lambda: shards.owns_shard(0)
            )
        )
        key_usage = started(KeyUsage(parts.context, settings.key_usage_interval))
        parts.schedulers = Schedulers(money, reconciliation, overdue, approvals, kyc, key_usage)
        yield


async def webhooks(app: web.Application) -> AsyncIterator[None]:
    """Webhook deliveries: the relay from the outbox, the dispatcher, and mail channels."""
    parts = app[PARTS]
    settings = parts.settings
    webhooks = Webhooks(
        parts.context,
        parts.broker,
        parts.keyring,
        parts.shards,
        prefix=settings.cluster_name,
        retry_scale=settings.webhook_retry_scale,
        concurrency=settings.webhook_concurrency,
        allow_private=settings.development,
        mailer=parts.mailer,
    )
    parts.webhooks = webhooks
    try:
        await webhooks.start()
        yield
    finally:
        await webhooks.close()
