"""Webhook deliveries as pure rules (decisions 10): the retry schedule, and what one attempt's
answer does to a delivery.

Vocabulary:
- an **endpoint** is a URL a company registered with the event types it wants;
- a **delivery** is one event on its way to one target (an endpoint, or a payment's own
  webhookUrl): PENDING until its first answer, then SUCCEEDED, RETRYING or DEAD;
- an **attempt** is one POST of a delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mps.domain import purposes

__all__ = [
    "DELIVERY_STATES",
    "EVENT_TYPES",
    "RETRY_OFFSETS",
    "SECRET_PURPOSE",
    "Answer",
    "Next",
    "after_attempt",
    "known_event_type",
    "known_subscription",
    "retry_after_seconds",
    "subscribed",
]

DELIVERY_STATES = ("PENDING", "SUCCEEDED", "RETRYING", "DEAD")

# The keyring purpose signing secrets are sealed under at rest (a name, not a secret).
SECRET_PURPOSE = purposes.WEBHOOK_SECRET

# The wait before each attempt after the first, from the previous attempt: +1 min, +5 min,
# +30 min, +2 h, +6 h, +12 h, +24 h; eight attempts in all, then DEAD.
RETRY_OFFSETS: tuple[timedelta, ...] = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=6),
    timedelta(hours=12),
    timedelta(hours=24),
)

# Days in a row of nothing but failures after which an endpoint is disabled (as Svix does).
FAILING_DAYS_BEFORE_DISABLE = 5


@dataclass(frozen=True, slots=True)
class Answer:
    """How the receiver answered one attempt: a status code, or no answer at all (`error`)."""

    status: int | None
    error: str | None = None
    # The receiver's Retry-After on a 429 or 503, in seconds.
    retry_after: float | None = None
    # The receiver answered `webhook-delivery: abort`: stop retrying this delivery.
    abort: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class Next:
    """What a delivery becomes after an attempt."""

    status: str
    # When the next attempt is due (RETRYING only).
    due: datetime | None = None
    # The endpoint must be disabled (the receiver answered 410 Gone).
    disable_endpoint: bool = False


def after_attempt(attempt: int, answer: Answer, at: datetime, scale: float) -> Next:
    """The delivery's state after its `attempt`-th attempt (1-based) was answered `answer` at
    `at`. Retry waits are multiplied by `scale` (MPS_WEBHOOK_RETRY_SCALE); a receiver's
    Retry-After may make a wait longer, never shorter than the schedule's."""
    if answer.succeeded:
        return Next("SUCCEEDED")
    if answer.status == 410:
        return Next("DEAD", disable_endpoint=True)
    if answer.abort or attempt > len(RETRY_OFFSETS):
        return Next("DEAD")
    wait = RETRY_OFFSETS[attempt - 1] * scale
    if answer.retry_after is not None and answer.status in (429, 503):
        wait = max(wait, timedelta(seconds=answer.retry_after))
    return Next("RETRYING", due=at + wait)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """A Retry-After header as seconds from `now`: delta-seconds or an HTTP date; None when
    absent or unreadable (the schedule then decides alone)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


# The event catalog (decisions 10). An endpoint subscribes to names from it, to a family
# (`invoice.*`: every event of invoices, including those added later), or to `*`.
EVENT_TYPES: tuple[str, ...] = (
    "payment.created",
    "payment.completed",
    "payment.failed",
    "payment.expired",
    "payment.cancelled",
    "payment.refunded",
    "payment.partially_refunded",
    "payment.reversed",
    "refund.created",
    "refund.completed",
    "refund.rejected",
    "payout.created",
    "payout.paid",
    "payout.failed",
    "payout.cancelled",
    "customer.created",
    "kyc.verified",
    "kyc.rejected",
    "webhook.ping",
    "webhook.endpoint_disabled",
)
EVENT_FAMILIES: tuple[str, ...] = (
    "payment",
    "refund",
    "payout",
    "card",
    "invoice",
    "customer",
    "approval",
    "kyc",
    "webhook",
)


def known_event_type(name: str) -> bool:
    """Whether events of type `name` can exist: one of the catalog, or any type of a family the
    catalog lists no types for (`card.authorization`, `invoice.sent`)."""
    if name in EVENT_TYPES:
        return True
    family, dot, rest = name.partition(".")
    listed = any(t.startswith(f"{family}.") for t in EVENT_TYPES)
    return bool(dot and rest) and family in EVENT_FAMILIES and not listed


def known_subscription(name: str) -> bool:
    """Whether an endpoint may subscribe to `name`."""
    if name == "*" or name in EVENT_TYPES:
        return True
    family, _, rest = name.partition(".")
    return rest == "*" and family in EVENT_FAMILIES


def subscribed(events: Sequence[str], event_type: str) -> bool:
    """Whether an endpoint listening for `events` wants `event_type`."""
    if "*" in events or event_type in events:
        return True
    return f"{event_type.partition('.')[0]}.*" in events
