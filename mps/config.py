"""Settings from command-line options and environment variables (decisions 18).

Development (the default) runs on embedded SQLite with an in-process broker and generates its
secrets into the data directory. Production refuses to start unless Postgres, AMQP and both
secrets are given explicitly.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path
from typing import TypeAlias
from urllib.parse import urlsplit

import orjson

from mps.adapters.mail import header_problem

__all__ = ["ConfigError", "Settings", "load_settings"]

# More POSTs at once than this to one receiver is a flood, not a delivery.
MAX_WEBHOOK_CONCURRENCY = 256
# More requests in flight on one node than this is no bound at all.
MAX_IN_FLIGHT = 1_000_000
# Production keeps serving this long after SIGTERM, so balancers see /health/ready fail first.
PRODUCTION_SHUTDOWN_GRACE = 5.0
# A drain longer than this is a mistake (an orchestrator kills the process long before).
MAX_SHUTDOWN_GRACE = 3600.0
# The headers a trusted proxy may name the client in (mps.http.client_address).
PROXY_HEADERS = ("x-forwarded-for", "forwarded")

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
    # Whether this process is a node of a cluster (MPS_CLUSTER=on|off, README "Cluster"): on,
    # it shares the shards with the other nodes through the broker, which must be AMQP; off,
    # it owns every shard itself, whatever the broker. load_settings always decides it; None
    # is only for Settings made by hand (tests), where it means on exactly with an AMQP broker.
    cluster: bool | None = None
    # Names the cluster's queues and exchange on the broker, so two clusters can share one.
    cluster_name: str = "mps"
    # The shard queues' type: classic, or quorum for a replicated RabbitMQ cluster (README).
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

    def __post_init__(self) -> None:
        if self.cluster and not _is_amqp(self.broker_url):
            raise ConfigError(_CLUSTER_NEEDS_AMQP)

    @property
    def clustered(self) -> bool:
        """Whether this process is a cluster node (`cluster`, or for Settings made by hand
        without it, whether the broker is AMQP)."""
        return _is_amqp(self.broker_url) if self.cluster is None else self.cluster

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


# `run.py --help` after the options: the subcommands, and every setting only the environment
# gives. tests/test_run.py checks that each MPS_* name this module reads appears here.
_HELP_EPILOG = """\
subcommands:
  run.py reseal [--check]      after rotating MPS_ENCRYPTION_KEY: re-seal every stored secret
                               under the current key; --check only counts (SECURITY.md)
  run.py kyc pending           identity-verification reviews waiting for the operator
  run.py kyc review co_... --approve [--operator NAME]
  run.py kyc review co_... --reject --reason TEXT

environment only (docs/operations.md explains each):
  secrets (production needs the first two; at least 32 characters each)
    MPS_SESSION_SECRET           signs sessions and tokens
    MPS_ENCRYPTION_KEY           seals secrets stored in the database
    MPS_SESSION_SECRET_PREVIOUS  during a rotation, the secret being replaced (accepted only)
    MPS_ENCRYPTION_KEY_PREVIOUS  during a rotation, the key being replaced (opens, never seals)
    MPS_ID_KEY                   keys customer ids; never rotated (default: the session secret)
  mail
    MPS_SMTP_URL                 smtp://user:pass@host:587 or smtps://...:465 (production needs it)
    MPS_MAIL_FROM                the From header: one address, e.g. 'Payments <no-reply@x.com>'
    MPS_SMTP_CA_FILE             a PEM file of extra CAs the mailer trusts
  cluster
    MPS_CLUSTER_SECRET           signs requests nodes pass each other; the same on every node
                                 (default: derived from the session secret)
    MPS_SHARD_QUEUE_TYPE         classic (default) or quorum
    MPS_PEER_HOST                the peer listener's address (default: the host)
    MPS_PEER_PORT                the peer listener's port (default 0: any free port)
    MPS_PEER_ADVERTISE           the host other nodes reach the peer listener at
  balancers and shutdown
    MPS_TRUSTED_PROXIES          proxies whose client-address header is believed: addresses or
                                 networks, comma-separated (default none)
    MPS_PROXY_HEADER             X-Forwarded-For (default) or Forwarded
    MPS_SHUTDOWN_GRACE           seconds of serving after SIGTERM while not ready
                                 (production 5, development 0)
    MPS_MAX_IN_FLIGHT            requests served at once per node; more are answered 503 (128;
                                 0: no bound)
  webhooks
    MPS_WEBHOOK_RETRY_SCALE      multiplies every retry delay (1)
    MPS_WEBHOOK_CONCURRENCY      POSTs in flight to one endpoint per node (16, at most 256)
  metrics and logs
    MPS_METRICS_HOST             the --metrics-port listener's address (127.0.0.1)
    MPS_LOG_FORMAT               text (default) or json
    MPS_ACCESS_LOG               on (default), off, or sample:0.01
    MPS_EVENT_LOOP               asyncio keeps asyncio's loop (default: uvloop where installed)
  object storage on S3 (with --object-storage-url s3://bucket/prefix)
    MPS_S3_ENDPOINT_URL          an S3-compatible server (default: AWS for the region)
    MPS_S3_REGION                us-east-1 by default
    MPS_S3_ACCESS_KEY_ID, MPS_S3_SECRET_ACCESS_KEY
                                 credentials (default: the standard AWS chain)

every option above is also a variable: MPS_HOST, MPS_PORT, MPS_DATA_DIR, MPS_DATABASE_URL,
MPS_BROKER_URL, MPS_MODE, MPS_PUBLIC_URL, MPS_CLUSTER, MPS_NODE_ID, MPS_CLUSTER_NAME,
MPS_RATE_LIMIT_SCALE, MPS_OBJECT_STORAGE_URL, MPS_METRICS_PORT; an option wins over its variable.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.py",
        description="Merchant Payments Service",
        epilog=_HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", help="bind address (MPS_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (MPS_PORT, default 8080)")
    parser.add_argument("--data-dir", help="data directory (MPS_DATA_DIR, default ./var)")
    parser.add_argument("--database-url", help="sqlite:///… or postgresql://… (MPS_DATABASE_URL)")
    parser.add_argument("--broker-url", help="memory:// or amqp://… (MPS_BROKER_URL)")
    parser.add_argument("--mode", choices=["development", "production"], help="(MPS_MODE)")
    parser.add_argument("--public-url", help="base of payUrl and email links (MPS_PUBLIC_URL)")
    parser.add_argument(
        "--cluster",
        choices=["on", "off"],
        help="on: a node of a cluster, on an amqp:// broker; off: alone (MPS_CLUSTER, default off)",
    )
    parser.add_argument("--node-id", help="this node's name in a cluster (MPS_NODE_ID)")
    parser.add_argument(
        "--cluster-name", help="names the cluster's queues on the broker (MPS_CLUSTER_NAME)"
    )
    parser.add_argument(
        "--rate-limit-scale",
        type=float,
        help="multiply every rate limit; 0 turns them off (MPS_RATE_LIMIT_SCALE, default 1)",
    )
    parser.add_argument(
        "--object-storage-url",
        help="file:///… or s3://bucket/prefix (MPS_OBJECT_STORAGE_URL, default DATA_DIR/objects)",
    )
    parser.add_argument(
        "--metrics-port",
        help="serve GET /metrics on this port too (MPS_METRICS_PORT; host: MPS_METRICS_HOST)",
    )
    return parser


_CLUSTER_NEEDS_AMQP = (
    "MPS_CLUSTER=on needs an AMQP broker, which the nodes share the shards through: "
    "set MPS_BROKER_URL=amqp://… (or amqps://…)"
)


def _is_amqp(broker_url: str) -> bool:
    return broker_url.startswith(("amqp://", "amqps://"))


def _cluster(value: str | None, broker_url: str) -> bool:
    """MPS_CLUSTER: off (the default) runs this process alone, owning every shard, even on an
    AMQP broker (which then carries its webhooks and revocations only); on makes it a node of
    the cluster named MPS_CLUSTER_NAME, and is refused without an AMQP broker. Said, not
    guessed from the broker's URL: the URL says where the broker is, and whether a process
    shares its shards is a decision of its own (two processes that each run alone on one
    database would both run every shard's work, so the start-up log says which it is)."""
    if not value or value == "off":
        return False
    if value != "on":
        msg = "MPS_CLUSTER must be on or off"
        raise ConfigError(msg)
    if not _is_amqp(broker_url):
        raise ConfigError(_CLUSTER_NEEDS_AMQP)
    return True


def _cluster_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        msg = "MPS_CLUSTER_NAME must be 1 to 64 letters, digits, '.', '_' or '-'"
        raise ConfigError(msg)
    return name


def _queue_type(name: str) -> str:
    if name not in ("classic", "quorum"):
        msg = "MPS_SHARD_QUEUE_TYPE must be classic or quorum"
        raise ConfigError(msg)
    return name


def _secret_from_env(env: Mapping[str, str], name: str) -> bytes | None:
    value = env.get(name)
    if not value:
        return None
    if len(value) < 32:
        msg = f"{name} must be at least 32 characters"
        raise ConfigError(msg)
    return value.encode()


def _private_directory(directory: Path) -> None:
    """Create `directory` for its owner only (0700), or refuse one that group or others can
    write: whoever can write there can replace the database or the secrets, or plant files
    beside them. One that group or others can only read is accepted; what is inside is 0600."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat().st_mode
    except OSError as exc:
        msg = f"cannot use the data directory {directory}: {exc.strerror or exc}"
        raise ConfigError(msg) from exc
    if mode & 0o022:
        msg = (
            f"the data directory {directory} can be written by group or others "
            f"(mode {mode & 0o777:o}); make it the owner's only: chmod 700 {directory}"
        )
        raise ConfigError(msg)


def _sqlite_directory(database_url: str) -> Path | None:
    """The directory of a `sqlite:///path` database file (None for anything else)."""
    if not database_url.startswith("sqlite://"):
        return None
    path = database_url.removeprefix("sqlite://").removeprefix("/")
    return Path(path).parent if path and path != ":memory:" else None


def _development_secrets(data_dir: Path) -> dict[str, bytes]:
    """Secrets kept in the data dir, created on first start, so sessions survive restarts.

    The file is the owner's only (0600); one left readable by others is narrowed in place."""
    path = data_dir / "secrets.json"
    if path.exists():
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        stored = orjson.loads(path.read_bytes())
    else:
        stored = {
            "sessionSecret": secrets.token_urlsafe(48),
            "encryptionKey": base64.b64encode(secrets.token_bytes(32)).decode(),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(stored))
    return {
        "session": stored["sessionSecret"].encode(),
        "encryption": stored["encryptionKey"].encode(),
    }


def _smtp_url(value: str | None) -> str | None:
    if not value:
        return None
    if urlsplit(value).scheme not in ("smtp", "smtps"):
        msg = "MPS_SMTP_URL must be smtp://… (STARTTLS) or smtps://… (TLS)"
        raise ConfigError(msg)
    return value


def _smtp_ca_file(value: str | None) -> str | None:
    """A readable PEM file of certificate authorities, or None. Loaded once here so a wrong
    path or a file that holds no certificate stops the start rather than the first mail."""
    if not value:
        return None
    try:
        ssl.create_default_context().load_verify_locations(cafile=value)
    except (OSError, ssl.SSLError) as exc:
        msg = f"MPS_SMTP_CA_FILE must be a readable PEM file of CA certificates ({exc})"
        raise ConfigError(msg) from exc
    return value


def _mail_from(value: str | None) -> str:
    """The From header: one address, with an optional display name, and no line breaks (a
    header of its own could be added through them)."""
    if not value:
        return Settings.mail_from
    _name, address = parseaddr(value)
    if header_problem(value) is not None or "@" not in address:
        msg = "MPS_MAIL_FROM must be one address, e.g. 'Payments <no-reply@example.com>'"
        raise ConfigError(msg)
    return value


def _scale(value: float | str | None, name: str) -> float:
    if value is None or value == "":
        return 1.0
    try:
        scale = float(value)
    except ValueError:
        scale = -1.0
    if not scale >= 0 or scale == float("inf"):
        msg = f"{name} must be a number, 0 or more"
        raise ConfigError(msg)
    return scale


def _webhook_concurrency(value: str | None) -> int:
    if not value:
        return Settings.webhook_concurrency
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_WEBHOOK_CONCURRENCY:
        msg = f"MPS_WEBHOOK_CONCURRENCY must be a whole number from 1 to {MAX_WEBHOOK_CONCURRENCY}"
        raise ConfigError(msg)
    return int(value)


def _max_in_flight(value: str | None) -> int:
    if not value:
        return Settings.max_in_flight
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_IN_FLIGHT:
        msg = f"MPS_MAX_IN_FLIGHT must be a whole number from 0 (no bound) to {MAX_IN_FLIGHT}"
        raise ConfigError(msg)
    return int(value)


def _metrics_port(value: str | None, service_port: int) -> int | None:
    if not value:
        return None
    try:
        port = int(value)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        msg = "MPS_METRICS_PORT must be a port number (1 to 65535)"
        raise ConfigError(msg)
    if port == service_port:
        msg = "MPS_METRICS_PORT must differ from the service's port (MPS_PORT)"
        raise ConfigError(msg)
    return port


def _peer_port(value: str | None, service_port: int) -> int:
    if not value:
        return 0
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        msg = "MPS_PEER_PORT must be a port number (0 to 65535; 0: any free port)"
        raise ConfigError(msg)
    if port == service_port:
        msg = "MPS_PEER_PORT must differ from the service's port (MPS_PORT)"
        raise ConfigError(msg)
    return port


def _trusted_proxies(value: str | None) -> tuple[Network, ...]:
    """MPS_TRUSTED_PROXIES: addresses or networks (CIDR), separated by commas. A network with
    host bits set (10.0.0.1/8) is refused rather than widened: it is more likely a typo."""
    networks: list[Network] = []
    for item in (value or "").split(","):
        text = item.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text))
        except ValueError:
            msg = (
                f"MPS_TRUSTED_PROXIES: {text!r} is not an address or a network "
                "(e.g. 10.0.0.5,10.1.0.0/16,fd00::/8)"
            )
            raise ConfigError(msg) from None
    return tuple(networks)


def _proxy_header(value: str | None) -> str:
    header = (value or PROXY_HEADERS[0]).strip().lower()
    if header not in PROXY_HEADERS:
        msg = "MPS_PROXY_HEADER must be X-Forwarded-For or Forwarded"
        raise ConfigError(msg)
    return header


def _shutdown_grace(value: str | None, mode: str) -> float:
    if not value:
        return PRODUCTION_SHUTDOWN_GRACE if mode == "production" else 0.0
    try:
        grace = float(value)
    except ValueError:
        grace = -1.0
    if not 0 <= grace <= MAX_SHUTDOWN_GRACE:
        msg = f"MPS_SHUTDOWN_GRACE must be seconds, from 0 to {MAX_SHUTDOWN_GRACE:g}"
        raise ConfigError(msg)
    return grace


def load_settings(argv: Sequence[str], env: Mapping[str, str]) -> Settings:
    args = _parser().parse_args(list(argv))
    mode = args.mode or env.get("MPS_MODE") or "development"
    if mode not in ("development", "production"):
        msg = "MPS_MODE must be development or production"
        raise ConfigError(msg)
    data_dir = Path(args.data_dir or env.get("MPS_DATA_DIR") or "var")
    port = args.port or int(env.get("MPS_PORT") or 8080)
    host = args.host or env.get("MPS_HOST") or "127.0.0.1"
    database_url = args.database_url or env.get("MPS_DATABASE_URL")
    broker_url = args.broker_url or env.get("MPS_BROKER_URL")
    session_secret = _secret_from_env(env, "MPS_SESSION_SECRET")
    encryption_key = _secret_from_env(env, "MPS_ENCRYPTION_KEY")
    session_secret_previous = _secret_from_env(env, "MPS_SESSION_SECRET_PREVIOUS")
    encryption_key_previous = _secret_from_env(env, "MPS_ENCRYPTION_KEY_PREVIOUS")
    id_key = _secret_from_env(env, "MPS_ID_KEY")
    if session_secret_previous is not None and id_key is None:
        # Customer ids are keyed by the session secret unless MPS_ID_KEY is set: rotating it
        # without pinning the id key would give every existing customer a new id.
        msg = (
            "MPS_SESSION_SECRET_PREVIOUS is set but MPS_ID_KEY is not: set MPS_ID_KEY to the "
            "session secret your customers' ids were made with (see SECURITY.md)"
        )
        raise ConfigError(msg)

    if mode == "production":
        missing = [
            name
            for name, ok in (
                ("MPS_DATABASE_URL (postgresql://…)", (database_url or "").startswith("postgres")),
                ("MPS_BROKER_URL (amqp://…)", (broker_url or "").startswith("amqp")),
                ("MPS_SESSION_SECRET", session_secret is not None),
                ("MPS_ENCRYPTION_KEY", encryption_key is not None),
                # Sign-in is by emailed code, so production without mail could not sign anyone in.
                ("MPS_SMTP_URL (smtp://…)", bool(env.get("MPS_SMTP_URL"))),
            )
            if not ok
        ]
        if missing:
            msg = "production mode refuses to start without: " + ", ".join(missing)
            raise ConfigError(msg)
        # The default object store is a folder of the data directory: made 0700 here, as in
        # development, rather than by the store's first write with the process's umask.
        _private_directory(data_dir)
    else:
        _private_directory(data_dir)
        generated = _development_secrets(data_dir)
        session_secret = session_secret or generated["session"]
        encryption_key = encryption_key or generated["encryption"]

    assert session_secret is not None
    assert encryption_key is not None
    database_url = database_url or f"sqlite:///{data_dir / 'mps.db'}"
    # A SQLite file elsewhere is data too: the same rule for the directory that holds it.
    database_dir = _sqlite_directory(database_url)
    if database_dir is not None:
        _private_directory(database_dir)
    return Settings(
        mode=mode,
        host=host,
        port=port,
        data_dir=data_dir,
        database_url=database_url,
        broker_url=broker_url or "memory://",
        cluster=_cluster(args.cluster or env.get("MPS_CLUSTER"), broker_url or "memory://"),
        public_url=(args.public_url or env.get("MPS_PUBLIC_URL") or f"http://{host}:{port}").rstrip(
            "/"
        ),
        # Unique per process unless named: two nodes of one name would each ignore the other's
        # heartbeats (mps.cluster.membership) and never balance.
        node_id=args.node_id or env.get("MPS_NODE_ID") or f"{socket.gethostname()}-{os.getpid()}",
        cluster_name=_cluster_name(args.cluster_name or env.get("MPS_CLUSTER_NAME") or "mps"),
        shard_queue_type=_queue_type(env.get("MPS_SHARD_QUEUE_TYPE") or "classic"),
        session_secret=session_secret,
        encryption_key=encryption_key,
        session_secret_previous=session_secret_previous,
        encryption_key_previous=encryption_key_previous,
        id_key=id_key or b"",
        webhook_retry_scale=float(env.get("MPS_WEBHOOK_RETRY_SCALE") or 1),
        webhook_concurrency=_webhook_concurrency(env.get("MPS_WEBHOOK_CONCURRENCY")),
        max_in_flight=_max_in_flight(env.get("MPS_MAX_IN_FLIGHT")),
        rate_limit_scale=_scale(
            args.rate_limit_scale
            if args.rate_limit_scale is not None
            else env.get("MPS_RATE_LIMIT_SCALE"),
            "MPS_RATE_LIMIT_SCALE",
        ),
        smtp_url=_smtp_url(env.get("MPS_SMTP_URL")),
        mail_from=_mail_from(env.get("MPS_MAIL_FROM")),
        smtp_ca_file=_smtp_ca_file(env.get("MPS_SMTP_CA_FILE")),
        metrics_port=_metrics_port(args.metrics_port or env.get("MPS_METRICS_PORT"), port),
        metrics_host=env.get("MPS_METRICS_HOST") or Settings.metrics_host,
        peer_host=env.get("MPS_PEER_HOST") or None,
        peer_port=_peer_port(env.get("MPS_PEER_PORT"), port),
        peer_advertise=env.get("MPS_PEER_ADVERTISE") or None,
        cluster_secret=_secret_from_env(env, "MPS_CLUSTER_SECRET") or b"",
        trusted_proxies=_trusted_proxies(env.get("MPS_TRUSTED_PROXIES")),
        proxy_header=_proxy_header(env.get("MPS_PROXY_HEADER")),
        shutdown_grace=_shutdown_grace(env.get("MPS_SHUTDOWN_GRACE"), mode),
        object_storage_url=args.object_storage_url
        or env.get("MPS_OBJECT_STORAGE_URL")
        or (data_dir / "objects").absolute().as_uri(),
    )
