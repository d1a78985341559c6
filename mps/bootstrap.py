"""The composition root: builds the application and opens its resources in order.

Nothing connects at import time. `build_app` returns an app whose cleanup context opens the
database (applying migrations), starts the persistence actor and the shards of company actors,
connects the broker and the mailer, and closes all of it in reverse on shutdown.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace

from aiohttp import web

from mps.actors.approvals import Approvals
from mps.actors.card import CardActor
from mps.actors.company import CompanyActor
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.expiry import PaymentExpiry
from mps.actors.housekeeping import Housekeeping
from mps.actors.invoice import InvoiceActor
from mps.actors.invoice_overdue import InvoiceOverdue
from mps.actors.key_usage import KeyUsage
from mps.actors.kyc_desk import KycDesk
from mps.actors.money import MoneyWork
from mps.actors.payment import PaymentActor
from mps.actors.persistence import PersistenceActor
from mps.actors.recent import RecentPayments
from mps.actors.reconciliation import Reconciliation
from mps.actors.runtime import stop
from mps.actors.shards import CardKey, InvoiceKey, PaymentKey, Shard, ShardRouter
from mps.actors.webhooks import Webhooks
from mps.adapters.bank import Bank, SimulatorBank
from mps.adapters.broker import open_broker
from mps.adapters.mail import DevMailbox, Mailer, SmtpMailer
from mps.adapters.processor import Processor, SimulatorProcessor
from mps.auth.credentials import Credentials
from mps.auth.keyring import Keyring
from mps.auth.tokens import SessionTokens
from mps.cluster.leases import ClusterAuthority
from mps.cluster.node import ClusterNode
from mps.config import Settings
from mps.domain.clock import Clock, iso, utcnow
from mps.http.app import create_app
from mps.http.deadlines import Deadlines
from mps.http.keys import ROUTE_TABLE, SERVICES
from mps.http.metrics_listener import serving_metrics
from mps.http.routes import all_routes
from mps.limits import RateLimiter
from mps.metrics import Metrics
from mps.persistence.database import Database, open_database
from mps.persistence.shard_store import backfill_company_shards
from mps.persistence.shard_store import take as take_shard
from mps.quota import LocalAuthority, QuotaLedger, SharedLimiter
from mps.representations.invoices import hosted_url
from mps.services import Services
from mps.storage import open_store

__all__ = ["Overrides", "build_app"]

logger = logging.getLogger(__name__)


@dataclass
class Overrides:
    """Parts a test may supply instead of the configured ones (fakes, not patches)."""

    clock: Clock = field(default=utcnow)
    mailer: Mailer | None = None
    live_processor: Processor | None = None
    # Test mode's processor instead of the simulator (a test's gated or counting processor).
    test_processor: Processor | None = None
    # Wraps the opened database: a test's way to add latency or faults to every round trip.
    wrap_database: Callable[[Database], Database] | None = None


def _processors(settings: Settings, extra: Overrides) -> dict[str, Processor | None]:
    """Test mode always simulates; live mode simulates only in the development server mode,
    and in production needs a real adapter (none ships yet, so live checkout answers 503)."""
    simulator = SimulatorProcessor()
    live = extra.live_processor or (simulator if settings.development else None)
    return {"test": extra.test_processor or simulator, "live": live}


def _banks(settings: Settings) -> dict[str, Bank | None]:
    """Like the processors: test payouts always go to the simulated bank, live ones only in the
    development server mode (production has no real bank adapter yet: they wait)."""
    simulator = SimulatorBank()
    return {"test": simulator, "live": simulator if settings.development else None}


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


def build_app(settings: Settings, overrides: Overrides | None = None) -> web.Application:
    routes = all_routes(development=settings.development)
    metrics = Metrics()
    app = create_app(routes, development=settings.development, metrics=metrics)
    app[ROUTE_TABLE] = routes
    extra = overrides or Overrides()

    async def services_ctx(app: web.Application) -> AsyncIterator[None]:
        database = open_database(settings.database_url)
        await database.open()
        if extra.wrap_database is not None:
            database = extra.wrap_database(database)
        clustered = settings.broker_url.startswith(("amqp://", "amqps://"))
        cluster: ClusterNode | None = None

        def on_fenced(lost: frozenset[int]) -> None:
            if cluster is not None:
                cluster.lost(lost)

        webhooks: Webhooks | None = None

        def on_events() -> None:
            if webhooks is not None:
                webhooks.relay.wake()

        persistence = PersistenceActor.start(
            database, observe=metrics.observe_commit, on_fenced=on_fenced, on_events=on_events
        )
        keyring = Keyring(
            settings.session_secret,
            settings.encryption_key,
            session_secret_previous=settings.session_secret_previous,
            encryption_key_previous=settings.encryption_key_previous,
            id_key=settings.id_key,
        )
        context = ActorContext(database, persistence, extra.clock)
        processors = _processors(settings, extra)
        shards = ShardRouter(
            settings.shard_count,
            _make_shard_factory(settings, context, keyring, processors),
            clustered=clustered,
        )
        if clustered:

            async def take(index: int) -> int:
                now = iso(extra.clock())
                [[row]] = await context.commit(take_shard(index, settings.node_id, now))
                return int(row["epoch"])

            cluster = ClusterNode(
                settings.broker_url,
                settings.node_id,
                shards,
                take,
                name=settings.cluster_name,
                queue_type=settings.shard_queue_type,
            )
        broker = open_broker(settings.broker_url)
        expiry: PaymentExpiry | None = None
        money: MoneyWork | None = None
        reconciliation: Reconciliation | None = None
        overdue: InvoiceOverdue | None = None
        approvals: Approvals | None = None
        housekeeping: Housekeeping | None = None
        kyc: KycDesk | None = None
        objects = open_store(settings.objects_url, env=os.environ)
        mailer: Mailer = extra.mailer or (
            DevMailbox()
            if settings.development or not settings.smtp_url
            else SmtpMailer(settings.smtp_url, settings.mail_from, ca_file=settings.smtp_ca_file)
        )
        tokens = SessionTokens(*keyring.session_keys)
        credentials = Credentials(tokens, keyring, database, extra.clock)
        deadlines = Deadlines()
        key_usage = KeyUsage(context, settings.key_usage_interval)
        try:
            await backfill_company_shards(database)
            await broker.connect()
            await credentials.attach(broker)
            shards.start()
            if cluster is not None:
                await cluster.start()
            deadlines.start()
            expiry = PaymentExpiry(database, shards, extra.clock, settings.expiry_interval)
            expiry.start()
            money = MoneyWork(
                database,
                shards,
                extra.clock,
                processors,
                _banks(settings),
                keyring,
                settings.money_interval,
            )
            money.start()
            reconciliation = Reconciliation(database, shards, settings.reconciliation_interval)
            reconciliation.start()
            overdue = InvoiceOverdue(
                database, shards, extra.clock, settings.invoice_overdue_interval
            )
            overdue.start()
            approvals = Approvals(database, shards, extra.clock, settings.approval_interval)
            approvals.start()
            kyc = KycDesk(context, shards, objects, extra.clock, settings.kyc_interval)
            kyc.start()
            # Cluster-wide work, done once: by the owner of shard 0.
            housekeeping = Housekeeping(
                context, settings.housekeeping_interval, when=lambda: shards.owns_shard(0)
            )
            housekeeping.start()
            key_usage.start()
            webhooks = Webhooks(
                context,
                broker,
                keyring,
                shards,
                prefix=settings.cluster_name,
                retry_scale=settings.webhook_retry_scale,
                concurrency=settings.webhook_concurrency,
                allow_private=settings.development,
                mailer=mailer,
            )
            await webhooks.start()
            app[SERVICES] = Services(
                settings=settings,
                clock=extra.clock,
                database=database,
                persistence=persistence,
                actors=context,
                shards=shards,
                broker=broker,
                mailer=mailer,
                keyring=keyring,
                tokens=tokens,
                limiter=RateLimiter(scale=settings.rate_limit_scale, on_refusal=metrics.refused),
                # One process is the authority of every user's window; in a cluster, the owner
                # of the shard a user's key hashes to (mps.quota, mps.cluster.leases).
                shared_limiter=SharedLimiter(
                    ClusterAuthority(cluster)
                    if cluster is not None
                    else LocalAuthority(QuotaLedger()),
                    scale=settings.rate_limit_scale,
                    on_refusal=metrics.refused,
                ),
                credentials=credentials,
                deadlines=deadlines,
                key_usage=key_usage,
                webhooks=webhooks,
                money=money,
                reconciliation=reconciliation,
                invoice_overdue=overdue,
                approvals=approvals,
                objects=objects,
                kyc=kyc,
                cluster=cluster,
            )
            if settings.rate_limit_scale != 1 and not settings.development:
                logger.warning(
                    "rate limits are scaled by %g (MPS_RATE_LIMIT_SCALE)%s",
                    settings.rate_limit_scale,
                    "; 0 turns them off" if settings.rate_limit_scale == 0 else "",
                )
            # The scheme only: a database URL may carry a password.
            logger.info(
                "%s mode on %s, listening on http://%s:%d (public URL %s)%s",
                settings.mode,
                settings.database_url.split(":")[0],
                settings.host,
                settings.port,
                settings.public_url,
                f"; API explorer at {settings.public_url}/api/docs" if settings.development else "",
            )
            # Scrapes read the parts opened above; MPS_METRICS_PORT's listener lives this long.
            async with serving_metrics(metrics, app[SERVICES]):
                yield
        finally:
            await deadlines.close()
            # The server takes no more requests by now; what they recorded is written before
            # the writer stops.
            await key_usage.close()
            if housekeeping is not None:
                await housekeeping.close()
            if webhooks is not None:
                await webhooks.close()
            if expiry is not None:
                await expiry.close()
            if money is not None:
                await money.close()
            if reconciliation is not None:
                await reconciliation.close()
            if overdue is not None:
                await overdue.close()
            if approvals is not None:
                await approvals.close()
            if kyc is not None:
                await kyc.close()
            if cluster is not None:
                await cluster.close()
            await shards.close()
            await stop(persistence)
            await broker.close()
            await objects.close()
            await database.close()

    app.cleanup_ctx.append(services_ctx)
    return app
