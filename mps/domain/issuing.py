"""Virtual cards (decisions 6): their controls, numbers, states and authorizations, as pure
functions.

Vocabulary:
    ACTIVE       usable: authorizations are checked against its balance and controls
    FROZEN       paused by the company; every authorization is declined (`card_frozen`),
                 and it can be unfrozen
    TERMINATED   closed for good; declined like a frozen card, and no transition leaves it

    member card  issued to a team member (`memberId`); a company card has no member
    controls     spending limits (at most one per interval, at most 10) and merchant
                 categories allowed or blocked
    interval     what a limit counts: `per_transaction` (the amount alone), `daily`, `weekly`
                 and `monthly` (approvals since midnight UTC, Monday midnight UTC, the first of
                 the month UTC) or `all_time` (every approval the card ever had)
    category     a merchant category as Stripe Issuing names it (`CATEGORIES`, kept in
                 mps.domain.merchant_categories: all 294 names of the `merchant_data.category`
                 enum, the list of Stripe's "Issuing merchant categories" page)

An authorization is approved (the caller debits the card's balance) or declined with one
reason, checked in this fixed order: `card_frozen`, `insufficient_funds`, `spending_limit`,
`category_blocked`. Interval limits count the amounts of earlier approvals in the interval,
which the caller supplies (`spent_since`); declined attempts count for nothing.

Card numbers are 16 Luhn-valid digits from the test BIN 400000 (Visa's test range); the
caller supplies the random digits, from a CSPRNG in the service. Nothing here reads the clock
or does I/O: the caller passes `now`. The card's actor applies these one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from mps.domain.cards import luhn_check_digit, luhn_valid
from mps.domain.clock import iso
from mps.domain.company import InMode
from mps.domain.merchant_categories import CATEGORIES
from mps.domain.money import format_money, parse_amount_minor
from mps.errors import Conflict, FieldError, ValidationFailed

__all__ = [
    "CARD_STATUSES",
    "CARD_TYPES",
    "CATEGORIES",
    "DECLINE_REASONS",
    "INTERVALS",
    "MAX_SPENDING_LIMITS",
    "TEST_BIN",
    "Card",
    "Controls",
    "Decline",
    "SpendingLimit",
    "authorize",
    "expiry",
    "freeze",
    "new_card_number",
    "new_cvc",
    "terminate",
    "unfreeze",
    "update_controls",
    "validate_controls",
    "window_start",
]

CARD_TYPES = ("member", "company")
CARD_STATUSES = ("ACTIVE", "FROZEN", "TERMINATED")
INTERVALS = ("per_transaction", "daily", "weekly", "monthly", "all_time")
# In the order authorize checks them.
DECLINE_REASONS = ("card_frozen", "insufficient_funds", "spending_limit", "category_blocked")
MAX_SPENDING_LIMITS = 10
TEST_BIN = "400000"
CARD_NUMBER_LENGTH = 16
CVC_LENGTH = 3
EXPIRY_YEARS = 3


@dataclass(frozen=True)
class SpendingLimit:
    amount_minor: int
    interval: str


@dataclass(frozen=True)
class Controls:
    spending_limits: tuple[SpendingLimit, ...] = ()
    allowed_categories: tuple[str, ...] = ()
    blocked_categories: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The contract's camelCase form, amounts as strings."""
        return {
            "spendingLimits": [
                {"amountMinor": str(limit.amount_minor), "interval": limit.interval}
                for limit in self.spending_limits
            ],
            "allowedCategories": list(self.allowed_categories),
            "blockedCategories": list(self.blocked_categories),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Controls:
        """Back from `to_json`'s form (stored snapshots): trusted, not validated; a missing
        list is empty. Requests go through `validate_controls`."""
        return cls(
            spending_limits=tuple(
                SpendingLimit(int(limit["amountMinor"]), limit["interval"])
                for limit in raw.get("spendingLimits") or ()
            ),
            allowed_categories=tuple(raw.get("allowedCategories") or ()),
            blocked_categories=tuple(raw.get("blockedCategories") or ()),
        )


@dataclass(frozen=True)
class Card(InMode):
    id: str
    company_id: str
    mode: str
    type: str
    cardholder_name: str | None
    nickname: str | None
    # The member a member card is issued to; None for a company card.
    member_id: str | None
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    currency: str
    status: str
    controls: Controls
    created_at: str
    updated_at: str
    version: int = 1


@dataclass(frozen=True)
class Decline:
    reason: str  # one of DECLINE_REASONS
    message: str


# Controls --------------------------------------------------------------------------------------

_AMOUNT_MESSAGE = "must be a positive integer string of minor units, 1 to 999999999999"


def _categories(
    raw: Any, path: str, errors: list[FieldError]
) -> tuple[tuple[str, ...], dict[str, int]]:
    """The list's names once each, in their order, and where each name first appears."""
    names: list[str] = []
    first_at: dict[str, int] = {}
    for i, name in enumerate(raw or ()):
        if not isinstance(name, str) or name not in CATEGORIES:
            errors.append(FieldError(f"{path}[{i}]", "is not a merchant category"))
        elif name not in first_at:
            first_at[name] = i
            names.append(name)
    return tuple(names), first_at


def validate_controls(raw: Mapping[str, Any]) -> Controls:
    """The controls a request asks for (`raw` is its `controls` object, shaped by the schema
    layer: lists of objects and strings, amounts still the strings the API received). A missing
    list is empty; a category named twice in one list counts once.

    Raises ValidationFailed with every offending field, under `controls.`: an amount that is not
    1..999999999999, an unknown interval, a second limit for one interval, more than 10 limits,
    an unknown category, and a category both allowed and blocked (reported on the blocked one).
    """
    errors: list[FieldError] = []
    raw_limits = raw.get("spendingLimits") or ()
    if len(raw_limits) > MAX_SPENDING_LIMITS:
        errors.append(
            FieldError("controls.spendingLimits", f"must have at most {MAX_SPENDING_LIMITS} items")
        )
    limits: list[SpendingLimit] = []
    seen: set[str] = set()
    for i, item in enumerate(raw_limits):
        path = f"controls.spendingLimits[{i}]"
        text = item.get("amountMinor")
        amount = parse_amount_minor(text) if isinstance(text, str) else None
        if amount is None:
            errors.append(FieldError(f"{path}.amountMinor", _AMOUNT_MESSAGE))
        interval = item.get("interval")
        if not isinstance(interval, str) or interval not in INTERVALS:
            errors.append(FieldError(f"{path}.interval", f"must be one of {', '.join(INTERVALS)}"))
        elif interval in seen:
            msg = f"must not repeat an interval: there is already a {interval} limit"
            errors.append(FieldError(f"{path}.interval", msg))
        else:
            seen.add(interval)
            if amount is not None:
                limits.append(SpendingLimit(amount, interval))
    allowed, _ = _categories(raw.get("allowedCategories"), "controls.allowedCategories", errors)
    blocked, blocked_at = _categories(
        raw.get("blockedCategories"), "controls.blockedCategories", errors
    )
    for name in blocked:
        if name in allowed:
            path = f"controls.blockedCategories[{blocked_at[name]}]"
            errors.append(FieldError(path, f"{name} is also in allowedCategories"))
    if errors:
        raise ValidationFailed(errors)
    return Controls(tuple(limits), allowed, blocked)


# Numbers ---------------------------------------------------------------------------------------


def _digits(random_digits: Callable[[int], str], count: int) -> str:
    digits = random_digits(count)
    if len(digits) != count or not digits.isascii() or not digits.isdigit():
        msg = f"random_digits({count}) returned {len(digits)} characters, not {count} digits"
        raise ValueError(msg)
    return digits


def new_card_number(random_digits: Callable[[int], str]) -> str:
    """16 digits: the test BIN, 9 random digits and the Luhn check digit. `random_digits(n)`
    returns n random decimal digits (a CSPRNG in the service)."""
    payload = TEST_BIN + _digits(random_digits, CARD_NUMBER_LENGTH - len(TEST_BIN) - 1)
    number = payload + luhn_check_digit(payload)
    assert luhn_valid(number)
    return number


def new_cvc(random_digits: Callable[[int], str]) -> str:
    return _digits(random_digits, CVC_LENGTH)


def expiry(now: datetime) -> tuple[int, int]:
    """(month, year): this month (UTC), three years ahead."""
    utc = _utc(now)
    return utc.month, utc.year + EXPIRY_YEARS


# States ----------------------------------------------------------------------------------------


def _require(card: Card, allowed: tuple[str, ...], action: str) -> None:
    if card.status not in allowed:
        wanted = " or ".join(allowed)
        msg = f"Cannot {action} a card that is {card.status}; it must be {wanted}"
        raise Conflict(msg, code="invalid_state")


def _bump(card: Card, now: datetime, **changes: object) -> Card:
    return replace(card, version=card.version + 1, updated_at=iso(now), **changes)  # type: ignore[arg-type]


def freeze(card: Card, now: datetime) -> Card:
    _require(card, ("ACTIVE",), "freeze")
    return _bump(card, now, status="FROZEN")


def unfreeze(card: Card, now: datetime) -> Card:
    _require(card, ("FROZEN",), "unfreeze")
    return _bump(card, now, status="ACTIVE")


def terminate(card: Card, now: datetime) -> Card:
    """Final: no transition leaves TERMINATED."""
    _require(card, ("ACTIVE", "FROZEN"), "terminate")
    return _bump(card, now, status="TERMINATED")


def update_controls(card: Card, controls: Controls, now: datetime) -> Card:
    _require(card, ("ACTIVE", "FROZEN"), "update the controls of")
    return _bump(card, now, controls=controls)


# Authorizations --------------------------------------------------------------------------------


def _utc(moment: datetime) -> datetime:
    """The instant in UTC; a naive time is taken as UTC already (as parse_iso does)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def window_start(interval: str, now: datetime) -> datetime | None:
    """Where an interval limit starts counting at `now` (UTC): `daily` midnight today, `weekly`
    Monday's midnight, `monthly` the first of the month's midnight; None for `all_time` (every
    approval ever). `per_transaction` has no window (the amount alone counts) and, like an
    unknown interval, raises ValueError."""
    utc = _utc(now)
    midnight = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "daily":
        return midnight
    if interval == "weekly":
        return midnight - timedelta(days=midnight.weekday())
    if interval == "monthly":
        return midnight.replace(day=1)
    if interval == "all_time":
        return None
    msg = f"{interval!r} is not an interval with a window"
    raise ValueError(msg)


def _over_limit(
    card: Card, amount: int, spent_since: Callable[[datetime | None], int], now: datetime
) -> Decline | None:
    limits = sorted(
        card.controls.spending_limits, key=lambda limit: INTERVALS.index(limit.interval)
    )
    for limit in limits:
        if limit.interval == "per_transaction":
            total = amount
        else:
            total = spent_since(window_start(limit.interval, now)) + amount
        if total > limit.amount_minor:
            what = limit.interval.replace("_", "-")
            msg = (
                f"The authorization would exceed the card's {what} spending limit "
                f"({format_money(limit.amount_minor, card.currency)})"
            )
            return Decline("spending_limit", msg)
    return None


def authorize(
    card: Card,
    balance: int,
    amount: int,
    category: str | None,
    spent_since: Callable[[datetime | None], int],
    now: datetime,
) -> Decline | None:
    """None when `amount` is approved (the caller then debits the card's `balance`), else the
    first reason to decline in the fixed order: `card_frozen` (the card is not ACTIVE),
    `insufficient_funds`, `spending_limit` (the amount is over a per-transaction limit, or with
    what was spent in an interval's window is over that interval's limit), `category_blocked`
    (the category is blocked, or not among the allowed ones when some are; a missing category,
    None, passes only when no categories are allowed).

    `spent_since(start)` is what earlier approved authorizations of this card spent since
    `start` (None: ever); it is called only when a limit needs it.
    """
    if card.status != "ACTIVE":
        return Decline("card_frozen", f"The card is {card.status}")
    if amount > balance:
        msg = f"The card's balance ({format_money(balance, card.currency)}) is less than the amount"
        return Decline("insufficient_funds", msg)
    over = _over_limit(card, amount, spent_since, now)
    if over is not None:
        return over
    controls = card.controls
    if category is not None and category in controls.blocked_categories:
        return Decline("category_blocked", f"The card does not allow {category} merchants")
    if controls.allowed_categories and category not in controls.allowed_categories:
        named = f"{category} merchants" if category is not None else "merchants of no category"
        return Decline("category_blocked", f"The card allows only some categories, not {named}")
    return None
