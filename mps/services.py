"""The running service's parts, built by `mps.bootstrap` and handed to handlers and use cases."""

from __future__ import annotations

from dataclasses import dataclass

from pykka import ActorRef

from mps.actors.context import ActorContext
from mps.actors.key_usage import KeyUsage
from mps.actors.persistence import PersistenceActor
from mps.actors.schedulers.approvals import Approvals
from mps.actors.schedulers.invoice_overdue import InvoiceOverdue
from mps.actors.schedulers.kyc_desk import KycDesk
from mps.actors.schedulers.money import MoneyWork
from mps.actors.schedulers.reconciliation import Reconciliation
from mps.actors.shards import ShardRouter
from mps.actors.webhooks import Webhooks
from mps.adapters.broker import Broker
from mps.adapters.mail import DevMailbox, Mailer
from mps.adapters.storage import ObjectStore
from mps.auth.credentials import Credentials
from mps.auth.keyring import Keyring
from mps.auth.tokens import SessionTokens
from mps.cluster.node import ClusterNode
from mps.config import Settings
from mps.domain.clock import Clock
from mps.http.deadlines import Deadlines
from mps.limits import RateLimiter, SharedLimiter
from mps.persistence.database import Database

__all__ = ["Services"]


@dataclass
class Services:
    settings: Settings
    clock: Clock
    database: Database
    persistence: ActorRef[PersistenceActor]
    actors: ActorContext
    shards: ShardRouter
    broker: Broker
    mailer: Mailer
    keyring: Keyring
    tokens: SessionTokens
    limiter: RateLimiter
    # The per-user standard limit, held across the cluster; every other limit is `limiter`'s.
    shared_limiter: SharedLimiter
    credentials: Credentials
    deadlines: Deadlines
    key_usage: KeyUsage
    webhooks: Webhooks
    money: MoneyWork
    reconciliation: Reconciliation
    invoice_overdue: InvoiceOverdue
    approvals: Approvals
    objects: ObjectStore
    kyc: KycDesk
    # This node's part in a cluster (RabbitMQ broker); None when one process owns every shard.
    cluster: ClusterNode | None = None

    @property
    def dev_mailbox(self) -> DevMailbox | None:
        return self.mailer if isinstance(self.mailer, DevMailbox) else None
