"""The cleanup contexts of the actors' shards and of the cluster node that takes them, with
the shards' factory and the processors their payments use.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from aiohttp import web

from mps.actors.card import CardActor
from mps.actors.company import CompanyActor
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.invoice import InvoiceActor
from mps.actors.payment import PaymentActor
from mps.actors.recent import RecentPayments
from mps.actors.shards import CardKey, InvoiceKey, PaymentKey, Shard, ShardRouter
from mps.adapters.processor import Processor, SimulatorProcessor
from mps.auth.keyring import Keyring
from mps.cluster.node import ClusterNode
from mps.cluster.timings import ClusterTimings
from mps.composition.parts import PARTS, Overrides, running
from mps.config import Settings
from mps.domain.clock import iso
from mps.persistence.shard_store import take as take_shard
from mps.representations.invoices import hosted_url


def _processors(settings: Settings, extra: Overrides) -> dict[str, Processor | None]:
    """Test mode always simulates; live mode simulates only in the development server mode,
    and in production needs a real adapter (none ships yet, so live checkout answers 503)."""
    simulator = SimulatorProcessor()
    live = extra.live_processor or (simulator if settings.development else None)
    return {"test": extra.test_processor or simulator, "live": live}


def _make_shard_factory(
    settings: Settings,
    base: ActorContext,
    keyring: Keyring,
    processors: dict[str, Processor | None],
) -> Callable[[int, int | None], Shard]:
    companies_per_shard = max(1, settings.company_actor_capacity // settings.shard_count)
    payments_per_shard = max(1, settings.payment_actor_capacity // settings.shard_count)
    recent = RecentPayments(settings.recent_payments)

    def invoice_link(invoice_id: str) -> str:
        return hosted_url(settings.public_url, invoice_id, keyring.invoice_token(invoice_id))

    def make(index: int, epoch: int | None) -> Shard:
        context = replace(
            base,
            fence=None if epoch is None else (index, epoch),
            recent=recent.view(),
        )
        companies: ActorDirectory[str, CompanyActor] = ActorDirectory(
            f"company[{index}]",
            lambda company_id: CompanyActor(
                company_id,
                context,
                keyring,
                settings.public_url,
                payout_transit_after=settings.payout_transit_after,
                payout_arrival_after=settings.payout_arrival_after,
            ),
            capacity=companies_per_shard,
            idle_after=settings.actor_idle_after,
        )
        payments: ActorDirectory[PaymentKey, PaymentActor] = ActorDirectory(
            f"payment[{index}]",
            lambda key: PaymentActor(
                key[1],
                key[0],
                context,
                keyring,
                processors,
                settings.public_url,
                functools.partial(companies.ask, key[0]),
                refund_delay=settings.refund_delay,
            ),
            capacity=payments_per_shard,
            idle_after=settings.actor_idle_after,
        )
        invoices: ActorDirectory[InvoiceKey, InvoiceActor] = ActorDirectory(
            f"invoice[{index}]",
            lambda key: InvoiceActor(key[1], key[0], context, invoice_link),
            capacity=payments_per_shard,
            idle_after=settings.actor_idle_after,
        )
        cards: ActorDirectory[CardKey, CardActor] = ActorDirectory(
            f"card[{index}]",
            lambda key: CardActor(
                key[1], key[0], context, functools.partial(companies.ask, key[0])
            ),
            capacity=payments_per_shard,
            idle_after=settings.actor_idle_after,
        )
        return Shard(index, companies, payments, invoices, cards, epoch, context.recent)

    return make


async def shards(app: web.Application) -> AsyncIterator[None]:
    """The shards of company, payment, invoice and card actors: all of them when alone; in a
    cluster, those the cluster node takes. Closing stops their actors (which may still write)."""
    parts = app[PARTS]
    settings = parts.settings
    parts.processors = _processors(settings, parts.extra)
    shards = ShardRouter(
        settings.shard_count,
        _make_shard_factory(settings, parts.context, parts.keyring, parts.processors),
        clustered=settings.clustered,
    )
    parts.shards = shards
    async with running(shards):
        yield


async def cluster_node(app: web.Application) -> AsyncIterator[None]:
    """In a cluster (MPS_CLUSTER=on), the node: it takes the shards the broker makes it the
    owner of, and hands them over when closed, before the shards close. Alone, nothing."""
    parts = app[PARTS]
    settings = parts.settings
    if not settings.clustered:
        yield
        return

    async def take(index: int) -> int:
        now = iso(parts.extra.clock())
        [[row]] = await parts.context.commit(take_shard(index, settings.node_id, now))
        return int(row["epoch"])

    cluster = ClusterNode(
        settings.broker_url,
        settings.node_id,
        parts.shards,
        take,
        name=settings.cluster_name,
        queue_type=settings.shard_queue_type,
        timings=ClusterTimings.from_settings(settings),
        secret=settings.peer_secret,
    )
    parts.cluster = cluster
    try:
        await cluster.start()
        yield
    finally:
        await cluster.close()
