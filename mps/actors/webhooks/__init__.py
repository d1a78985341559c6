"""Events out to merchants: the outbox relay, the fan-out, and the webhook-dispatcher actor.

`Webhooks` wires them to the broker (mps.webhooks.topology says what travels where) and to the
sender (mps.webhooks.sender, the signed POST), and is opened and closed by the composition root.
Every node runs all of it: the relay publishes the events of the shards the node owns, and
every node consumes fan-out and attempt messages, so deliveries spread over the cluster. Nothing
here is held only in memory: with the in-process broker, which forgets everything on restart,
the deliveries still to be attempted are found in storage at start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from pykka import ActorRef

from mps.actors.context import ActorContext
from mps.actors.runtime import ActorDeadError, ask, stop
from mps.actors.shards import ShardRouter
from mps.actors.webhooks.deliveries import FULL_LANE_WAIT, Deliveries
from mps.actors.webhooks.dispatcher import Drain, Full, WebhookDispatcher
from mps.actors.webhooks.relay import OutboxRelay
from mps.adapters.broker import Broker
from mps.adapters.mail import Mail, Mailer
from mps.auth.keyring import Keyring
from mps.domain.clock import iso, parse_iso
from mps.persistence.queries import webhooks as queries
from mps.persistence.queries.members import owner_emails
from mps.persistence.queries.outbox import oldest_undispatched
from mps.persistence.statements import Row
from mps.webhooks.sender import Sender
from mps.webhooks.topology import AttemptJob, EventBatch, Topology

__all__ = ["Webhooks"]

logger = logging.getLogger(__name__)

# Messages taken at once by each node: fan-outs are short database work; attempts mostly wait
# on receivers, bounded per lane by the dispatcher.
EVENT_PREFETCH = 32
ATTEMPT_PREFETCH = 256
# How long an attempt that failed on our side (the database was down) waits before it is tried
# again: not an attempt of the delivery, which is only counted once a receiver was asked.
RETRY_OWN_FAILURE = 5.0
# Past these ages the `webhooks` health is degraded: deliveries due but not attempted, events
# committed but not published.
DELIVERY_LAG_LIMIT = 300.0
RELAY_LAG_LIMIT = 60.0
# An open delivery whose attempt is overdue by this much lost its message: it is sent again.
STUCK_AFTER = timedelta(minutes=5)
# An attempt this close to its moment is due: waiting again for less would cost more than it
# is worth (and a moment stored in whole milliseconds is up to half of one ahead).
DUE_SLACK = 0.01


class Closing(Exception):
    """The process is stopping: a message taken now goes back to the broker (or, in process,
    its delivery is found in storage at the next start)."""


class Webhooks:
    def __init__(
        self,
        context: ActorContext,
        broker: Broker,
        keyring: Keyring,
        shards: ShardRouter,
        *,
        prefix: str,
        retry_scale: float,
        allow_private: bool,
        concurrency: int,
        mailer: Mailer | None = None,
    ) -> None:
        self.topology = Topology(prefix)
        self.broker = broker
        self.sender = Sender(allow_private=allow_private)
        self.deliveries = Deliveries(
            context, broker, self.topology, keyring, self.sender, retry_scale, self._tell_owners
        )
        self._mailer = mailer
        self._concurrency = concurrency
        self.relay = OutboxRelay(
            context,
            broker,
            self.topology,
            shards,
            sweep=lambda owned: self.deliveries.sweep(owned, STUCK_AFTER),
        )
        self.dispatcher: ActorRef[WebhookDispatcher] | None = None
        self._context = context
        self._background: set[asyncio.Task[None]] = set()
        self._closing = False

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the request that asked for it was answered. What it publishes is
        stored already, so if the process stops first the sweep finds it."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def start(self) -> None:
        await self.sender.start()
        self.dispatcher = WebhookDispatcher.start(per_lane=self._concurrency)
        self.deliveries.dispatcher = self.dispatcher
        topology = self.topology
        await self.broker.declare(f"{topology.dead}", topology.dead)
        await self.broker.subscribe(
            topology.events, topology.events, self._on_event, prefetch=EVENT_PREFETCH
        )
        await self.broker.subscribe(
            topology.attempts, topology.attempts, self._on_attempt, prefetch=ATTEMPT_PREFETCH
        )
        if not self.broker.durable:
            await self._recover()
        self.relay.start()

    async def close(self) -> None:
        # The relay first: from here on no event is marked dispatched, so an event whose
        # deliveries were not made yet is published again after the restart.
        await self.relay.close()
        self._closing = True
        running = [*self._background, *self.deliveries.first_attempts]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if self.dispatcher is not None:
            await ask(self.dispatcher, Drain())
            await stop(self.dispatcher)
        await self.sender.close()

    async def _tell_owners(self, endpoint: Row, reason: str) -> None:
        """Mail the company's owners that an endpoint was disabled by its own answers."""
        if self._mailer is None:
            return
        for email in await owner_emails(self._context.database, endpoint["company_id"]):
            await self._mailer.send(
                Mail(
                    to=email,
                    subject="A webhook endpoint was disabled",
                    text=(
                        f"The webhook endpoint {endpoint['url']} ({endpoint['id']}, "
                        f"{'live' if endpoint['mode'] == 'live' else 'test'} mode) was "
                        f"disabled: {reason}.\nEvents are no longer sent to it. Fix the "
                        "receiver, enable the endpoint again (PATCH /merchant/webhooks/:id "
                        'with {"status": "enabled"}), then send what it missed with '
                        "POST /merchant/webhooks/:id/recover."
                    ),
                )
            )

    async def probe(self) -> dict[str, Any]:
        """The `webhooks` service of /health: the relay's and the dispatcher's backlog, read
        from storage. Degraded when events wait for the relay, or due deliveries for an
        attempt, longer than a healthy pipeline ever lets them."""
        db = self._context.database
        now = self._context.clock()
        count, oldest_due = await queries.backlog(db, iso(now))
        oldest_event = await oldest_undispatched(db)
        undelivered = 0.0 if oldest_due is None else (now - parse_iso(oldest_due)).total_seconds()
        unpublished = (
            0.0 if oldest_event is None else (now - parse_iso(oldest_event)).total_seconds()
        )
        lagging = undelivered > DELIVERY_LAG_LIMIT or unpublished > RELAY_LAG_LIMIT
        return {
            "status": "degraded" if lagging else "up",
            "detail": (
                f"{count} deliveries due, the oldest waiting {undelivered:.0f} s; "
                f"oldest unpublished event {unpublished:.0f} s"
            ),
        }

    def _refuse_while_closing(self) -> None:
        """While stopping, a message is not worked on: RabbitMQ gets it back (a raise), and the
        in-process broker may drop it, since its work is found in storage at the next start."""
        if self._closing and self.broker.durable:
            raise Closing

    async def _on_event(self, body: bytes) -> None:
        self._refuse_while_closing()
        if self._closing:
            return
        try:
            attempts = await self.deliveries.fan_out(EventBatch.decode(body))
        except Exception:
            # Redelivered after a pause (what is made already is not made again), rather than
            # at once and again while the database is away.
            logger.exception("making deliveries failed; the batch is tried again")
            await asyncio.sleep(1.0)
            raise
        if self.broker.durable:
            # Acknowledged once the first attempts ended (each handles its own failure), so
            # that if this node dies first, the batch goes to another (see `fan_out`).
            await asyncio.gather(*attempts, return_exceptions=True)
            # Stopped meanwhile (the attempts were cancelled): back to the broker with it.
            self._refuse_while_closing()

    async def _on_attempt(self, body: bytes) -> None:
        self._refuse_while_closing()
        if self._closing:
            return
        job = AttemptJob.decode(body)
        wait = self.deliveries.due(job)
        if wait > DUE_SLACK:
            # Not due yet: a receiver's Retry-After longer than the delay queue's, or a message
            # deferred by a full lane. Back to wait the rest.
            await self.deliveries.defer(job, wait)
            return
        try:
            await self.deliveries.attempt(job)
        except Full:
            await self.deliveries.defer(job, FULL_LANE_WAIT)
        except ActorDeadError:
            self._refuse_while_closing()
            return
        except Exception:
            logger.exception("webhook attempt of %s failed on our side", job.delivery_id)
            await self.deliveries.defer(job, RETRY_OWN_FAILURE)

    async def _recover(self) -> None:
        """Publish again every delivery still to be attempted: the in-process broker lost them
        with the last process."""
        after, found = "", 0
        while True:
            rows = await queries.open_deliveries(self._context.database, after, 500)
            await self.deliveries.republish(rows, keep_due=True)
            found += len(rows)
            if len(rows) < 500:
                break
            after = rows[-1]["id"]
        if found:
            logger.info("webhooks: %d deliveries to attempt were found in storage", found)
