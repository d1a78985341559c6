"""The composition root: builds the application and opens its resources in order.

Nothing connects at import time. `build_app` returns an app with one cleanup context per
resource (the keys, the database, the writer, the broker, object storage, mail, credentials,
the shards of actors, the cluster node, the schedulers, webhooks, the services the handlers
use, the metrics listener), registered in the order they open; aiohttp closes them in reverse
on shutdown, and a start that fails half-way closes those already open. Each context keeps
what it opened on `_Parts`, where the contexts after it find it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

from aiohttp import web

from mps.actors.card import CardActor
from mps.actors.company import CompanyActor
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.invoice import InvoiceActor
from mps.actors.key_usage import KeyUsage
from mps.actors.payment import PaymentActor
from mps.actors.persistence import PersistenceActor
from mps.actors.recent import RecentPayments
from mps.actors.runtime import ActorRef, stop
from mps.actors.schedulers.approvals import Approvals
from mps.actors.schedulers.expiry import PaymentExpiry
from mps.actors.schedulers.housekeeping import Housekeeping
from mps.actors.schedulers.invoice_overdue import InvoiceOverdue
from mps.actors.schedulers.kyc_desk import KycDesk
from mps.actors.schedulers.money import MoneyWork
from mps.actors.schedulers.reconciliation import Reconciliation
from mps.actors.shards import CardKey, InvoiceKey, PaymentKey, Shard, ShardRouter
from mps.actors.webhooks import Webhooks
from mps.adapters.bank import Bank, SimulatorBank
from mps.adapters.broker import Broker, open_broker
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
from mps.http.forwarded import sign_peer_answer
from mps.http.keys import ROUTE_TABLE, SERVICES
from mps.http.metrics_listener import serving_metrics
from mps.http.routes import all_routes
from mps.limits import LocalAuthority, QuotaLedger, RateLimiter, SharedLimiter
from mps.metrics import Metrics
from mps.persistence.database import Database, open_database
from mps.persistence.shard_store import backfill_company_shards
from mps.persistence.shard_store import take as take_shard
from mps.representations.invoices import hosted_url
from mps.services import Services
from mps.storage import ObjectStore, open_store

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


@dataclass
class _Parts:
    """What the resource contexts have opened so far, for the contexts after them.

    Each attribute is set by the context named beside it; a context reads only what contexts
    before it in `build_app`'s list set. `cluster` and `webhooks` are read earlier, by the
    writer's callbacks, and stay None until their contexts set them."""

    settings: Settings
    extra: Overrides
    metrics: Metrics
    keyring: Keyring = field(init=False)  # _keys
    tokens: SessionTokens = field(init=False)  # _keys
    database: Database = field(init=False)  # _database
    persistence: ActorRef[PersistenceActor] = field(init=False)  # _writer
    context: ActorContext = field(init=False)  # _writer
    broker: Broker = field(init=False)  # _broker
    objects: ObjectStore = field(init=False)  # _object_storage
    mailer: Mailer = field(init=False)  # _mail
    credentials: Credentials = field(init=False)  # _credentials
    processors: dict[str, Processor | None] = field(init=False)  # _shards
    shards: ShardRouter = field(init=False)  # _shards
    cluster: ClusterNode | None = None  # _cluster_node
    deadlines: Deadlines = field(init=False)  # _deadlines
    schedulers: _Schedulers = field(init=False)  # _schedulers
    webhooks: Webhooks | None = None  # _webhooks

    def on_fenced(self, lost: frozenset[int]) -> None:
        """The writer found shards another node has taken since: this node drops them."""
        if self.cluster is not None:
            self.cluster.lost(lost)

    def on_events(self) -> None:
        """The writer committed events: the webhook relay looks for them now."""
        if self.webhooks is not None:
            self.webhooks.relay.wake()


@dataclass(frozen=True)
class _Schedulers:
    """The periodic work, for the services that read it."""

    money: MoneyWork
    reconciliation: Reconciliation
    invoice_overdue: InvoiceOverdue
    approvals: Approvals
    kyc: KycDesk
    key_usage: KeyUsage


_PARTS = web.AppKey("bootstrap.parts", _Parts)


class _Worker(Protocol):
    def start(self) -> None: ...

    async def close(self) -> None: ...


_W = TypeVar("_W", bound=_Worker)


def build_app(settings: Settings, overrides: Overrides | None = None) -> web.Application:
    """The application on `settings`; nothing is opened until it starts.

    Each resource is one cleanup context, opened in the order below and closed in reverse. When
    one fails to open, aiohttp stops there, and the runner's cleanup (mps.serve) closes the
    ones already open, so a failed start leaves no connection, actor or task behind."""
    routes = all_routes(development=settings.development)
    metrics = Metrics()
    app = create_app(
        routes,
        development=settings.development,
        metrics=metrics,
        max_in_flight=settings.max_in_flight,
    )
    app[ROUTE_TABLE] = routes
    # Proves to a node that passed a request here that the answer is this cluster's.
    app.on_response_prepare.append(sign_peer_answer)
    app[_PARTS] = _Parts(settings, overrides or Overrides(), metrics)
    for resource in (
        _keys,
        _database,
        _writer,
        _broker,
        _object_storage,
        _mail,
        _credentials,
        _shards,
        _cluster_node,
        _deadlines,
        _schedulers,
        _webhooks,
        _services,
        _metrics_listener,
    ):
        app.cleanup_ctx.append(resource)
    return app


async def _keys(app: web.Application) -> AsyncIterator[None]:
    """The keyring and the session tokens. First, so key material that cannot be used stops
    the start before anything connects; nothing to close."""
    parts = app[_PARTS]
    settings = parts.settings
    parts.keyring = Keyring(
        settings.session_secret,
        settings.encryption_key,
        session_secret_previous=settings.session_secret_previous,
        encryption_key_previous=settings.encryption_key_previous,
        id_key=settings.id_key,
    )
    parts.tokens = SessionTokens(*parts.keyring.session_keys)
    yield


async def _database(app: web.Application) -> AsyncIterator[None]:
    """The database, migrated on open (and wrapped by a test's `wrap_database`), with every
    company's shard recorded. Closed last."""
    parts = app[_PARTS]
    database = open_database(parts.settings.database_url)
    await database.open()
    try:
        if parts.extra.wrap_database is not None:
            database = parts.extra.wrap_database(database)
        parts.database = database
        await backfill_company_shards(database)
        yield
    finally:
        await database.close()


async def _writer(app: web.Application) -> AsyncIterator[None]:
    """The persistence actor, every write's way to the database. Stopped after everything that
    writes has closed, so what they recorded (key uses, passivating actors) is written."""
    parts = app[_PARTS]
    parts.persistence = PersistenceActor.start(
        parts.database,
        observe=parts.metrics.observe_commit,
        on_fenced=parts.on_fenced,
        on_events=parts.on_events,
    )
    try:
        parts.context = ActorContext(parts.database, parts.persistence, parts.extra.clock)
        yield
    finally:
        await stop(parts.persistence)


async def _broker(app: web.Application) -> AsyncIterator[None]:
    """The broker (in-process, or RabbitMQ): webhooks' queues and the nodes' broadcasts."""
    parts = app[_PARTS]
    broker = open_broker(parts.settings.broker_url)
    try:
        await broker.connect()
        parts.broker = broker
        yield
    finally:
        await broker.close()


async def _object_storage(app: web.Application) -> AsyncIterator[None]:
    """Where uploaded documents' bytes go (a folder, or S3)."""
    parts = app[_PARTS]
    objects = open_store(parts.settings.objects_url, env=os.environ)
    try:
        parts.objects = objects
        yield
    finally:
        await objects.close()


async def _mail(app: web.Application) -> AsyncIterator[None]:
    """A test's mailer; else the dev mailbox in development or without MPS_SMTP_URL, SMTP
    otherwise. A mailer connects per message, so there is nothing to close."""
    parts = app[_PARTS]
    settings = parts.settings
    parts.mailer = parts.extra.mailer or (
        DevMailbox()
        if settings.development or not settings.smtp_url
        else SmtpMailer(settings.smtp_url, settings.mail_from, ca_file=settings.smtp_ca_file)
    )
    yield


async def _credentials(app: web.Application) -> AsyncIterator[None]:
    """Sessions and API keys, told of revocations made on other nodes through the broker."""
    parts = app[_PARTS]
    parts.credentials = Credentials(parts.tokens, parts.keyring, parts.database, parts.extra.clock)
    await parts.credentials.attach(parts.broker)
    yield


async def _shards(app: web.Application) -> AsyncIterator[None]:
    """The shards of company, payment, invoice and card actors: all of them when alone; in a
    cluster, those the cluster node takes. Closing stops their actors (which may still write)."""
    parts = app[_PARTS]
    settings = parts.settings
    parts.processors = _processors(settings, parts.extra)
    shards = ShardRouter(
        settings.shard_count,
        _make_shard_factory(settings, parts.context, parts.keyring, parts.processors),
        clustered=settings.clustered,
    )
    parts.shards = shards
    shards.start()
    try:
        yield
    finally:
        await shards.close()


async def _cluster_node(app: web.Application) -> AsyncIterator[None]:
    """In a cluster (MPS_CLUSTER=on), the node: it takes the shards the broker makes it the
    owner of, and hands them over when closed, before the shards close. Alone, nothing."""
    parts = app[_PARTS]
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
        secret=settings.peer_secret,
    )
    parts.cluster = cluster
    try:
        await cluster.start()
        yield
    finally:
        await cluster.close()


async def _deadlines(app: web.Application) -> AsyncIterator[None]:
    """The watchdog of requests that run past their deadline."""
    parts = app[_PARTS]
    deadlines = Deadlines()
    parts.deadlines = deadlines
    deadlines.start()
    try:
        yield
    finally:
        await deadlines.close()


async def _schedulers(app: web.Application) -> AsyncIterator[None]:
    """The periodic work, each started in turn and closed in reverse. In a cluster each runs
    over the shards this node owns; housekeeping, which is cluster-wide, on shard 0's owner.
    Key uses are started last so they close first: the server takes no more requests by then,
    and what they recorded is written before the writer stops."""
    parts = app[_PARTS]
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
        approvals = started(Approvals(database, shards, extra.clock, settings.approval_interval))
        kyc = started(
            KycDesk(parts.context, shards, parts.objects, extra.clock, settings.kyc_interval)
        )
        started(
            Housekeeping(
                parts.context, settings.housekeeping_interval, when=lambda: shards.owns_shard(0)
            )
        )
        key_usage = started(KeyUsage(parts.context, settings.key_usage_interval))
        parts.schedulers = _Schedulers(money, reconciliation, overdue, approvals, kyc, key_usage)
        yield


async def _webhooks(app: web.Application) -> AsyncIterator[None]:
    """Webhook deliveries: the relay from the outbox, the dispatcher, and mail channels."""
    parts = app[_PARTS]
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


async def _services(app: web.Application) -> AsyncIterator[None]:
    """What the handlers use (app[SERVICES]), made of the parts above; and the start-up log."""
    parts = app[_PARTS]
    settings, schedulers, metrics = parts.settings, parts.schedulers, parts.metrics
    assert parts.webhooks is not None
    app[SERVICES] = Services(
        settings=settings,
        clock=parts.extra.clock,
        database=parts.database,
        persistence=parts.persistence,
        actors=parts.context,
        shards=parts.shards,
        broker=parts.broker,
        mailer=parts.mailer,
        keyring=parts.keyring,
        tokens=parts.tokens,
        limiter=RateLimiter(scale=settings.rate_limit_scale, on_refusal=metrics.refused),
        # One process is the authority of every user's window; in a cluster, the owner of the
        # shard a user's key hashes to (mps.limits.shared, mps.cluster.leases).
        shared_limiter=SharedLimiter(
            ClusterAuthority(parts.cluster)
            if parts.cluster is not None
            else LocalAuthority(QuotaLedger()),
            scale=settings.rate_limit_scale,
            on_refusal=metrics.refused,
        ),
        credentials=parts.credentials,
        deadlines=parts.deadlines,
        key_usage=schedulers.key_usage,
        webhooks=parts.webhooks,
        money=schedulers.money,
        reconciliation=schedulers.reconciliation,
        invoice_overdue=schedulers.invoice_overdue,
        approvals=schedulers.approvals,
        objects=parts.objects,
        kyc=schedulers.kyc,
        cluster=parts.cluster,
    )
    _log_start(settings)
    yield


async def _metrics_listener(app: web.Application) -> AsyncIterator[None]:
    """MPS_METRICS_PORT's listener: scrapes read the parts opened above, so it opens last."""
    async with serving_metrics(app[_PARTS].metrics, app[SERVICES]):
        yield


def _log_start(settings: Settings) -> None:
    if settings.rate_limit_scale != 1 and not settings.development:
        logger.warning(
            "rate limits are scaled by %g (MPS_RATE_LIMIT_SCALE)%s",
            settings.rate_limit_scale,
            "; 0 turns them off" if settings.rate_limit_scale == 0 else "",
        )
    if not settings.clustered and settings.broker_url.startswith("amqp"):
        # Two such processes on one database would both run every shard's work.
        logger.warning(
            "MPS_CLUSTER is off: this process owns every shard; start no other on this database"
        )
    # The scheme only: a database URL may carry a password.
    logger.info(
        "%s mode on %s, %s, listening on http://%s:%d (public URL %s)%s",
        settings.mode,
        settings.database_url.split(":")[0],
        f"node {settings.node_id} of cluster {settings.cluster_name}"
        if settings.clustered
        else "alone (every shard)",
        settings.host,
        settings.port,
        settings.public_url,
        f"; API explorer at {settings.public_url}/api/docs" if settings.development else "",
    )
