"""Operational metrics in Prometheus' text format: what the service counts, and what it reads
from its running parts when scraped.

One `Metrics` per application, owning its own `CollectorRegistry` rather than the library's
global one: a process may build several applications (the test suite builds hundreds), and each
must count only its own requests.

Counted as things happen, each by one cheap call on a path that runs anyway:

    mps_http_requests_total{route,method,status}   requests answered (mps.http.request_metrics)
    mps_http_request_seconds{route,method}         their latency, 1 ms to 10 s
    mps_group_commit_units                         units per group commit (the batch size)
    mps_group_commit_seconds                       how long each group commit took
    mps_rate_limit_refusals_total{limit}           requests refused 429 by a rate limit
    mps_passed_requests_total{outcome}             requests this node passed to the owner of
                                                   their shard: answered (the owner's answer,
                                                   whatever its status), unavailable (503 here:
                                                   no answer came), error
    mps_passed_request_seconds                     their latency, the hop included
    mps_peer_requests_total{outcome}               requests other nodes passed here: ran,
                                                   not_run (the shard is not this node's any
                                                   more; the asker passes it on), refused (no
                                                   valid signature)
    process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...
                                                   the process (prometheus_client's collector)

Read at scrape time, so that nothing on the request path keeps them up to date:

    mps_actors_active{kind}             virtual actors active now (company, payment)
    mps_actor_mailbox_depth{kind}       messages waiting in those actors' mailboxes
    mps_shards_owned                    shards this node owns
    mps_shard_epoch{shard}              the epoch each owned shard was taken under (0: alone)
    mps_outbox_lag_seconds              age of the oldest undispatched outbox event (0: none;
                                        -1: the database did not answer within the deadline)
    mps_cluster_broker_connected        1 while the node's cluster connection to RabbitMQ is up
                                        (it owns no shard without it); absent outside a cluster
    mps_cluster_peers                   other nodes heard from within the node timeout
    mps_cluster_shard_changes_total{change}
                                        shards taken, handed_over, taken_from_lost (from a peer
                                        taken for gone), dropped (the broker lost, or a commit
                                        fenced)
    mps_cluster_broker_asks_total       requests sent through a shard's queue because no peer
                                        listener could take them

Every series carries the label `node` (the node id, `MPS_NODE_ID`), so that series scraped from
several nodes stay apart whatever the scraper's own `instance` label says.

`route` is the route's canonical path (`/api/v1/merchant/payments/{id}`), or `unmatched`, never
the requested path: ids in paths would make a series per payment. `method` is one of the HTTP
methods the service knows or `other`, for the same reason.

Concurrency context: everything here runs on the event loop thread. The scrape reads the shard
directories synchronously (a pass over the active actors, bounded by the actor capacity) and the
outbox with one indexed read, bounded by `outbox_deadline`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from mps.domain.clock import parse_iso
from mps.persistence.queries import outbox

if TYPE_CHECKING:
    from mps.cluster.node import ClusterNode
    from mps.services import Services

__all__ = ["HTTP_METHODS", "Metrics"]

logger = logging.getLogger(__name__)

# Seconds. A request answers in about a millisecond when all is well; the deadline is 30 s.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Units per group commit, up to the writer's `max_batch` (512).
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# Seconds per group commit: one fsync at best, the writer's 15 s deadline at worst.
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 15.0)

# The methods a label may name; anything else a client sends is counted as `other`.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# A scrape waits this long for the outbox read, then reports -1 rather than hang.
OUTBOX_DEADLINE = 1.0


class Metrics:
    def __init__(self, *, outbox_deadline: float = OUTBOX_DEADLINE) -> None:
        self.registry = CollectorRegistry()
        self.outbox_deadline = outbox_deadline
        self.http_requests = Counter(
            "mps_http_requests",
            "HTTP requests answered, by canonical route, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.http_seconds = Histogram(
            "mps_http_request_seconds",
            "Time from receiving an HTTP request to its response, by canonical route and method.",
            ["route", "method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.commit_units = Histogram(
            "mps_group_commit_units",
            "Write units per group commit of the persistence actor.",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
        self.commit_seconds = Histogram(
            "mps_group_commit_seconds",
            "Duration of each successful group commit.",
            buckets=COMMIT_BUCKETS,
            registry=self.registry,
        )
        self.rate_limit_refusals = Counter(
            "mps_rate_limit_refusals",
            "Requests refused by a rate limit, by the limit's name.",
            ["limit"],
            registry=self.registry,
        )
        self.passed_requests = Counter(
            "mps_passed_requests",
            "Requests passed to the node owning their shard, by outcome (answered, unavailable, "
            "error).",
            ["outcome"],
            registry=self.registry,
        )
        self.passed_seconds = Histogram(
            "mps_passed_request_seconds",
            "Time from receiving a request passed to its shard's owner to its response.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.peer_requests = Counter(
            "mps_peer_requests",
            "Requests other nodes passed to this one, by outcome (ran, not_run, refused).",
            ["outcome"],
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)
        # The node's id, on every series once the service is attached.
        self.node: str | None = None
        self._live: _LiveFigures | None = None

    def observe_commit(self, units: int, seconds: float) -> None:
        """A group commit of `units` units succeeded in `seconds` (PersistenceActor's hook)."""
        self.commit_units.observe(units)
        self.commit_seconds.observe(seconds)

    def refused(self, limit: str) -> None:
        """A request was refused by the limit named `limit` (RateLimiter's hook)."""
        self.rate_limit_refusals.labels(limit).inc()

    def attach(self, services: Services) -> None:
        """Report the running service's live figures from now on (bootstrap calls this once
        its parts are open; before that a scrape shows the counters only)."""
        if self._live is not None:
            self.registry.unregister(self._live)
        self.node = services.settings.node_id
        self._live = _LiveFigures(services)
        self.registry.register(self._live)

    async def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The body and content type of a scrape, in the format `accept` asks for (Prometheus'
        text format unless it asks for OpenMetrics)."""
        if self._live is not None:
            await self._live.measure_outbox(self.outbox_deadline)
        encode, content_type = choose_encoder(accept)
        source = self.registry if self.node is None else _NodeLabelled(self.registry, self.node)
        return encode(source), content_type


class _NodeLabelled:
    """A registry's metrics with the label `node` added to every sample, for the encoders
    (which only call `collect`)."""

    def __init__(self, registry: CollectorRegistry, node: str) -> None:
        self._registry = registry
        self._node = node

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            labelled = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            labelled.samples = [
                sample._replace(labels={**sample.labels, "node": self._node})
                for sample in metric.samples
            ]
            yield labelled


class _LiveFigures:
    """The collector of figures read from the running service at each scrape."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self.outbox_lag = 0.0

    async def measure_outbox(self, deadline: float) -> None:
        """Read the age of the oldest undispatched event, giving up after `deadline` seconds."""
        try:
            async with asyncio.timeout(deadline):
                oldest = await outbox.oldest_undispatched(self._services.database)
        except Exception:
            # A scrape must answer whatever the database does; health reports the database.
            logger.debug("outbox lag not measured", exc_info=True)
            self.outbox_lag = -1.0
            return
        if oldest is None:
            self.outbox_lag = 0.0
            return
        age = self._services.clock() - parse_iso(oldest)
        self.outbox_lag = max(0.0, age.total_seconds())

    def describe(self) -> Iterator[Metric]:
        # The names without samples: the registry checks them against the counters' names.
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        active, depth, owned, epoch, lag = families
        totals: dict[str, list[int]] = {"company": [0, 0], "payment": [0, 0]}
        shards = dict(self._services.shards.owned)
        for shard in shards.values():
            for kind, directory in (("company", shard.companies), ("payment", shard.payments)):
                actors, queued = directory.stats()
                totals[kind][0] += actors
                totals[kind][1] += queued
        for kind, (actors, queued) in totals.items():
            active.add_metric([kind], actors)
            depth.add_metric([kind], queued)
        owned.add_metric([], len(shards))
        for index, shard in sorted(shards.items()):
            # None (or no attribute at all) when the node owns every shard alone.
            epoch.add_metric([str(index)], shard.epoch or 0)
        lag.add_metric([], self.outbox_lag)
        yield from families
        cluster = self._services.cluster
        if cluster is not None:
            yield from _cluster_figures(cluster)

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily(
                "mps_actors_active", "Virtual actors active now, by kind.", labels=["kind"]
            ),
            GaugeMetricFamily(
                "mps_actor_mailbox_depth",
                "Messages waiting in the mailboxes of active actors, by kind.",
                labels=["kind"],
            ),
            GaugeMetricFamily("mps_shards_owned", "Shards this node owns.", labels=[]),
            GaugeMetricFamily(
                "mps_shard_epoch",
                "The epoch each owned shard was taken under (0 when one node owns all).",
                labels=["shard"],
            ),
            GaugeMetricFamily(
                "mps_outbox_lag_seconds",
                "Age of the oldest outbox event not yet dispatched; 0 when none waits, -1 when "
                "the database did not answer in time.",
                labels=[],
            ),
        ]


def _cluster_figures(cluster: ClusterNode) -> Iterator[Metric]:
    connected = GaugeMetricFamily(
        "mps_cluster_broker_connected",
        "1 while this node's cluster connection to the broker is up (no shard is owned "
        "without it), else 0.",
        value=1 if cluster.connected else 0,
    )
    peers = GaugeMetricFamily(
        "mps_cluster_peers",
        "Other nodes of the cluster heard from within the node timeout.",
        value=cluster.membership.heard_within(time.monotonic()),
    )
    changes = CounterMetricFamily(
        "mps_cluster_shard_changes",
        "Shards taken, handed over, taken from a peer taken for gone, and dropped at once "
        "(the broker lost, or a commit fenced).",
        labels=["change"],
    )
    for change, count in (
        ("taken", cluster.taken),
        ("handed_over", cluster.handed_over),
        ("taken_from_lost", cluster.taken_from_lost),
        ("dropped", cluster.dropped),
    ):
        changes.add_metric([change], count)
    asks = CounterMetricFamily(
        "mps_cluster_broker_asks",
        "Requests sent through a shard's queue (passed requests no peer listener took, rate "
        "limit leases).",
        value=cluster.asked,
    )
    return iter((connected, peers, changes, asks))
