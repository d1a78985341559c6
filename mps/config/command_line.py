"""The command line: `run.py`'s options, and what `run.py --help` prints after them (the
subcommands, and every setting only the environment gives)."""

from __future__ import annotations

import argparse

__all__ = ["argument_parser"]

# `run.py --help` after the options: the subcommands, and every setting only the environment
# gives. tests/test_run.py checks that each MPS_* name the package reads appears here.
_HELP_EPILOG = """\
subcommands:
  run.py migrate [--check]     apply the database's pending migrations and exit (nodes also
                               migrate on start); --check only says whether any are pending
                               (exit 1 when some are)
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
    MPS_WORKER_PORT              with --workers N, worker i also listens on this port + i - 1,
                                 its own address for a shard-aware balancer (default: none;
                                 a single node ignores it)
    MPS_HEARTBEAT_INTERVAL       seconds between a node's heartbeats (1)
    MPS_NODE_TIMEOUT             seconds of silence before a peer is taken for gone (3.5;
                                 more than the heartbeat interval)
    MPS_FORWARD_WITHIN           seconds a request passed to its owner waits before a 503 (10;
                                 more than the node timeout, less than the balancer's timeout)
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
MPS_RATE_LIMIT_SCALE, MPS_OBJECT_STORAGE_URL, MPS_METRICS_PORT, MPS_WORKERS; an option wins over its
variable.
"""


def argument_parser() -> argparse.ArgumentParser:
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
    parser.add_argument(
        "--workers",
        help="cluster members on this host, sharing the port; more than 1 needs Postgres and "
        "AMQP (MPS_WORKERS, default 1)",
    )
    return parser
