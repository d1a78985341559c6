"""Analytics (interface 4, decisions 13): series, status distribution and conversion, per
currency, checked against figures this test computes itself from the payments it made."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from mps.persistence.statements import Statement
from tests.conftest import Clock
from tests.helpers import (
    Member,
    add_member,
    answered,
    assert_envelope,
    create_payment,
    live_session,
    pay,
    sign_in,
    sign_up,
)

pytestmark = pytest.mark.both_backends

DECLINED_CARD = "4000000000000002"
# A Monday, so weeks line up with the calendar in the assertions below.
MONDAY = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
PAID_STATUSES = {"PAID", "PARTIAL_REFUND", "REFUNDED", "REVERSED"}


@pytest.fixture
async def client(aiohttp_client: Any, make_app: Any, clock: Clock) -> TestClient[Any, Any]:
    """The app started with its clock at MONDAY already: a background pass that began at
    another time could otherwise sweep what the test makes (sessions, as expired)."""
    clock.now = MONDAY
    started: TestClient[Any, Any] = await aiohttp_client(make_app())
    return started


@dataclass
class Made:
    """What the test did, by UTC day and currency: the independent record of the figures."""

    created: Counter[tuple[date, str]] = field(default_factory=Counter)
    created_minor: Counter[tuple[date, str]] = field(default_factory=Counter)
    paid: Counter[tuple[date, str]] = field(default_factory=Counter)
    paid_minor: Counter[tuple[date, str]] = field(default_factory=Counter)
    failed: Counter[tuple[date, str]] = field(default_factory=Counter)
    failed_minor: Counter[tuple[date, str]] = field(default_factory=Counter)
    # payment id -> (day created, currency), for status counts read back at the end
    payments: dict[str, tuple[date, str]] = field(default_factory=dict)


class Merchant:
    """A signed-in merchant whose clock the test moves day by day."""

    def __init__(self, client: TestClient[Any, Any], clock: Clock, member: Member) -> None:
        self.client = client
        self.clock = clock
        self.member = member
        self.made = Made()

    @classmethod
    async def start(
        cls, client: TestClient[Any, Any], clock: Clock, email: str = "owner@example.com"
    ) -> Merchant:
        clock.now = MONDAY
        return cls(client, clock, await sign_up(client, email=email))

    async def on(self, day: int, hour: int = 10) -> None:
        """Move to `day` days after MONDAY; sessions last 12 hours, so sign in again."""
        self.clock.now = MONDAY.replace(hour=hour) + timedelta(days=day)
        self.member = await sign_in(self.client, self.member)

    @property
    def today(self) -> date:
        return self.clock.now.date()

    async def create(self, amount: int, currency: str, **fields: Any) -> dict[str, Any]:
        payment = await create_payment(
            self.client,
            self.member,
            amountMinor=str(amount),
            currency=currency,
            expiresInSec=7_776_000,
            **fields,
        )
        if not fields.get("allowMultiplePayments"):
            key = (self.today, currency)
            self.made.created[key] += 1
            self.made.created_minor[key] += amount
            self.made.payments[payment["id"]] = (self.today, currency)
        return payment

    async def pay(self, payment: dict[str, Any]) -> dict[str, Any]:
        response = await pay(self.client, payment["reference"])
        paid: dict[str, Any] = await answered(response, 200)
        key = (self.today, payment["currency"])
        self.made.paid[key] += 1
        self.made.paid_minor[key] += int(payment["amountMinor"])
        if payment["allowMultiplePayments"]:  # a paid child of the link
            listed = await self.client.get(
                "/api/v1/merchant/payments",
                params={"linkPaymentId": payment["id"]},
                headers=self.member.headers,
            )
            [child] = [
                c for c in (await listed.json())["data"] if c["reference"] == paid["reference"]
            ]
            self.made.created[key] += 1
            self.made.created_minor[key] += int(payment["amountMinor"])
            self.made.payments[child["id"]] = key
        return paid

    async def decline(self, payment: dict[str, Any]) -> None:
        response = await pay(self.client, payment["reference"], number=DECLINED_CARD)
        assert response.status == 402, await response.text()
        key = (self.today, payment["currency"])
        self.made.failed[key] += 1
        self.made.failed_minor[key] += int(payment["amountMinor"])

    async def get(self, path: str, **params: str) -> tuple[int, dict[str, Any]]:
        response = await self.client.get(
            f"/api/v1/merchant/analytics{path}", params=params, headers=self.member.headers
        )
        return response.status, await response.json()

    async def report(self, path: str, **params: str) -> dict[str, Any]:
        """The analytics report at `path`, which must be answered (200)."""
        status, body = await self.get(path, **params)
        assert status == 200, body
        return body

    async def statuses(self) -> dict[str, str]:
        found = {}
        for payment_id in self.made.payments:
            response = await self.client.get(
                f"/api/v1/merchant/payments/{payment_id}", headers=self.member.headers
            )
            found[payment_id] = (await response.json())["status"]
        return found


def day(n: int) -> date:
    return MONDAY.date() + timedelta(days=n)


def _window(first: int, last: int) -> dict[str, str]:
    """The query's window from day `first` to day `last`, both included."""
    return {"from": day(first).isoformat(), "to": day(last).isoformat()}


async def _trader(client: TestClient[Any, Any], clock: Clock) -> Merchant:
    """A merchant after `_trading`."""
    merchant = await Merchant.start(client, clock)
    await _trading(merchant)
    return merchant


async def _trading(merchant: Merchant) -> None:
    """Two weeks and a bit of USD and EUR trade, with declines and a multi-use link."""
    await merchant.on(0)
    usd = [await merchant.create(1000 + i, "USD") for i in range(3)]
    eur = await merchant.create(5000, "EUR")
    await merchant.pay(usd[0])
    await merchant.decline(usd[1])
    await merchant.decline(usd[1])
    await merchant.on(1)
    await merchant.pay(usd[1])  # created on day 0, paid on day 1
    await merchant.pay(eur)
    await merchant.on(8)  # the next ISO week
    link = await merchant.create(700, "USD", allowMultiplePayments=True)
    await merchant.pay(link)
    await merchant.pay(link)
    await merchant.decline(link)
    await merchant.on(16, hour=23)
    late = await merchant.create(300, "EUR")
    await merchant.decline(late)
    cancelled = await merchant.create(99, "EUR")
    response = await merchant.client.post(
        f"/api/v1/merchant/payments/{cancelled['id']}/cancel", headers=merchant.member.headers
    )
    assert response.status == 200


def _expected_series(
    made: Made, currency: str, days: list[date], bucket: Any
) -> list[dict[str, Any]]:
    points: dict[date, dict[str, int]] = {}
    for d in days:
        point = points.setdefault(
            bucket(d), {"revenue": 0, "count": 0, "failed": 0, "failed_minor": 0}
        )
        point["revenue"] += made.paid_minor[(d, currency)]
        point["count"] += made.paid[(d, currency)]
        point["failed"] += made.failed[(d, currency)]
        point["failed_minor"] += made.failed_minor[(d, currency)]
    return [
        {
            "date": start.isoformat(),
            "revenueMinor": str(p["revenue"]),
            "paymentCount": p["count"],
            "failedCount": p["failed"],
            "failedVolumeMinor": str(p["failed_minor"]),
        }
        for start, p in points.items()
    ]


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


async def test_daily_series_per_currency_zero_filled_and_never_blended(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)

    body = await merchant.report("", **_window(0, 16))

    by_currency = {item["currency"]: item["series"] for item in body["data"]}
    assert sorted(by_currency) == ["EUR", "USD"]
    window = _days(day(0), day(16))
    for currency in ("EUR", "USD"):
        assert by_currency[currency] == _expected_series(
            merchant.made, currency, window, lambda d: d
        )
    # the declines count as failed volume in their payment's currency, on their own day
    assert by_currency["USD"][0]["failedCount"] == 2
    assert by_currency["USD"][0]["failedVolumeMinor"] == "2002"
    assert by_currency["EUR"][16]["failedVolumeMinor"] == "300"


async def test_weekly_and_monthly_buckets_are_named_by_their_first_day(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    window = _days(day(0), day(30))

    _, weekly = await merchant.get(
        "", **{"from": day(0).isoformat(), "to": day(30).isoformat(), "interval": "week"}
    )
    _, monthly = await merchant.get(
        "", **{"from": day(0).isoformat(), "to": day(30).isoformat(), "interval": "month"}
    )

    week_of = lambda d: d - timedelta(days=d.weekday())  # noqa: E731
    month_of = lambda d: d.replace(day=1)  # noqa: E731
    for currency in ("EUR", "USD"):
        weeks = next(i["series"] for i in weekly["data"] if i["currency"] == currency)
        months = next(i["series"] for i in monthly["data"] if i["currency"] == currency)
        assert weeks == _expected_series(merchant.made, currency, window, week_of)
        assert months == _expected_series(merchant.made, currency, window, month_of)
    assert [w["date"] for w in weeks] == [
        "2026-03-02", "2026-03-09", "2026-03-16", "2026-03-23", "2026-03-30",
    ]  # fmt: skip
    assert [m["date"] for m in months] == ["2026-03-01", "2026-04-01"]


async def test_a_currency_filter_gives_one_object_even_with_nothing_to_count(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    window = _window(0, 16)

    _, usd = await merchant.get("", currency="USD", **window)
    _, gbp = await merchant.get("", currency="GBP", **window)

    assert usd["ok"] is True and usd["currency"] == "USD" and "data" not in usd
    assert usd["series"] == _expected_series(
        merchant.made, "USD", _days(day(0), day(16)), lambda d: d
    )
    assert gbp["currency"] == "GBP" and len(gbp["series"]) == 17
    assert all(p["revenueMinor"] == "0" and p["failedCount"] == 0 for p in gbp["series"])


async def test_payments_breakdown_counts_the_window_s_payments_by_current_status(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    statuses = await merchant.statuses()

    body = await merchant.report("/payments", **_window(0, 16))

    for item in body["data"]:
        currency = item["currency"]
        mine = {pid: s for pid, s in statuses.items() if merchant.made.payments[pid][1] == currency}
        expected = Counter(mine.values())
        assert item["statusCounts"] == {
            s: expected.get(s, 0)
            for s in ("PENDING", "PAID", "EXPIRED", "CANCELLED", "REFUNDED", "PARTIAL_REFUND",
                      "REVERSED")
        }  # fmt: skip
        assert item["count"] == len(mine)
        total = sum(v for (_, c), v in merchant.made.created_minor.items() if c == currency)
        assert item["amountMinor"] == str(total)
    assert [i["currency"] for i in body["data"]] == ["EUR", "USD"]
    # the multi-use link is not a payment; its two paid children are
    usd = next(i for i in body["data"] if i["currency"] == "USD")
    assert usd["statusCounts"]["PAID"] == 4 and usd["statusCounts"]["PENDING"] == 1

    _, eur = await merchant.get("/payments", currency="EUR", **_window(16, 16))
    assert eur["count"] == 2 and eur["statusCounts"]["CANCELLED"] == 1
    assert eur["amountMinor"] == "399"


async def test_range_edges_include_both_days_and_a_timestamp_counts_its_day(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)

    # day 1 to day 8 by timestamps late and early in those days: both whole days count
    _, inside = await merchant.get(
        "/payments",
        currency="USD",
        **{"from": f"{day(1).isoformat()}T23:59:00Z", "to": f"{day(8).isoformat()}T00:00:00Z"},
    )
    _, outside = await merchant.get("/payments", currency="USD", **_window(2, 7))
    _, series = await merchant.get("", currency="EUR", **_window(1, 1))

    assert inside["count"] == 2  # the link's two children, paid on day 8
    assert outside["count"] == 0
    assert series["series"] == [
        {"date": day(1).isoformat(), "revenueMinor": "5000", "paymentCount": 1,
         "failedCount": 0, "failedVolumeMinor": "0"}
    ]  # fmt: skip


async def test_default_window_is_the_last_30_days_up_to_today(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)

    _, body = await merchant.get("", currency="EUR")

    dates = [p["date"] for p in body["series"]]
    assert dates[-1] == merchant.today.isoformat() and len(dates) == 30
    assert dates[0] == (merchant.today - timedelta(days=29)).isoformat()


async def test_conversion_compares_with_the_prior_period_of_equal_length(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)

    # days 8 to 16 against days -1 to 7, each payment counted by its status now
    body = await merchant.report("/conversion", **_window(8, 16))
    statuses = await merchant.statuses()

    def period(first: date, last: date, currency: str) -> dict[str, Any]:
        made = [
            pid
            for pid, (created, c) in merchant.made.payments.items()
            if c == currency and first <= created <= last
        ]
        paid = sum(1 for pid in made if statuses[pid] in PAID_STATUSES)
        rate = paid / len(made) if made else 0.0
        return {"from": first.isoformat(), "to": last.isoformat(), "created": len(made),
                "paid": paid, "rate": round(rate, 4), "_rate": rate}  # fmt: skip

    results = {item["currency"]: item for item in body["data"]}
    assert sorted(results) == ["EUR", "USD"]
    for currency, item in results.items():
        current = period(day(8), day(16), currency)
        previous = period(day(-1), day(7), currency)
        change = round((current.pop("_rate") - previous.pop("_rate")) * 100, 2)
        assert item == {
            "currency": currency,
            "current": current,
            "previous": previous,
            "changePoints": change,
        }
    # USD: 2 of 2 now (the link's children) against 2 of 3 before
    assert results["USD"]["changePoints"] == 33.33
    # EUR: none of 2 now against 1 of 1 before
    assert results["EUR"]["current"]["rate"] == 0 and results["EUR"]["changePoints"] == -100.0


@pytest.mark.parametrize(
    ("params", "field_name"),
    [
        ({"interval": "hour"}, "interval"),
        ({"from": "2026-03-10", "to": "2026-03-09"}, "from"),
        ({"from": "2020-01-01", "to": "2026-03-09"}, "from"),
        ({"from": "2026-02-30"}, "from"),
        ({"to": "yesterday"}, "to"),
        ({"from": "1969-12-31", "to": "1970-01-05"}, "from"),
        ({"from": "0001-01-01", "to": "0001-01-02"}, "from"),
        ({"to": "0001-01-05"}, "to"),
        ({"currency": "dollars"}, "currency"),
    ],
)
async def test_bad_ranges_and_intervals_are_400_naming_the_field(
    client: TestClient[Any, Any], clock: Clock, params: dict[str, str], field_name: str
) -> None:
    merchant = await Merchant.start(client, clock)

    for path in ("", "/payments", "/conversion"):
        if path and "interval" in params:
            continue  # only the series takes an interval
        status, body = await merchant.get(path, **params)
        assert status == 400, body
        assert_envelope(body, 400, "validation_error")
        assert [e["field"] for e in body["errors"]] == [field_name]


async def test_the_latest_possible_window_answers(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await Merchant.start(client, clock)
    window = {"from": "9999-12-01", "to": "9999-12-31"}

    status, body = await merchant.get("", currency="USD", interval="week", **window)
    conversion_status, _ = await merchant.get("/conversion", currency="USD", **window)

    assert status == 200 and body["series"][-1]["date"] == "9999-12-27"
    assert conversion_status == 200


async def test_interval_is_refused_where_it_means_nothing(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await Merchant.start(client, clock)

    status, body = await merchant.get("/payments", interval="week")

    assert status == 400 and body["errors"][0]["field"] == "interval"


async def test_another_company_and_live_mode_see_none_of_it(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    stranger = Merchant(client, clock, await sign_up(client, email="other@example.com"))
    window = _window(0, 16)

    merchant.member = await live_session(client, merchant.member)

    for who in (stranger, merchant):
        for path in ("", "/payments", "/conversion"):
            status, body = await who.get(path, **window)
            assert status == 200 and body["data"] == [], (path, body)


async def test_analytics_need_analytics_read_and_a_session(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await Merchant.start(client, clock)
    role = await client.post(
        "/api/v1/team/roles",
        json={"name": "Support", "scopes": ["payments:read"]},
        headers=merchant.member.headers,
    )
    assert role.status == 201, await role.text()
    support = await add_member(
        client, merchant.member, "support@example.com", (await role.json())["id"]
    )
    key = await client.post(
        "/api/v1/merchant/api-keys",
        json={"name": "ci", "type": "secret", "scopes": ["analytics:read"]},
        headers=merchant.member.headers,
    )
    assert key.status == 201, await key.text()
    secret = (await key.json())["key"]

    for path in ("", "/payments", "/conversion"):
        url = f"/api/v1/merchant/analytics{path}"
        refused = await client.get(url, headers=support.headers)
        assert_envelope(await refused.json(), 403, "insufficient_scope")
        keyed = await client.get(url, headers={"Authorization": f"Bearer {secret}"})
        assert_envelope(await keyed.json(), 401, "session_required")


async def test_rollups_match_the_rows_and_a_drifted_rollup_is_named(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    services = client.app[SERVICES]

    await services.reconciliation.tick()
    assert services.reconciliation.last.mismatches == []

    await services.actors.commit(
        Statement(
            "UPDATE analytics_days SET paid_minor = paid_minor + 5 WHERE company_id = $1 "
            "AND currency = 'EUR' AND day = $2",
            (merchant.member.company_id, day(1).isoformat()),
        )
    )
    await services.reconciliation.tick()

    found = [str(m) for m in services.reconciliation.last.mismatches]
    assert found == [
        f"analytics paid_minor on {day(1).isoformat()}: {merchant.member.company_id} test EUR "
        "expected 5000, found 5005"
    ]


async def test_rollup_rows_only_ever_hold_one_currency(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    merchant = await _trader(client, clock)
    services = client.app[SERVICES]

    rows = await services.database.fetch(
        "SELECT currency, SUM(paid_minor) AS paid FROM analytics_days WHERE company_id = $1 "
        "GROUP BY currency ORDER BY currency",
        merchant.member.company_id,
    )

    totals: defaultdict[str, int] = defaultdict(int)
    for (_, currency), amount in merchant.made.paid_minor.items():
        totals[currency] += amount
    assert [(r["currency"], int(r["paid"])) for r in rows] == sorted(totals.items())
