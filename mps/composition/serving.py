"""The last cleanup contexts: the services the handlers use, made of every part opened before,
and the metrics listener that reads them; and the start-up log.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from mps.cluster.leases import ClusterAuthority
from mps.composition.parts import PARTS
from mps.config import Settings
from mps.http.keys import SERVICES
from mps.http.metrics_listener import serving_metrics
from mps.limits import LocalAuthority, QuotaLedger, RateLimiter, SharedLimiter
from mps.services import Services


async def services(app: web.Application) -> AsyncIterator[None]:
    """What the handlers use (app[SERVICES]), made of the parts above; and the start-up log."""
    parts = app[PARTS]
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


async def metrics_listener(app: web.Application) -> AsyncIterator[None]:
    """MPS_METRICS_PORT's listener: scrapes read the parts opened above, so it opens last."""
    async with serving_metrics(app[PARTS].metrics, app[SERVICES]):
        yield


# The start-up log keeps the composition root's name, which operators filter on.
logger = logging.getLogger("mps.bootstrap")


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


def log_listening(settings: Settings) -> None:
    """The line that says where the service listens: logged once its listener holds the port
    (mps.serve), so a port in use shows only the error, never a claim to be listening."""
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
