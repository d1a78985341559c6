"""Virtual cards' rules (mps.domain.issuing) without I/O: controls as requests give them, card
numbers, state transitions, interval windows and authorizations declined in a fixed order."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mps.domain.cards import brand_of, luhn_valid
from mps.domain.clock import iso
from mps.domain.issuing import (
    CATEGORIES,
    DECLINE_REASONS,
    INTERVALS,
    Card,
    Controls,
    Decline,
    SpendingLimit,
    authorize,
    expiry,
    freeze,
    new_card_number,
    new_cvc,
    terminate,
    unfreeze,
    update_controls,
    validate_controls,
    window_start,
)
from mps.errors import Conflict, FieldError, ValidationFailed
from mps.http.statuses import status_of

# A Monday.
NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _card(status: str = "ACTIVE", controls: Controls | None = None) -> Card:
    return Card(
        id="card_1",
        company_id="co_1",
        mode="test",
        type="member",
        cardholder_name="Ada Obi",
        nickname="Travel",
        member_id="mem_1",
        brand="visa",
        last4="0002",
        exp_month=11,
        exp_year=2029,
        currency="USD",
        status=status,
        controls=controls or Controls(),
        created_at=iso(NOW),
        updated_at=iso(NOW),
    )


def _limited(
    *limits: tuple[int, str], allowed: tuple[str, ...] = (), blocked: tuple[str, ...] = ()
) -> Card:
    spending = tuple(SpendingLimit(amount, interval) for amount, interval in limits)
    return _card(controls=Controls(spending, allowed, blocked))


def _nothing_spent(start: datetime | None) -> int:
    return 0


def _never_asked(start: datetime | None) -> int:
    raise AssertionError("spent_since was asked although no limit needed it")


class _Approvals:
    """Earlier approved authorizations of one card, as the caller's spent_since sees them."""

    def __init__(self, *approved: tuple[str, int]) -> None:
        self.approved = [(_at(at), amount) for at, amount in approved]
        self.asked: list[datetime | None] = []

    def spent_since(self, start: datetime | None) -> int:
        self.asked.append(start)
        return sum(amount for at, amount in self.approved if start is None or at >= start)


def _authorize(
    card: Card,
    amount: int,
    *,
    balance: int = 1_000_000,
    category: str | None = "eating_places_restaurants",
    spent_since: Callable[[datetime | None], int] = _nothing_spent,
    now: datetime = NOW,
) -> Decline | None:
    return authorize(card, balance, amount, category, spent_since, now)


def _reason(decision: Decline | None) -> str | None:
    return None if decision is None else decision.reason


def _errors(raw: dict) -> list[FieldError]:
    with pytest.raises(ValidationFailed) as caught:
        validate_controls(raw)
    return caught.value.errors


def _fields(raw: dict) -> list[str]:
    return [error.field for error in _errors(raw)]


# Categories ------------------------------------------------------------------------------------


def test_categories_are_stripe_issuings_complete_list_of_merchant_category_names() -> None:
    assert len(CATEGORIES) == 294
    assert {
        "ac_refrigeration_repair",
        "accounting_bookkeeping_services",
        "airlines_air_carriers",
        "betting_casino_gambling",
        "eating_places_restaurants",
        "fast_food_restaurants",
        "grocery_stores_supermarkets",
        "taxicabs_limousines",
        "wrecking_and_salvage_yards",
    } <= CATEGORIES
    assert all(name.isascii() and name == name.lower() and " " not in name for name in CATEGORIES)


# Authorizations: each reason -------------------------------------------------------------------


def test_an_active_card_with_balance_and_no_controls_approves() -> None:
    assert _authorize(_card(), 5000, balance=5000, spent_since=_never_asked) is None


@pytest.mark.parametrize("status", ["FROZEN", "TERMINATED"])
def test_a_card_that_is_not_active_declines_as_card_frozen(status: str) -> None:
    decision = _authorize(_card(status), 100)

    assert decision is not None
    assert decision.reason == "card_frozen"
    assert status in decision.message


def test_an_amount_over_the_balance_declines_as_insufficient_funds() -> None:
    decision = _authorize(_card(), 5001, balance=5000)

    assert decision is not None
    assert decision.reason == "insufficient_funds"
    assert "50.00 USD" in decision.message


def test_an_amount_over_the_per_transaction_limit_declines_as_spending_limit() -> None:
    card = _limited((2500, "per_transaction"))

    assert _authorize(card, 2500, spent_since=_never_asked) is None
    decision = _authorize(card, 2501, spent_since=_never_asked)
    assert decision is not None
    assert decision.reason == "spending_limit"
    assert "per-transaction" in decision.message
    assert "25.00 USD" in decision.message


def test_a_blocked_category_declines_as_category_blocked() -> None:
    card = _limited(blocked=("betting_casino_gambling",))

    assert _reason(_authorize(card, 100, category="betting_casino_gambling")) == "category_blocked"
    assert _authorize(card, 100, category="airlines_air_carriers") is None


def test_a_category_outside_the_allowed_ones_declines_as_category_blocked() -> None:
    card = _limited(allowed=("airlines_air_carriers", "taxicabs_limousines"))

    assert _reason(_authorize(card, 100, category="fast_food_restaurants")) == "category_blocked"
    assert _authorize(card, 100, category="taxicabs_limousines") is None


def test_a_missing_category_passes_only_when_no_categories_are_allowed() -> None:
    only_blocked = _limited(blocked=("betting_casino_gambling",))
    only_allowed = _limited(allowed=("airlines_air_carriers",))

    assert _authorize(_card(), 100, category=None) is None
    assert _authorize(only_blocked, 100, category=None) is None
    assert _reason(_authorize(only_allowed, 100, category=None)) == "category_blocked"


# Authorizations: the order ---------------------------------------------------------------------


def test_decline_reasons_are_listed_in_the_order_they_are_checked() -> None:
    assert DECLINE_REASONS == (
        "card_frozen",
        "insufficient_funds",
        "spending_limit",
        "category_blocked",
    )


def test_a_frozen_card_with_no_balance_is_card_frozen() -> None:
    decision = _authorize(_card("FROZEN"), 100, balance=0, spent_since=_never_asked)

    assert _reason(decision) == "card_frozen"


def test_a_terminated_card_failing_every_check_is_card_frozen() -> None:
    card = replace(
        _limited((50, "per_transaction"), blocked=("betting_casino_gambling",)),
        status="TERMINATED",
    )

    decision = _authorize(card, 100, balance=0, category="betting_casino_gambling")

    assert _reason(decision) == "card_frozen"


def test_an_over_limit_amount_beyond_the_balance_is_insufficient_funds() -> None:
    card = _limited((50, "daily"))

    decision = _authorize(card, 100, balance=99, spent_since=_never_asked)

    assert _reason(decision) == "insufficient_funds"


def test_an_over_limit_amount_in_a_blocked_category_is_spending_limit() -> None:
    card = _limited((50, "per_transaction"), blocked=("betting_casino_gambling",))

    decision = _authorize(card, 100, category="betting_casino_gambling")

    assert _reason(decision) == "spending_limit"


def test_an_over_limit_amount_outside_the_allowed_categories_is_spending_limit() -> None:
    card = _limited((50, "monthly"), allowed=("airlines_air_carriers",))

    decision = _authorize(card, 100, category="betting_casino_gambling")

    assert _reason(decision) == "spending_limit"


# Authorizations: limits counting earlier spend -------------------------------------------------


@pytest.mark.parametrize(
    ("interval", "earlier", "now", "room", "start"),
    [
        # Today's approvals count, not yesterday's last instant.
        pytest.param(
            "daily",
            (("2026-11-22T23:59:59.999+00:00", 9000), ("2026-11-23T00:00:00+00:00", 6000)),
            NOW,
            4000,
            "2026-11-23T00:00:00+00:00",
            id="daily",
        ),
        # On a Thursday: Monday's approvals count, not the Sunday's before.
        pytest.param(
            "weekly",
            (("2026-11-22T20:00:00+00:00", 9000), ("2026-11-23T08:00:00+00:00", 7000)),
            _at("2026-11-26T12:00:00+00:00"),
            3000,
            "2026-11-23T00:00:00+00:00",
            id="weekly",
        ),
        # This month's approvals count from the first, not last month's.
        pytest.param(
            "monthly",
            (("2026-10-31T23:00:00+00:00", 9000), ("2026-11-01T00:00:00+00:00", 2000)),
            NOW,
            8000,
            "2026-11-01T00:00:00+00:00",
            id="monthly",
        ),
        # Every approval the card ever had counts.
        pytest.param(
            "all_time",
            (("2020-01-01T00:00:00+00:00", 5000), ("2026-11-23T09:00:00+00:00", 4000)),
            NOW,
            1000,
            None,
            id="all_time",
        ),
    ],
)
def test_a_limit_counts_the_approvals_inside_its_window_and_none_before(
    interval: str,
    earlier: tuple[tuple[str, int], ...],
    now: datetime,
    room: int,
    start: str | None,
) -> None:
    # given a limit of 100.00 and earlier approvals, some inside its window and some before
    card = _limited((10_000, interval))
    spend = _Approvals(*earlier)

    # then what is left of it is approved, a cent more declined, and the window asked for
    assert _authorize(card, room, spent_since=spend.spent_since, now=now) is None
    decision = _authorize(card, room + 1, spent_since=spend.spent_since, now=now)
    assert _reason(decision) == "spending_limit"
    assert spend.asked == [None if start is None else _at(start)] * 2


def test_approvals_add_up_until_the_limit_declines_the_next_one() -> None:
    card = _limited((10_000, "daily"))
    spend = _Approvals()
    decisions = []
    for minute, amount in enumerate([4000, 4000, 2500, 2000]):
        now = NOW + timedelta(minutes=minute)
        decision = _authorize(card, amount, spent_since=spend.spent_since, now=now)
        decisions.append(_reason(decision))
        if decision is None:
            spend.approved.append((now, amount))

    assert decisions == [None, None, "spending_limit", None]


def test_the_tightest_of_several_limits_declines_and_is_named() -> None:
    card = _limited((5000, "per_transaction"), (20_000, "daily"), (30_000, "monthly"))
    spend = _Approvals(("2026-11-20T10:00:00+00:00", 26_000))

    decision = _authorize(card, 4500, spent_since=spend.spent_since)

    assert decision is not None
    assert decision.reason == "spending_limit"
    assert "monthly" in decision.message
    assert "300.00 USD" in decision.message


# Interval windows ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interval", "now", "start"),
    [
        # A day starts at midnight UTC.
        ("daily", "2026-11-23T10:00:00+00:00", "2026-11-23T00:00:00+00:00"),
        ("daily", "2026-11-23T00:00:00+00:00", "2026-11-23T00:00:00+00:00"),
        ("daily", "2026-11-30T23:59:59.999+00:00", "2026-11-30T00:00:00+00:00"),
        ("daily", "2026-12-01T00:00:00+00:00", "2026-12-01T00:00:00+00:00"),
        ("daily", "2026-12-31T23:59:59.999+00:00", "2026-12-31T00:00:00+00:00"),
        ("daily", "2027-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
        # 23:00 on 31 December in UTC.
        ("daily", "2027-01-01T01:00:00+02:00", "2026-12-31T00:00:00+00:00"),
        # A week starts at Monday's midnight UTC: Monday itself, from its first instant.
        ("weekly", "2026-11-23T00:00:00+00:00", "2026-11-23T00:00:00+00:00"),
        # Sunday's last instant still belongs to the week begun the Monday before.
        ("weekly", "2026-11-29T23:59:59.999+00:00", "2026-11-23T00:00:00+00:00"),
        # A Wednesday whose week began in the month before.
        ("weekly", "2026-12-02T09:00:00+00:00", "2026-11-30T00:00:00+00:00"),
        # New Year's Day 2027 is a Friday: its week began in 2026.
        ("weekly", "2027-01-01T12:00:00+00:00", "2026-12-28T00:00:00+00:00"),
        # Monday 00:30 at +01:00 is still Sunday in UTC.
        ("weekly", "2026-11-30T00:30:00+01:00", "2026-11-23T00:00:00+00:00"),
        # A month starts at midnight UTC on its first day.
        ("monthly", "2026-11-23T10:00:00+00:00", "2026-11-01T00:00:00+00:00"),
        ("monthly", "2026-11-30T23:59:59.999+00:00", "2026-11-01T00:00:00+00:00"),
        ("monthly", "2026-12-01T00:00:00+00:00", "2026-12-01T00:00:00+00:00"),
        ("monthly", "2026-12-31T23:59:59.999+00:00", "2026-12-01T00:00:00+00:00"),
        ("monthly", "2027-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
        ("monthly", "2028-02-29T18:00:00+00:00", "2028-02-01T00:00:00+00:00"),
        # 22:00 on 31 December in UTC.
        ("monthly", "2027-01-01T00:00:00+02:00", "2026-12-01T00:00:00+00:00"),
    ],
)
def test_a_window_starts_at_the_utc_midnight_that_begins_its_day_week_or_month(
    interval: str, now: str, start: str
) -> None:
    assert window_start(interval, _at(now)) == _at(start)


def test_an_all_time_window_has_no_start() -> None:
    assert window_start("all_time", NOW) is None


def test_windows_are_in_utc_whatever_zone_now_is_given_in() -> None:
    lagos = timezone(timedelta(hours=1))

    start = window_start("daily", datetime(2026, 11, 23, 0, 30, tzinfo=lagos))

    assert start == datetime(2026, 11, 22, tzinfo=UTC)
    assert start is not None
    assert start.tzinfo == UTC


@pytest.mark.parametrize("interval", ["per_transaction", "hourly", ""])
def test_per_transaction_and_unknown_intervals_have_no_window(interval: str) -> None:
    with pytest.raises(ValueError, match="not an interval with a window"):
        window_start(interval, NOW)


# Transitions -----------------------------------------------------------------------------------


def test_freezing_an_active_card_makes_it_frozen_with_the_next_version() -> None:
    frozen = freeze(_card(), LATER)

    assert frozen.status == "FROZEN"
    assert frozen.version == 2
    assert frozen.updated_at == iso(LATER)
    assert frozen.created_at == iso(NOW)


def test_unfreezing_a_frozen_card_makes_it_active_again() -> None:
    active = unfreeze(freeze(_card(), NOW), LATER)

    assert active.status == "ACTIVE"
    assert active.version == 3
    assert active.updated_at == iso(LATER)


@pytest.mark.parametrize("status", ["ACTIVE", "FROZEN"])
def test_an_active_or_frozen_card_can_be_terminated(status: str) -> None:
    terminated = terminate(_card(status), LATER)

    assert terminated.status == "TERMINATED"
    assert terminated.version == 2
    assert terminated.updated_at == iso(LATER)


@pytest.mark.parametrize("status", ["ACTIVE", "FROZEN"])
def test_controls_of_an_active_or_frozen_card_can_be_updated(status: str) -> None:
    controls = Controls((SpendingLimit(5000, "daily"),), (), ("betting_casino_gambling",))

    updated = update_controls(_card(status), controls, LATER)

    assert updated.controls == controls
    assert updated.status == status
    assert updated.version == 2
    assert updated.updated_at == iso(LATER)


@pytest.mark.parametrize(
    ("change", "status"),
    [
        (freeze, "FROZEN"),
        (freeze, "TERMINATED"),
        (unfreeze, "ACTIVE"),
        (unfreeze, "TERMINATED"),
        (terminate, "TERMINATED"),
    ],
)
def test_a_transition_from_the_wrong_state_is_a_409_naming_the_state(
    change: Callable[[Card, datetime], Card], status: str
) -> None:
    with pytest.raises(Conflict) as caught:
        change(_card(status), LATER)

    assert status_of(caught.value) == 409
    assert caught.value.code == "invalid_state"
    assert f"that is {status}" in caught.value.message


def test_updating_the_controls_of_a_terminated_card_is_a_409() -> None:
    with pytest.raises(Conflict) as caught:
        update_controls(_card("TERMINATED"), Controls(), LATER)

    assert status_of(caught.value) == 409
    assert caught.value.code == "invalid_state"
    assert "TERMINATED" in caught.value.message


def test_a_card_is_live_only_in_live_mode() -> None:
    assert not _card().livemode
    assert replace(_card(), mode="live").livemode


# Controls: validation and JSON -----------------------------------------------------------------


def test_valid_controls_become_typed_controls_with_parsed_amounts() -> None:
    controls = validate_controls(
        {
            "spendingLimits": [
                {"amountMinor": "5000", "interval": "per_transaction"},
                {"amountMinor": "999999999999", "interval": "monthly"},
            ],
            "allowedCategories": ["airlines_air_carriers", "taxicabs_limousines"],
            "blockedCategories": ["betting_casino_gambling"],
        }
    )

    assert controls == Controls(
        (SpendingLimit(5000, "per_transaction"), SpendingLimit(999_999_999_999, "monthly")),
        ("airlines_air_carriers", "taxicabs_limousines"),
        ("betting_casino_gambling",),
    )


def test_missing_or_empty_controls_are_no_controls() -> None:
    assert validate_controls({}) == Controls()
    empty: dict[str, list[str]] = {
        "spendingLimits": [],
        "allowedCategories": [],
        "blockedCategories": [],
    }
    assert validate_controls(empty) == Controls()


def test_one_limit_for_each_interval_is_accepted() -> None:
    limits = [{"amountMinor": "100", "interval": interval} for interval in INTERVALS]

    controls = validate_controls({"spendingLimits": limits})

    assert [limit.interval for limit in controls.spending_limits] == list(INTERVALS)


def test_a_category_named_twice_in_one_list_counts_once() -> None:
    controls = validate_controls({"allowedCategories": ["bakeries", "florists", "bakeries"]})

    assert controls.allowed_categories == ("bakeries", "florists")


def test_an_unknown_interval_is_refused_on_its_field() -> None:
    errors = _errors({"spendingLimits": [{"amountMinor": "100", "interval": "hourly"}]})

    assert [error.field for error in errors] == ["controls.spendingLimits[0].interval"]
    assert "per_transaction" in errors[0].message


@pytest.mark.parametrize(
    "amount", ["0", "-1", "01", "12.50", "1e3", "", " 100", "1000000000000", 100, None]
)
def test_an_amount_that_is_not_1_to_999999999999_as_a_string_is_refused(amount: object) -> None:
    raw = {"spendingLimits": [{"amountMinor": amount, "interval": "daily"}]}

    assert _fields(raw) == ["controls.spendingLimits[0].amountMinor"]


def test_a_second_limit_for_one_interval_is_refused_on_the_second() -> None:
    raw = {
        "spendingLimits": [
            {"amountMinor": "100", "interval": "daily"},
            {"amountMinor": "200", "interval": "weekly"},
            {"amountMinor": "300", "interval": "daily"},
        ]
    }

    errors = _errors(raw)

    assert [error.field for error in errors] == ["controls.spendingLimits[2].interval"]
    assert "daily" in errors[0].message


def test_more_than_ten_limits_are_refused_on_the_list() -> None:
    raw = {"spendingLimits": [{"amountMinor": "100", "interval": "daily"}] * 11}

    errors = _errors(raw)

    assert errors[0] == FieldError("controls.spendingLimits", "must have at most 10 items")


@pytest.mark.parametrize("key", ["allowedCategories", "blockedCategories"])
def test_an_unknown_category_is_refused_on_its_item(key: str) -> None:
    raw = {key: ["bakeries", "casinos", "Bakeries"]}

    assert _fields(raw) == [f"controls.{key}[1]", f"controls.{key}[2]"]


def test_a_category_both_allowed_and_blocked_is_refused_on_the_blocked_one() -> None:
    raw = {
        "allowedCategories": ["airlines_air_carriers", "bakeries"],
        "blockedCategories": ["betting_casino_gambling", "bakeries"],
    }

    errors = _errors(raw)

    assert [error.field for error in errors] == ["controls.blockedCategories[1]"]
    assert "bakeries" in errors[0].message


def test_every_offending_field_is_reported_at_once() -> None:
    raw = {
        "spendingLimits": [
            {"amountMinor": "0", "interval": "hourly"},
            {"amountMinor": "100", "interval": "daily"},
            {"amountMinor": "100", "interval": "daily"},
        ],
        "allowedCategories": ["bakeries", "nope"],
        "blockedCategories": ["bakeries"],
    }

    assert _fields(raw) == [
        "controls.spendingLimits[0].amountMinor",
        "controls.spendingLimits[0].interval",
        "controls.spendingLimits[2].interval",
        "controls.allowedCategories[1]",
        "controls.blockedCategories[0]",
    ]


def test_controls_are_written_as_the_contracts_camel_case_json_with_string_amounts() -> None:
    controls = Controls(
        (SpendingLimit(5000, "daily"),), ("airlines_air_carriers",), ("betting_casino_gambling",)
    )

    assert controls.to_json() == {
        "spendingLimits": [{"amountMinor": "5000", "interval": "daily"}],
        "allowedCategories": ["airlines_air_carriers"],
        "blockedCategories": ["betting_casino_gambling"],
    }
    assert Controls.from_json(controls.to_json()) == controls
    assert Controls.from_json({}) == Controls()
    assert Controls().to_json() == {
        "spendingLimits": [],
        "allowedCategories": [],
        "blockedCategories": [],
    }


# Numbers and expiry ----------------------------------------------------------------------------


def _seeded(seed: int) -> Callable[[int], str]:
    rng = random.Random(seed)
    return lambda n: "".join(rng.choice("0123456789") for _ in range(n))


def test_a_card_number_is_16_luhn_valid_digits_from_the_visa_test_bin() -> None:
    numbers = [new_card_number(_seeded(seed)) for seed in range(200)]

    for number in numbers:
        assert len(number) == 16
        assert number.isdigit()
        assert number.startswith("400000")
        assert luhn_valid(number)
        assert brand_of(number) == "visa"
    # Every check digit occurs, so no single one is hard-wired.
    assert {number[-1] for number in numbers} == set("0123456789")


def test_a_card_number_is_the_bin_the_random_digits_and_the_check_digit() -> None:
    asked: list[int] = []

    def zeros(n: int) -> str:
        asked.append(n)
        return "0" * n

    assert new_card_number(zeros) == "4000000000000002"
    assert asked == [9]
    assert new_card_number(lambda n: "424242424"[:n]) == "4000004242424244"


def test_a_changed_digit_makes_a_card_number_luhn_invalid() -> None:
    number = new_card_number(_seeded(7))
    changed = number[:10] + str((int(number[10]) + 1) % 10) + number[11:]

    assert not luhn_valid(changed)


@pytest.mark.parametrize("bad", ["12345678", "1234567890", "12345678x", "١٢٣٤٥٦٧٨٩"])
def test_random_digits_that_are_not_the_digits_asked_for_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="random_digits"):
        new_card_number(lambda n: bad)


def test_a_cvc_is_three_random_digits() -> None:
    assert new_cvc(lambda n: "042"[:n]) == "042"
    assert all(len(new_cvc(_seeded(seed))) == 3 for seed in range(20))
    with pytest.raises(ValueError, match="random_digits"):
        new_cvc(lambda n: "12")


@pytest.mark.parametrize(
    ("now", "month_year"),
    [
        ("2026-11-23T10:00:00+00:00", (11, 2029)),
        ("2026-12-31T23:59:59+00:00", (12, 2029)),
        ("2027-01-01T00:00:00+00:00", (1, 2030)),
        ("2028-02-29T12:00:00+00:00", (2, 2031)),
        # 01:30 on New Year's Day in UTC.
        ("2026-12-31T23:30:00-02:00", (1, 2030)),
    ],
)
def test_a_card_expires_in_its_issue_month_three_years_ahead(
    now: str, month_year: tuple[int, int]
) -> None:
    assert expiry(_at(now)) == month_year
