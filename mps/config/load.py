"""`load_settings`: the settings from `run.py`'s options and `MPS_*` variables, an option winning
over its variable. Development (the default) fills in what is missing; production refuses to
start without what it must be told."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

from mps.config import checks
from mps.config.command_line import argument_parser
from mps.config.data_dir import development_secrets, private_directory, sqlite_directory
from mps.config.settings import ConfigError, Settings

__all__ = ["load_settings"]


def load_settings(argv: Sequence[str], env: Mapping[str, str]) -> Settings:
    args = argument_parser().parse_args(list(argv))
    mode = args.mode or env.get("MPS_MODE") or "development"
    if mode not in ("development", "production"):
        msg = "MPS_MODE must be development or production"
        raise ConfigError(msg)
    data_dir = Path(args.data_dir or env.get("MPS_DATA_DIR") or "var")
    port = args.port or int(env.get("MPS_PORT") or 8080)
    host = args.host or env.get("MPS_HOST") or "127.0.0.1"
    database_url = args.database_url or env.get("MPS_DATABASE_URL")
    broker_url = args.broker_url or env.get("MPS_BROKER_URL")
    session_secret = checks.secret_from_env(env, "MPS_SESSION_SECRET")
    encryption_key = checks.secret_from_env(env, "MPS_ENCRYPTION_KEY")
    session_secret_previous = checks.secret_from_env(env, "MPS_SESSION_SECRET_PREVIOUS")
    encryption_key_previous = checks.secret_from_env(env, "MPS_ENCRYPTION_KEY_PREVIOUS")
    id_key = checks.secret_from_env(env, "MPS_ID_KEY")
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
        private_directory(data_dir)
    else:
        private_directory(data_dir)
        generated = development_secrets(data_dir)
        session_secret = session_secret or generated["session"]
        encryption_key = encryption_key or generated["encryption"]

    assert session_secret is not None
    assert encryption_key is not None
    database_url = database_url or f"sqlite:///{data_dir / 'mps.db'}"
    # A SQLite file elsewhere is data too: the same rule for the directory that holds it.
    database_dir = sqlite_directory(database_url)
    if database_dir is not None:
        private_directory(database_dir)
    workers = checks.workers(args.workers or env.get("MPS_WORKERS"))
    heartbeat_interval, node_timeout, forward_within = checks.cluster_timings(
        env.get("MPS_HEARTBEAT_INTERVAL"),
        env.get("MPS_NODE_TIMEOUT"),
        env.get("MPS_FORWARD_WITHIN"),
    )
    cluster = args.cluster or env.get("MPS_CLUSTER")
    if workers > 1:
        checks.shared_by_workers(workers, database_url, broker_url or "memory://", cluster)
        cluster = "on"
    return Settings(
        mode=mode,
        host=host,
        port=port,
        data_dir=data_dir,
        database_url=database_url,
        broker_url=broker_url or "memory://",
        cluster=checks.cluster(cluster, broker_url or "memory://"),
        public_url=(args.public_url or env.get("MPS_PUBLIC_URL") or f"http://{host}:{port}").rstrip(
            "/"
        ),
        # Unique per process unless named: two nodes of one name would each ignore the other's
        # heartbeats (mps.cluster.membership) and never balance.
        node_id=args.node_id or env.get("MPS_NODE_ID") or f"{socket.gethostname()}-{os.getpid()}",
        cluster_name=checks.cluster_name(args.cluster_name or env.get("MPS_CLUSTER_NAME") or "mps"),
        shard_queue_type=checks.queue_type(env.get("MPS_SHARD_QUEUE_TYPE") or "classic"),
        session_secret=session_secret,
        encryption_key=encryption_key,
        session_secret_previous=session_secret_previous,
        encryption_key_previous=encryption_key_previous,
        id_key=id_key or b"",
        webhook_retry_scale=float(env.get("MPS_WEBHOOK_RETRY_SCALE") or 1),
        webhook_concurrency=checks.webhook_concurrency(env.get("MPS_WEBHOOK_CONCURRENCY")),
        max_in_flight=checks.max_in_flight(env.get("MPS_MAX_IN_FLIGHT")),
        rate_limit_scale=checks.scale(
            args.rate_limit_scale
            if args.rate_limit_scale is not None
            else env.get("MPS_RATE_LIMIT_SCALE"),
            "MPS_RATE_LIMIT_SCALE",
        ),
        smtp_url=checks.smtp_url(env.get("MPS_SMTP_URL")),
        mail_from=checks.mail_from(env.get("MPS_MAIL_FROM")),
        smtp_ca_file=checks.smtp_ca_file(env.get("MPS_SMTP_CA_FILE")),
        metrics_port=checks.metrics_port(args.metrics_port or env.get("MPS_METRICS_PORT"), port),
        metrics_host=env.get("MPS_METRICS_HOST") or Settings.metrics_host,
        peer_host=env.get("MPS_PEER_HOST") or None,
        peer_port=checks.peer_port(env.get("MPS_PEER_PORT"), port),
        peer_advertise=env.get("MPS_PEER_ADVERTISE") or None,
        cluster_secret=checks.secret_from_env(env, "MPS_CLUSTER_SECRET") or b"",
        trusted_proxies=checks.trusted_proxies(env.get("MPS_TRUSTED_PROXIES")),
        proxy_header=checks.proxy_header(env.get("MPS_PROXY_HEADER")),
        shutdown_grace=checks.shutdown_grace(env.get("MPS_SHUTDOWN_GRACE"), mode),
        heartbeat_interval=heartbeat_interval,
        node_timeout=node_timeout,
        forward_within=forward_within,
        workers=workers,
        worker_port=checks.worker_port(env.get("MPS_WORKER_PORT"), port),
        object_storage_url=args.object_storage_url
        or env.get("MPS_OBJECT_STORAGE_URL")
        or (data_dir / "objects").absolute().as_uri(),
    )
