"""The work behind the webhook queues: making an event's deliveries, and making one attempt.

Both run in the broker consumer's task on whichever node took the message, outside any actor
turn: they read what they need, POST, and commit through the persistence actor. Every step is
safe to repeat, because the broker delivers at least once:

- fan-out: a delivery's id is derived from (event, target, origin), and its insert does nothing
  when the row exists, so a batch handled twice makes each delivery once; the rows that existed
  already go to the attempt path, which dedupes by attempt number;
- attempt: a message for an attempt the delivery has already made is dropped; the next attempt
  (or the dead letter) is published before the outcome is recorded, so a crash in between
  repeats the POST (at least once) rather than losing the retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson
from pykka import ActorRef

from mps.actors.context import ActorContext
from mps.actors.runtime import ActorDeadError, ask
from mps.actors.webhooks.dispatcher import Full, Room, WebhookDispatcher, slot
from mps.adapters.broker import Broker
from mps.auth.keyring import Keyring
from mps.domain.clock import iso, parse_iso
from mps.domain.webhooks import (
    FAILING_DAYS_BEFORE_DISABLE,
    SECRET_PURPOSE,
    Answer,
    after_attempt,
    subscribed,
)
from mps.persistence import webhook_store as store
from mps.persistence.outbox import event_row
from mps.persistence.queries import events as event_queries
from mps.persistence.queries import webhooks as queries
from mps.persistence.statements import Row
from mps.representations.events import event_body
from mps.webhooks.sender import Sender
from mps.webhooks.signing import new_secret
from mps.webhooks.topology import AttemptJob, EventBatch, Topology

__all__ = ["FULL_LANE_WAIT", "Deliveries", "default_secret", "delivery_id_for", "lane_of"]

logger = logging.getLogger(__name__)

# How long an attempt refused by a full lane waits in the broker before it asks again.
FULL_LANE_WAIT = 1.0
# An attempt that arrives before the previous attempt's outcome is recorded waits this long,
# for up to RECORD_GRACE seconds past its due time.
RECORD_WAIT = 0.05
RECORD_GRACE = 10.0


def delivery_id_for(event_id: str, target: str, origin: str) -> str:
    digest = hashlib.sha256(f"{event_id}|{target}|{origin}".encode()).hexdigest()
    return f"whd_{digest[:24]}"


def lane_of(url: str) -> str:
    """The lane of a payment's own URL: its origin, so one slow host holds only its own."""
    parts = urlsplit(url)
    return f"url:{parts.scheme}://{parts.netloc}"


async def default_secret(
    context: ActorContext, keyring: Keyring, company_id: str, mode: str
) -> str:
    """The company's default signing secret in `mode`, made on first use (first writer wins)."""
    sealed = await queries.default_secret(context.database, company_id, mode)
    if sealed is None:
        fresh = keyring.seal(new_secret().encode(), SECRET_PURPOSE)
        now = iso(context.clock())
        await context.commit(store.default_secret_insert(company_id, mode, fresh, now))
        sealed = await queries.default_secret(context.database, company_id, mode)
        assert sealed is not None
    return keyring.unseal(sealed, SECRET_PURPOSE).decode()


@dataclass
class Deliveries:
    context: ActorContext
    broker: Broker
    topology: Topology
    keyring: Keyring
    sender: Sender
    retry_scale: float
    # Told (the endpoint's row, why) when an endpoint was disabled by its answers.
    on_disabled: Callable[[Row, str], Awaitable[None]] | None = None
    # Who may POST now, per lane (set once the actor is started).
    dispatcher: ActorRef[WebhookDispatcher] | None = None
    # First attempts running in the background (`fan_out`).
    first_attempts: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def _now(self) -> datetime:
        return self.context.clock()

    # -- fan-out -----------------------------------------------------------------------------

    async def fan_out(self, batch: EventBatch) -> list[asyncio.Task[None]]:
        """Make the deliveries of a batch of events, and start their first attempts; returns
        the attempts' tasks.

        The first attempts are made here, with the events and endpoints in hand, rather than
        sent round the broker as attempt messages: only retries travel. They run as tasks of
        their own, in parallel, each holding a slot of its endpoint's lane only while it POSTs.
        With RabbitMQ the batch's message is acknowledged once they end, so a node that dies
        first leaves the message to another node; in process, once the deliveries are stored
        (the next start finds them). A delivery whose row existed already (the batch's message
        came again) is left to the attempt path, which knows from its row what was made.

        The endpoints are read first, for each company and mode the batch names, and an event
        is read whole only when it can go somewhere: to its company's endpoints, or, for a
        company with none (most, on the create path), to its payment's own URL, which the
        read itself picks out (`own_url_events`). Nothing about endpoints is kept between
        batches: an endpoint is created on its company's owner and the fan-out runs on any
        node, so only a read made for this batch, after its events committed, is sure to see
        an endpoint created just before them."""
        db = self.context.database
        ids = [item.event_id for item in batch.items]
        named = {item.event_id: (item.company_id, item.mode) for item in batch.items}
        endpoints: dict[tuple[str, str], list[Row]] = {}
        for key in named.values():
            if key not in endpoints:
                endpoints[key] = await queries.endpoints_for_event(db, *key)
        served = [event_id for event_id, key in named.items() if endpoints[key]]
        unserved = [event_id for event_id, key in named.items() if not endpoints[key]]
        found = await event_queries.events_by_ids(db, served)
        found += await event_queries.own_url_events(db, unserved)
        events = {
            e["id"]: e
            for e in found
            # Never another tenant's, and only under the endpoints read for it.
            if (e["company_id"], e["mode"]) == named[e["id"]]
        }
        planned: list[tuple[Row, Row | None]] = []
        for event_id in ids:
            event = events.get(event_id)
            if event is None:
                continue  # goes nowhere, past retention, or never committed
            planned += self._plan(event, "event", endpoints[named[event_id]])
        if not planned:
            return []
        inserted = await self.context.commit(*(store.delivery_insert(r) for r, _ in planned))
        fresh = [(r, e) for (r, e), rows in zip(planned, inserted, strict=True) if rows]
        await self.publish_first_attempts(
            [r for (r, _), rows in zip(planned, inserted, strict=True) if not rows]
        )
        tasks = []
        for row, endpoint in fresh:
            task = asyncio.get_running_loop().create_task(
                self._first_attempt(row, endpoint, events[row["event_id"]])
            )
            self.first_attempts.add(task)
            task.add_done_callback(self.first_attempts.discard)
            tasks.append(task)
        return tasks

    async def _first_attempt(self, row: Row, endpoint: Row | None, event: Row) -> None:
        lane = _lane(row)
        if endpoint is None:
            secrets = [await self._default_secret(row["company_id"], row["mode"])]
        else:
            secrets = self._endpoint_secrets(endpoint)
        job = AttemptJob(row["id"], 1, _ms(self._now), lane)
        try:
            await self._make(row, 1, event, secrets, None, lane)
        except Full:
            # The endpoint's lane is full: the attempt waits in the broker for its turn.
            await self.broker.publish(self.topology.attempts, job.encode(), delay=FULL_LANE_WAIT)
        except ActorDeadError:
            pass  # stopping: the delivery is stored as due, and found again
        except Exception:
            logger.exception("the first attempt of %s failed on our side", row["id"])
            with contextlib.suppress(Exception):
                await self.broker.publish(self.topology.attempts, job.encode(), delay=5.0)

    async def publish_first_attempts(self, rows: list[Row]) -> None:
        due = _ms(self._now)
        for row in rows:
            attempt = AttemptJob(row["id"], 1, due, _lane(row))
            await self.broker.publish(self.topology.attempts, attempt.encode())

    def now_iso(self) -> str:
        return iso(self._now)

    def replay_row(self, original: Row, url: str, origin: str) -> Row:
        """A new delivery of `original`'s event to the same target, at `url`."""
        return self._row(
            event_id=original["event_id"],
            event_type=original["event_type"],
            company_id=original["company_id"],
            mode=original["mode"],
            endpoint_id=original["endpoint_id"],
            target=original["target"],
            url=url,
            origin=origin,
        )

    def _row(
        self,
        *,
        event_id: str,
        event_type: str,
        company_id: str,
        mode: str,
        endpoint_id: str | None,
        target: str,
        url: str,
        origin: str,
    ) -> Row:
        now = iso(self._now)
        return {
            "id": delivery_id_for(event_id, target, origin),
            "company_id": company_id,
            "mode": mode,
            "event_id": event_id,
            "event_type": event_type,
            "endpoint_id": endpoint_id,
            "target": target,
            "origin": origin,
            "url": url,
            "status": "PENDING",
            "attempts": 0,
            "next_attempt_at": now,
            "last_attempt_at": None,
            "last_status_code": None,
            "last_error": None,
            "created_at": now,
            "updated_at": now,
        }

    async def targets(self, event: Row, origin: str) -> list[Row]:
        """One new delivery row per target: a payment's own webhookUrl receives its events
        instead of the company's endpoints (decisions 10); otherwise every enabled endpoint
        subscribed to the event's type, as it is now."""
        endpoints = await queries.endpoints_for_event(
            self.context.database, event["company_id"], event["mode"]
        )
        return [row for row, _ in self._plan(event, origin, endpoints)]

    def _plan(self, event: Row, origin: str, endpoints: list[Row]) -> list[tuple[Row, Row | None]]:
        """The event's delivery rows, each with its endpoint (None for a payment's own URL)."""
        data: dict[str, Any] = orjson.loads(event["data"])
        obj = data.get("data", {}).get("object", {})
        own_url = obj.get("webhookUrl") if event["type"].startswith("payment.") else None
        if own_url:
            targets: list[tuple[Row | None, str, str]] = [
                (None, f"payment:{obj.get('id')}", str(own_url))
            ]
        else:
            targets = [
                (e, e["id"], e["url"])
                for e in endpoints
                if subscribed(orjson.loads(e["events"]), event["type"])
            ]
        return [
            (
                self._row(
                    event_id=event["id"],
                    event_type=event["type"],
                    company_id=event["company_id"],
                    mode=event["mode"],
                    endpoint_id=None if endpoint is None else endpoint["id"],
                    target=target,
                    url=url,
                    origin=origin,
                ),
                endpoint,
            )
            for endpoint, target, url in targets
        ]

    # -- attempts ----------------------------------------------------------------------------

    async def attempt(self, job: AttemptJob) -> None:
        assert self.dispatcher is not None
        if not await ask(self.dispatcher, Room(job.lane)):
            raise Full(job.lane)  # before any read: a flooded lane refuses most of its attempts
        db = self.context.database
        delivery = await queries.delivery(db, job.delivery_id)
        if delivery is None or delivery["status"] not in ("PENDING", "RETRYING"):
            return  # gone with retention, or finished by a copy of this message
        if delivery["attempts"] >= job.attempt:
            return  # this attempt was made (a redelivered or duplicated message)
        behind = delivery["attempts"] < job.attempt - 1
        if behind and self._now.timestamp() * 1000 - job.due_ms < RECORD_GRACE * 1000:
            # The previous attempt published this retry before recording its own outcome (so
            # a crash cannot lose the retry); a short retry delay can arrive first. Making the
            # attempt now would repeat the previous one under its number: wait for the record.
            # Past the grace the record is taken as lost (a crash) and the attempt is made.
            await self.defer(job, RECORD_WAIT)
            return
        number = delivery["attempts"] + 1
        event = await event_queries.event_by_id(db, delivery["event_id"])
        secrets, refusal = await self._secrets(delivery)
        await self._make(delivery, number, event, secrets, refusal, job.lane)

    async def _make(
        self,
        delivery: Row,
        number: int,
        event: Row | None,
        secrets: list[str],
        refusal: str | None,
        lane: str,
    ) -> None:
        """Attempt `number` of the delivery: POST it (holding a slot of its lane) and record
        the answer. Raises Full, having done nothing, when the lane has too many waiting."""
        if event is None:
            answer, duration = Answer(None, "the event is past its retention", abort=True), 0
        elif refusal is not None:
            answer, duration = Answer(None, refusal, abort=True), 0
        else:
            body = event_body(event)
            assert self.dispatcher is not None
            async with slot(self.dispatcher, lane):
                sent = await self.sender.send(
                    delivery["url"],
                    body,
                    secrets,
                    event_id=delivery["event_id"],
                    delivery_id=delivery["id"],
                    attempt=number,
                    now=self._now,
                )
            answer, duration = sent.answer, sent.duration_ms
        await self._settle(delivery, number, answer, duration, lane)

    async def _default_secret(self, company_id: str, mode: str) -> str:
        return await default_secret(self.context, self.keyring, company_id, mode)

    async def _secrets(self, delivery: Row) -> tuple[list[str], str | None]:
        """The secrets to sign with, newest first; or why the delivery cannot be made."""
        if delivery["endpoint_id"] is None:
            return [await self._default_secret(delivery["company_id"], delivery["mode"])], None
        endpoint = await queries.endpoint(
            self.context.database, delivery["company_id"], delivery["mode"], delivery["endpoint_id"]
        )
        if endpoint is None:
            return [], "the endpoint was deleted"
        if endpoint["status"] != "enabled":
            return [], "the endpoint is disabled"
        return self._endpoint_secrets(endpoint), None

    def _endpoint_secrets(self, endpoint: Row) -> list[str]:
        secrets = [self.keyring.unseal(endpoint["secret"], SECRET_PURPOSE).decode()]
        expires = endpoint["previous_secret_expires_at"]
        if endpoint["previous_secret"] and expires and expires > iso(self._now):
            secrets.append(
                self.keyring.unseal(endpoint["previous_secret"], SECRET_PURPOSE).decode()
            )
        return secrets

    async def _settle(
        self, delivery: Row, number: int, answer: Answer, duration_ms: int, lane: str
    ) -> None:
        now = self._now
        next_state = after_attempt(number, answer, now, self.retry_scale)
        if next_state.status == "RETRYING":
            assert next_state.due is not None
            retry = AttemptJob(delivery["id"], number + 1, _ms(next_state.due), lane)
            delay = (next_state.due - now).total_seconds()
            await self.broker.publish(self.topology.attempts, retry.encode(), delay=delay)
        elif next_state.status == "DEAD":
            await self.broker.publish(
                self.topology.dead,
                orjson.dumps(
                    {"delivery": delivery["id"], "event": delivery["event_id"], "at": iso(now)}
                ),
            )
        statements = store.delivery_outcome(
            delivery["id"],
            number,
            status=next_state.status,
            next_attempt_at=iso(next_state.due) if next_state.due is not None else None,
            at=iso(now),
            status_code=answer.status,
            error=answer.error,
            duration_ms=duration_ms,
        )
        endpoint_id = delivery["endpoint_id"]
        disabling: str | None = None
        if endpoint_id is not None:
            statements.append(store.endpoint_failing(endpoint_id, not answer.succeeded, iso(now)))
        if endpoint_id is not None and next_state.disable_endpoint:
            disabling = "gone (HTTP 410)"
            statements.append(store.endpoint_disable(endpoint_id, disabling, iso(now)))
        elif endpoint_id is not None and not answer.succeeded:
            # Five days of nothing but failures (scaled with the retry schedule, for tests).
            disabling = f"every delivery failed for {FAILING_DAYS_BEFORE_DISABLE} days"
            cutoff = now - timedelta(days=FAILING_DAYS_BEFORE_DISABLE) * self.retry_scale
            statements.append(
                store.endpoint_disable(endpoint_id, disabling, iso(now), failing_before=iso(cutoff))
            )
        if disabling is not None:
            event = event_row(
                company_id=delivery["company_id"],
                mode=delivery["mode"],
                event_type="webhook.endpoint_disabled",
                created_at=iso(now),
                obj={"endpointId": endpoint_id, "reason": disabling},
            )
            statements.append(store.disabled_event(event, str(endpoint_id), iso(now)))
        rows = await self.context.commit(*statements)
        if not rows[0]:
            return  # a copy of this attempt was recorded first
        disabled = rows[-2] if disabling is not None else []
        if disabled and self.on_disabled is not None:
            await self.on_disabled(disabled[0], str(disabling))

    async def sweep(self, shards: list[int] | None, overdue: timedelta, limit: int = 500) -> int:
        """Publish again the next attempt of every open delivery overdue by more than
        `overdue`: its message was lost. A copy of a message that was not lost is harmless (an
        attempt is made once per number). How many it found."""
        before = iso(self._now - overdue)
        rows = await queries.stale_deliveries(self.context.database, before, shards, limit)
        await self.republish(rows, keep_due=False)
        return len(rows)

    async def republish(self, rows: list[Row], *, keep_due: bool) -> None:
        """Publish the next attempt of each open delivery: due when its row says (`keep_due`),
        or now."""
        for row in rows:
            due = parse_iso(row["next_attempt_at"] or row["created_at"]) if keep_due else self._now
            job = AttemptJob(row["id"], row["attempts"] + 1, _ms(due), _lane(row))
            await self.broker.publish(self.topology.attempts, job.encode())

    def due(self, job: AttemptJob) -> float:
        """Seconds until the attempt is due (0 when it is)."""
        return max(0.0, job.due_ms / 1000 - self._now.timestamp())

    async def defer(self, job: AttemptJob, delay: float) -> None:
        await self.broker.publish(self.topology.attempts, job.encode(), delay=delay)


def _lane(row: Row) -> str:
    return str(row["endpoint_id"]) if row["endpoint_id"] is not None else lane_of(row["url"])


def _ms(when: datetime) -> int:
    return round(when.timestamp() * 1000)
