"""What the resource contexts share: the parts opened so far, under one app key.

`Overrides` is what a test may supply instead of the configured parts (mps.bootstrap names it
in its public API). `Parts` is filled in by the contexts in mps.composition's other modules, in
the order mps.bootstrap lists them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from aiohttp import web

from mps.actors.context import ActorContext
from mps.actors.key_usage import KeyUsage
from mps.actors.persistence import PersistenceActor
from mps.actors.runtime import ActorRef
from mps.actors.schedulers.approvals import Approvals
from mps.actors.schedulers.invoice_overdue import InvoiceOverdue
from mps.actors.schedulers.kyc_desk import KycDesk
from mps.actors.schedulers.money import MoneyWork
from mps.actors.schedulers.reconciliation import Reconciliation
from mps.actors.shards import ShardRouter
from mps.actors.webhooks import Webhooks
from mps.adapters.broker import Broker
from mps.adapters.mail import Mailer
from mps.adapters.processor import Processor
from mps.adapters.storage import ObjectStore
from mps.auth.credentials import Credentials
from mps.auth.keyring import Keyring
from mps.auth.tokens import SessionTokens
from mps.cluster.node import ClusterNode
from mps.config import Settings
from mps.domain.clock import Clock, utcnow
from mps.http.deadlines import Deadlines
from mps.metrics import Metrics
from mps.persistence.database import Database


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


@dataclass
class Parts:
    """What the resource contexts have opened so far, for the contexts after them.

    Each attribute is set by the context named beside it; a context reads only what contexts
    before it in `build_app`'s list set. `cluster` and `webhooks` are read earlier, by the
    writer's callbacks, and stay None until their contexts set them."""

    settings: Settings
    extra: Overrides
    metrics: Metrics
    keyring: Keyring = field(init=False)  # keys
    tokens: SessionTokens = field(init=False)  # keys
    database: Database = field(init=False)  # database
    persistence: ActorRef[PersistenceActor] = field(init=False)  # writer
    context: ActorContext = field(init=False)  # writer
    broker: Broker = field(init=False)  # broker
    objects: ObjectStore = field(init=False)  # object_storage
    mailer: Mailer = field(init=False)  # mail
    credentials: Credentials = field(init=False)  # credentials
    processors: dict[str, Processor | None] = field(init=False)  # shards
    shards: ShardRouter = field(init=False)  # shards
    cluster: ClusterNode | None = None  # cluster_node
    deadlines: Deadlines = field(init=False)  # deadlines
    schedulers: Schedulers = field(init=False)  # schedulers
    webhooks: Webhooks | None = None  # webhooks

    def on_fenced(self, lost: frozenset[int]) -> None:
        """The writer found shards another node has taken since: this node drops them."""
        if self.cluster is not None:
            self.cluster.lost(lost)

    def on_events(self) -> None:
        """The writer committed events: the webhook relay looks for them now."""
        if self.webhooks is not None:
            self.webhooks.relay.wake()


@dataclass(frozen=True)
class Schedulers:
    """The periodic work, for the services that read it."""

    money: MoneyWork
    reconciliation: Reconciliation
    invoice_overdue: InvoiceOverdue
    approvals: Approvals
    kyc: KycDesk
    key_usage: KeyUsage


PARTS = web.AppKey("bootstrap.parts", Parts)


class Worker(Protocol):
    """Work that runs beside requests once started, until closed."""

    def start(self) -> None: ...

    async def close(self) -> None: ...


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[None]:
    """Start `worker` for the block, and close it however the block ends."""
    worker.start()
    try:
        yield
    finally:
        await worker.close()
