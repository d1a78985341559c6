"""The rules each setting must pass: one function per setting, given its raw text (from an option
or a variable) and returning its value, or raising `ConfigError` with what to set instead."""

from __future__ import annotations

import ipaddress
import re
import ssl
from collections.abc import Mapping
from email.utils import parseaddr
from urllib.parse import urlsplit

from mps.adapters.mail import header_problem
from mps.config.settings import CLUSTER_NEEDS_AMQP, ConfigError, Network, Settings, is_amqp

__all__ = [
    "MAX_CLUSTER_TIMING",
    "MAX_IN_FLIGHT",
    "MAX_SHUTDOWN_GRACE",
    "MAX_WEBHOOK_CONCURRENCY",
    "MAX_WORKERS",
    "PRODUCTION_SHUTDOWN_GRACE",
    "PROXY_HEADERS",
    "cluster",
    "cluster_name",
    "cluster_timings",
    "mail_from",
    "max_in_flight",
    "metrics_port",
    "peer_port",
    "proxy_header",
    "queue_type",
    "scale",
    "secret_from_env",
    "shared_by_workers",
    "shutdown_grace",
    "smtp_ca_file",
    "smtp_url",
    "trusted_proxies",
    "webhook_concurrency",
    "worker_port",
    "workers",
]

# More POSTs at once than this to one receiver is a flood, not a delivery.
MAX_WEBHOOK_CONCURRENCY = 256
# More requests in flight on one node than this is no bound at all.
MAX_IN_FLIGHT = 1_000_000
# Production keeps serving this long after SIGTERM, so balancers see /health/ready fail first.
PRODUCTION_SHUTDOWN_GRACE = 5.0
# More workers than this on one host is a typo (a host has fewer cores).
MAX_WORKERS = 1024
# A drain longer than this is a mistake (an orchestrator kills the process long before).
MAX_SHUTDOWN_GRACE = 3600.0
# The headers a trusted proxy may name the client in (mps.http.client_address).
PROXY_HEADERS = ("x-forwarded-for", "forwarded")
# A cluster timing longer than this (an hour) is a typo, not a tuning.
MAX_CLUSTER_TIMING = 3600.0


def cluster(value: str | None, broker_url: str) -> bool:
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
    if not is_amqp(broker_url):
        raise ConfigError(CLUSTER_NEEDS_AMQP)
    return True


def workers(value: str | None) -> int:
    if not value:
        return 1
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_WORKERS:
        msg = f"MPS_WORKERS must be a whole number from 1 to {MAX_WORKERS}"
        raise ConfigError(msg)
    return int(value)


def shared_by_workers(
    workers: int, database_url: str, broker_url: str, cluster: str | None
) -> None:
    """Workers are separate processes, each a node of one cluster: they need what a cluster's
    nodes share, and cannot be told to run alone."""
    if not database_url.startswith("postgres"):
        msg = (
            f"MPS_WORKERS={workers} needs PostgreSQL (MPS_DATABASE_URL=postgresql://…): the "
            "workers are separate processes, and an embedded SQLite file has one writer"
        )
        raise ConfigError(msg)
    if not is_amqp(broker_url):
        msg = (
            f"MPS_WORKERS={workers} needs RabbitMQ (MPS_BROKER_URL=amqp://…): the workers are "
            "nodes of one cluster, and share its shards through the broker"
        )
        raise ConfigError(msg)
    if cluster == "off":
        msg = (
            f"MPS_WORKERS={workers} runs the workers as one cluster: leave MPS_CLUSTER unset or on"
        )
        raise ConfigError(msg)


def cluster_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        msg = "MPS_CLUSTER_NAME must be 1 to 64 letters, digits, '.', '_' or '-'"
        raise ConfigError(msg)
    return name


def queue_type(name: str) -> str:
    if name not in ("classic", "quorum"):
        msg = "MPS_SHARD_QUEUE_TYPE must be classic or quorum"
        raise ConfigError(msg)
    return name


def secret_from_env(env: Mapping[str, str], name: str) -> bytes | None:
    value = env.get(name)
    if not value:
        return None
    if len(value) < 32:
        msg = f"{name} must be at least 32 characters"
        raise ConfigError(msg)
    return value.encode()


def smtp_url(value: str | None) -> str | None:
    if not value:
        return None
    if urlsplit(value).scheme not in ("smtp", "smtps"):
        msg = "MPS_SMTP_URL must be smtp://… (STARTTLS) or smtps://… (TLS)"
        raise ConfigError(msg)
    return value


def smtp_ca_file(value: str | None) -> str | None:
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


def mail_from(value: str | None) -> str:
    """The From header: one address, with an optional display name, and no line breaks (a
    header of its own could be added through them)."""
    if not value:
        return Settings.mail_from
    _name, address = parseaddr(value)
    if header_problem(value) is not None or "@" not in address:
        msg = "MPS_MAIL_FROM must be one address, e.g. 'Payments <no-reply@example.com>'"
        raise ConfigError(msg)
    return value


def scale(value: float | str | None, name: str) -> float:
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


def webhook_concurrency(value: str | None) -> int:
    if not value:
        return Settings.webhook_concurrency
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_WEBHOOK_CONCURRENCY:
        msg = f"MPS_WEBHOOK_CONCURRENCY must be a whole number from 1 to {MAX_WEBHOOK_CONCURRENCY}"
        raise ConfigError(msg)
    return int(value)


def max_in_flight(value: str | None) -> int:
    if not value:
        return Settings.max_in_flight
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_IN_FLIGHT:
        msg = f"MPS_MAX_IN_FLIGHT must be a whole number from 0 (no bound) to {MAX_IN_FLIGHT}"
        raise ConfigError(msg)
    return int(value)


def metrics_port(value: str | None, service_port: int) -> int | None:
    if not value:
        return None
    return _port_beside_service(value, "MPS_METRICS_PORT", "1 to 65535", 1, service_port)


def peer_port(value: str | None, service_port: int) -> int:
    if not value:
        return 0
    return _port_beside_service(
        value, "MPS_PEER_PORT", "0 to 65535; 0: any free port", 0, service_port
    )


def worker_port(value: str | None, service_port: int) -> int | None:
    """MPS_WORKER_PORT: the first of the workers' own ports (mps.workers says which each
    takes); None when unset."""
    if not value:
        return None
    return _port_beside_service(value, "MPS_WORKER_PORT", "1 to 65535", 1, service_port)


def _port_beside_service(value: str, name: str, bounds: str, lowest: int, service_port: int) -> int:
    """`value` as a port from `lowest` to 65535 that is not the service's own: a second
    listener on the service's port would fail to bind only after the node had started."""
    try:
        port = int(value)
    except ValueError:
        port = lowest - 1
    if not lowest <= port <= 65535:
        msg = f"{name} must be a port number ({bounds})"
        raise ConfigError(msg)
    if port == service_port:
        msg = f"{name} must differ from the service's port (MPS_PORT)"
        raise ConfigError(msg)
    return port


def trusted_proxies(value: str | None) -> tuple[Network, ...]:
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


def proxy_header(value: str | None) -> str:
    header = (value or PROXY_HEADERS[0]).strip().lower()
    if header not in PROXY_HEADERS:
        msg = "MPS_PROXY_HEADER must be X-Forwarded-For or Forwarded"
        raise ConfigError(msg)
    return header


def shutdown_grace(value: str | None, mode: str) -> float:
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


def cluster_timings(
    heartbeat: str | None, node_timeout: str | None, forward_within: str | None
) -> tuple[float, float, float]:
    """MPS_HEARTBEAT_INTERVAL, MPS_NODE_TIMEOUT and MPS_FORWARD_WITHIN, in seconds, each
    defaulting to Settings' (the production tuning, mps.cluster.timings says why). Their order
    is checked too: a peer taken for gone within one of its heartbeats would be lost and found
    again at every beat, and a passed request that gave up before its owner could be found gone
    would answer 503 for a pause that another node was never given the time to take over."""
    beat = _seconds(heartbeat, "MPS_HEARTBEAT_INTERVAL", Settings.heartbeat_interval)
    silent = _seconds(node_timeout, "MPS_NODE_TIMEOUT", Settings.node_timeout)
    within = _seconds(forward_within, "MPS_FORWARD_WITHIN", Settings.forward_within)
    if not silent > beat:
        msg = (
            f"MPS_NODE_TIMEOUT ({silent:g} s) must be longer than MPS_HEARTBEAT_INTERVAL "
            f"({beat:g} s): about three heartbeats or more"
        )
        raise ConfigError(msg)
    if not within > silent:
        msg = (
            f"MPS_FORWARD_WITHIN ({within:g} s) must be longer than MPS_NODE_TIMEOUT "
            f"({silent:g} s), and shorter than the balancer's server timeout"
        )
        raise ConfigError(msg)
    return beat, silent, within


def _seconds(value: str | None, name: str, default: float) -> float:
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    # `not 0 < x` also refuses NaN, which compares false with everything.
    if not 0 < seconds <= MAX_CLUSTER_TIMING:
        msg = f"{name} must be seconds, more than 0 and at most {MAX_CLUSTER_TIMING:g}"
        raise ConfigError(msg)
    return seconds
