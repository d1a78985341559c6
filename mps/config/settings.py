"""The settings a node runs with (`Settings`), and the error that refuses a start (`ConfigError`).

`load_settings` (mps.config.load) makes them from the command line and the environment; tests
make them by hand, which is why the one rule that spans two fields (a cluster needs an AMQP
broker) is checked here too.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

__all__ = ["CLUSTER_NEEDS_AMQP", "ConfigError", "Network", "Settings", "is_amqp"]

Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConfigError(Exception):
    """The service cannot start with this configuration; the message says what to set."""


@dataclass(frozen=True)
class Settings:
    mode: str = "development"
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = Path("var")
    database_url: str = "sqlite:///var/mps.db"
    broker_url: str = "memory://"
    public_url: str = "http://127.0.0.1:8080"
    node_id: str = "node-1"
    # Whether this process is a node of a cluster (MPS_CLUSTER=on|off, docs/cluster.md): on,
    # it shares the shards with the other nodes through the broker, which must be AMQP; off,
    # it owns every shard itself, whatever the broker. load_settings always decides it; None
    # is only for Settings made by hand (tests), where it means on exactly with an AMQP broker.
    cluster: bool | None = None
    # Names the cluster's queues and exchange on the broker, so two clusters can share one.
    cluster_name: str = "mps"
    # The shard queues' type: classic, or quorum for a replicated RabbitMQ cluster
    # (docs/cluster.md).
    shard_queue_type: str = "classic"
    session_secret: bytes = field(default=b"", repr=False)
    encryption_key: bytes = field(default=b"", repr=False)
    # Key rotation (SECURITY.md): the secrets being replaced, still accepted, never used to write.
    session_secret_previous: bytes | None = field(default=None, repr=False)
    encryption_key_previous: bytes | None = field(default=None, repr=False)
    # Keys customer ids, which name stored rows, so it is never rotated; empty: the session secret.
    id_key: bytes = field(default=b"", repr=False)
    webhook_retry_scale: float = 1.0
    # How many POSTs this node has in flight to one webhook endpoint at most (its lane's slots,
    # mps.actors.webhooks.dispatcher). In a cluster, each node has its own.
    webhook_concurrency: int = 16
    # Requests this node serves at once at most; the next is answered 503 overloaded with
    # Retry-After (mps.http.admission). Per node; 0 admits every request.
    max_in_flight: int = 128
    # Multiplies every request rate limit (decisions 15); 0 turns limiting off (load tests).
    rate_limit_scale: float = 1.0
    smtp_url: str | None = None
    mail_from: str = "Merchant Payments <no-reply@localhost>"
    # A PEM file of certificate authorities the mailer trusts besides the system's (a private
    # CA for an internal relay); the server's certificate and host name are always verified.
    smtp_ca_file: str | None = None
    shard_count: int = 64
    # Virtual actors: passivate after this many idle seconds, and keep at most this many active.
    actor_idle_after: float = 300.0
    company_actor_capacity: int = 10_000
    payment_actor_capacity: int = 100_000
    # Committed snapshots of recently written payments kept for reads (mps.actors.recent), over
    # all shards: about 1.5 KiB each.
    recent_payments: int = 20_000
    # How often overdue PENDING payments are looked for; expiry lands within this of expiresAt.
    expiry_interval: float = 1.0
    # Money (mps.actors.schedulers.money): how often due settlements, refunds and payout steps
    # are looked for; how long a refund waits before the processor is asked (so the sandbox can
    # force an outcome first); how long the simulated bank takes to pick a payout up and to pay it.
    money_interval: float = 0.5
    refund_delay: float = 1.0
    payout_transit_after: float = 2.0
    payout_arrival_after: float = 2.0
    # How often SENT invoices past their due date are looked for (they become OVERDUE).
    invoice_overdue_interval: float = 60.0
    # How often approval requests past 72 hours are expired, and approved ones whose action a
    # crash kept from running are run.
    approval_interval: float = 5.0
    # How often the operator's identity-verification reviews are looked for
    # (mps.actors.schedulers.kyc_desk).
    kyc_interval: float = 1.0
    # How often the ledger is reconciled against payments, refunds and payouts.
    reconciliation_interval: float = 60.0
    # How often housekeeping deletes rows past their retention (mps.actors.schedulers.housekeeping).
    housekeeping_interval: float = 600.0
    # How often the API-key uses buffered in memory (request log, lastUsedAt) are written.
    key_usage_interval: float = 1.0
    # A second listener serving only GET /metrics (mps.http.metrics_listener); None: none. The
    # public listener serves /metrics only in development, and only to loopback.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # Where uploaded documents' bytes go (mps.adapters.storage.open_store): file:///absolute/path or
    # s3://bucket/prefix. load_settings makes it file://<data_dir>/objects unless told; empty
    # (Settings made by hand) is refused by open_store rather than guessed.
    object_storage_url: str = ""
    # An identity document upload larger than this is answered 413 (decisions).
    kyc_max_upload_bytes: int = 10 * 1024 * 1024
    # A cluster node's peer listener, where other nodes pass it requests (mps.cluster.peers):
    # the address it listens on (None: `host`), its port (0: one the system picks; heartbeats
    # tell the others), and the host other nodes reach it at (None: the listening address, or
    # this machine's name when that is every address).
    peer_host: str | None = None
    peer_port: int = 0
    peer_advertise: str | None = None
    # Signs what nodes pass each other; every node of a cluster has the same. Empty: derived
    # from the session secret (which the nodes share too).
    cluster_secret: bytes = field(default=b"", repr=False)
    # The proxies (balancers) whose word on the client's address is believed, and the header
    # they write it in (mps.http.client_address). Empty: every header naming a client is
    # ignored, and the client is the address the connection comes from.
    trusted_proxies: tuple[Network, ...] = ()
    proxy_header: str = "x-forwarded-for"
    # Seconds a node keeps serving after SIGTERM while /health/ready answers 503, so that
    # balancers take it out before its listener closes (mps.serve). load_settings makes it
    # 5 in production and 0 in development.
    shutdown_grace: float = 0.0
    # A cluster node's timings (mps.cluster.timings): how often it sends its heartbeat, how long
    # a silent peer stays a member before it is taken for gone, and how long a request passed
    # to its owner waits for the answer before it is answered 503 with Retry-After.
    heartbeat_interval: float = 1.0
    node_timeout: float = 3.5
    forward_within: float = 10.0
    # Cluster members this host runs, sharing its port (`run.py --workers N`, mps.workers): 1
    # serves in this process; more makes it the workers' supervisor. Needs Postgres and AMQP.
    workers: int = 1
    # A worker's own port, besides the port the workers share (MPS_WORKER_PORT, mps.workers):
    # the address a shard-aware balancer reaches this worker at. The supervisor gives worker i
    # MPS_WORKER_PORT + i - 1; only a worker listens on it (mps.serve), a single node ignores it.
    # None: no own port.
    worker_port: int | None = None

    def __post_init__(self) -> None:
        if self.cluster and not is_amqp(self.broker_url):
            raise ConfigError(CLUSTER_NEEDS_AMQP)

    @property
    def clustered(self) -> bool:
        """Whether this process is a cluster node (`cluster`, or for Settings made by hand
        without it, whether the broker is AMQP)."""
        return is_amqp(self.broker_url) if self.cluster is None else self.cluster

    @property
    def peer_secret(self) -> bytes:
        """The cluster's secret: as configured, or derived from the session secret (its own
        key, so neither can be learned from the other)."""
        if self.cluster_secret:
            return self.cluster_secret
        return hmac.new(self.session_secret, b"mps cluster peers", hashlib.sha256).digest()

    @property
    def objects_url(self) -> str:
        """The object store's URL: as configured, or a folder of the data directory."""
        return self.object_storage_url or (self.data_dir / "objects").absolute().as_uri()

    @property
    def development(self) -> bool:
        return self.mode == "development"


CLUSTER_NEEDS_AMQP = (
    "MPS_CLUSTER=on needs an AMQP broker, which the nodes share the shards through: "
    "set MPS_BROKER_URL=amqp://… (or amqps://…)"
)


def is_amqp(broker_url: str) -> bool:
    return broker_url.startswith(("amqp://", "amqps://"))
