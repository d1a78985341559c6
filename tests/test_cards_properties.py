"""Random sequences of card operations keep the wallet and the cards' books right (decisions 6).

Hypothesis draws sequences of operations: member and company cards issued (with or without an
initial funding, a spending limit of some interval and a blocked category), cards funded from
the wallet and withdrawn to it, authorizations through the sandbox (some in a blocked category),
freezes, unfreezes and terminations, and the test clock moved on by hours or days (the member
signs in again: a session lasts 12 hours). Each example runs against a real app of its own,
in-process over its HTTP API, on a fresh copy of the session's migrated SQLite file, and starts
with one payment of 100000 paid (test mode makes it available at once). After every step:

1. the ledger's postings sum to zero, and no transaction is unbalanced (read from storage);
2. no card's balance is below zero, and a TERMINATED card's balance is 0;
3. the wallet plus the cards changes only by approved spending: available + the cards'
   balances + the approved authorizations' amounts == the 100000 paid in;
4. every card, its balance, status and authorizations are those of a small model of the rules
   (decisions 6: decline reasons in their fixed order, interval windows in UTC), so each answer
   is the one the step calls for: an approval never takes a card below zero, and a declined
   authorization, a refused funding or withdrawal, change nothing.

Every answer must be one the step allows (a 5xx never is). The background loops are slowed to
once an hour, so an example is the same run each time and Hypothesis can shrink a failure.

A second test sends 100 authorizations at once to a card with a daily limit: the limit binds
exactly, whatever the interleaving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import Member, answered, post_as, sign_in, sign_up
from tests.money import authorize_card, balance, every_item, paid_payment, sandbox_key
from tests.properties import (
    Advance,
    Example,
    answer,
    assert_ledger_balanced,
    example_app,
    examples,
    run_steps,
)

PAID_IN = 100_000
GAMBLING = "betting_casino_gambling"
INTERVALS = ("per_transaction", "daily", "weekly", "monthly", "all_time")


# The operations. Indexes pick among the cards the run has issued, modulo their number.


@dataclass(frozen=True)
class Issue:
    company: bool  # a company card, else a member card
    funding: int | None  # initialFundingMinor; None leaves it out
    limit: tuple[int, str] | None  # (amountMinor, interval) of one spending limit
    block_gambling: bool


@dataclass(frozen=True)
class Fund:
    card: int
    amount: int


@dataclass(frozen=True)
class Withdraw:
    card: int
    amount: int | None  # None: the card's whole balance (nothing when it is empty)


@dataclass(frozen=True)
class Authorize:
    card: int
    amount: int
    gambling: bool  # in the blocked category, else in no category


@dataclass(frozen=True)
class Change:
    card: int
    action: str  # freeze, unfreeze or terminate


Operation = Issue | Fund | Withdraw | Authorize | Change | Advance

INDEXES = st.integers(0, 20)
# Mostly affordable fundings, some of none, and now and then more than the whole wallet.
FUNDING = st.one_of(
    st.none(), st.integers(500, 20_000), st.integers(1, 5_000), st.just(PAID_IN + 1)
)
LIMITS = st.one_of(st.none(), st.tuples(st.sampled_from([500, 2_000]), st.sampled_from(INTERVALS)))
HOUR, DAY = 3600, 86_400
# Each kind of step, and how many times it is offered (one strategy object per offer: one_of
# picks among its branches alike).
KINDS: list[tuple[Callable[[], st.SearchStrategy[Operation]], int]] = [
    (lambda: st.builds(Issue, st.booleans(), FUNDING, LIMITS, st.booleans()), 3),
    (lambda: st.builds(Fund, INDEXES, st.integers(1, 40_000)), 2),
    (lambda: st.builds(Withdraw, INDEXES, st.one_of(st.none(), st.integers(1, 5_000))), 1),
    (lambda: st.builds(Authorize, INDEXES, st.integers(1, 1_500), st.booleans()), 5),
    (lambda: st.builds(Change, INDEXES, st.sampled_from(["freeze", "unfreeze", "terminate"])), 1),
    (
        lambda: st.builds(
            Advance, st.sampled_from([60, HOUR, 5 * HOUR, 13 * HOUR, DAY, 3 * DAY, 8 * DAY])
        ),
        1,
    ),
]
OPERATIONS: st.SearchStrategy[Operation] = st.one_of(
    [make() for make, offers in KINDS for _ in range(offers)]
)


# The model: what each card should be, from the rules of decisions 6 (mps/domain/issuing.py).


@dataclass
class Model:
    id: str
    status: str = "ACTIVE"
    balance: int = 0
    limit: tuple[int, str] | None = None
    block_gambling: bool = False
    approvals: list[tuple[datetime, int]] = field(default_factory=list)
    authorizations: int = 0

    def spent_since(self, start: datetime | None) -> int:
        return sum(amount for at, amount in self.approvals if start is None or at >= start)

    def decline(self, amount: int, gambling: bool, now: datetime) -> str | None:
        """The reason the card should decline `amount` at `now`, or None to approve it."""
        if self.status != "ACTIVE":
            return "card_frozen"
        if amount > self.balance:
            return "insufficient_funds"
        if self.limit is not None:
            cap, interval = self.limit
            if interval == "per_transaction":
                total = amount
            else:
                total = self.spent_since(_window_start(interval, now)) + amount
            if total > cap:
                return "spending_limit"
        if gambling and self.block_gambling:
            return "category_blocked"
        return None


def _window_start(interval: str, now: datetime) -> datetime | None:
    utc = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
    midnight = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    starts = {
        "daily": midnight,
        "weekly": midnight - timedelta(days=midnight.weekday()),
        "monthly": midnight.replace(day=1),
        "all_time": None,
    }
    return starts[interval]


@dataclass
class Run(Example):
    """One example's app, what it has made so far, and what it should hold."""

    cards: list[Model] = field(default_factory=list)

    @property
    def wallet(self) -> int:
        """The available balance the model expects."""
        held = sum(card.balance for card in self.cards)
        spent = sum(amount for card in self.cards for _, amount in card.approvals)
        return PAID_IN - held - spent


async def _card(run: Run, card_id: str) -> dict[str, Any]:
    response = await run.client.get(f"/api/v1/merchant/cards/{card_id}", headers=run.member.headers)
    found: dict[str, Any] = await answered(response, 200)
    return found


async def _issue(run: Run, op: Issue) -> None:
    body: dict[str, Any] = {"currency": "USD"}
    if op.company:
        path, body["nickname"] = "/api/v1/merchant/company-cards", "N"
    else:
        path, body["cardholderName"] = "/api/v1/merchant/cards", "A"
    if op.funding is not None:
        body["initialFundingMinor"] = str(op.funding)
    controls: dict[str, Any] = {}
    if op.limit is not None:
        controls["spendingLimits"] = [{"amountMinor": str(op.limit[0]), "interval": op.limit[1]}]
    if op.block_gambling:
        controls["blockedCategories"] = [GAMBLING]
    if controls:
        body["controls"] = controls
    funding = op.funding or 0
    enough = funding <= run.wallet
    response = await run.client.post(path, json=body, headers=run.member.headers)
    allowed: dict[int, set[str] | None] = {201: None} if enough else {409: {"balance_insufficient"}}
    created = await answer(response, allowed, op)
    if response.status == 201:
        assert created["type"] == ("company" if op.company else "member"), (op, created)
        assert created["status"] == "ACTIVE" and created["balanceMinor"] == str(funding), created
        run.cards.append(Model(created["id"], "ACTIVE", funding, op.limit, op.block_gambling))


async def _money(run: Run, model: Model, op: Fund | Withdraw) -> None:
    if isinstance(op, Fund):
        amount, verb = op.amount, "fund"
        if model.status == "TERMINATED":
            allowed: dict[int, set[str] | None] = {409: {"invalid_state"}}
        elif amount > run.wallet:
            allowed = {409: {"balance_insufficient"}}
        else:
            allowed = {200: None}
    else:
        amount, verb = (model.balance if op.amount is None else op.amount), "withdraw"
        if amount <= 0:
            return  # a withdrawal of nothing is not a valid amount: nothing to try
        allowed = {200: None} if amount <= model.balance else {409: {"balance_insufficient"}}
    response = await run.client.post(
        f"/api/v1/merchant/cards/{model.id}/{verb}",
        json={"amountMinor": str(amount)},
        headers=run.member.headers,
    )
    body = await answer(response, allowed, op)
    if response.status == 200:
        model.balance += amount if verb == "fund" else -amount
        assert body["balanceMinor"] == str(model.balance), (op, body, model)


async def _authorize(run: Run, model: Model, op: Authorize) -> None:
    before = (await _card(run, model.id))["balanceMinor"], (await balance(run.client, run.member))
    extra = {"merchantCategory": GAMBLING} if op.gambling else {}
    response = await authorize_card(run.client, run.key, model.id, str(op.amount), **extra)
    body = await answer(response, {200: None}, op)
    shown = body["object"]
    expected = model.decline(op.amount, op.gambling, run.clock())
    model.authorizations += 1
    assert shown["approved"] is (expected is None), (op, shown, expected, model)
    assert shown["declineReason"] == expected, (op, shown, expected, model)
    after_balance = int(shown["card"]["balanceMinor"])
    if shown["approved"]:
        # An approval never takes the card below zero.
        assert op.amount <= int(before[0]), (op, before, shown)
        assert after_balance == int(before[0]) - op.amount >= 0, (op, before, shown)
        model.balance -= op.amount
        model.approvals.append((run.clock(), op.amount))
    else:
        # A declined authorization changes nothing.
        after = (
            (await _card(run, model.id))["balanceMinor"],
            (await balance(run.client, run.member)),
        )
        assert after == before, ("a decline changed something", op, before, after)
        assert after_balance == int(before[0]), (op, before, shown)


async def _change(run: Run, model: Model, op: Change) -> None:
    allowed_from = {
        "freeze": ("ACTIVE",),
        "unfreeze": ("FROZEN",),
        "terminate": ("ACTIVE", "FROZEN"),
    }
    to = {"freeze": "FROZEN", "unfreeze": "ACTIVE", "terminate": "TERMINATED"}
    ok = model.status in allowed_from[op.action]
    response = await run.client.post(
        f"/api/v1/merchant/cards/{model.id}/{op.action}", headers=run.member.headers
    )
    allowed: dict[int, set[str] | None] = {200: None} if ok else {409: {"invalid_state"}}
    body = await answer(response, allowed, op)
    if ok:
        model.status = to[op.action]
        if model.status == "TERMINATED":
            model.balance = 0  # back to the wallet
        assert body["status"] == model.status, (op, body)
        assert body["balanceMinor"] == str(model.balance), (op, body, model)


async def _step(run: Run, op: Operation) -> None:
    match op:
        case Issue():
            await _issue(run, op)
        case Fund(index) | Withdraw(index) if run.cards:
            await _money(run, run.cards[index % len(run.cards)], op)
        case Authorize(index) if run.cards:
            await _authorize(run, run.cards[index % len(run.cards)], op)
        case Change(index) if run.cards:
            await _change(run, run.cards[index % len(run.cards)], op)
        case Advance(seconds):
            run.clock.advance(seconds=seconds)
            # A session lasts 12 hours: a fresh one after every move keeps the member signed in.
            run.member = await sign_in(run.client, run.member)
        case _:
            pass  # no card issued yet to act on


async def _check(run: Run, done: list[Operation]) -> None:
    """The four properties of the module docstring, after the steps `done`."""
    await assert_ledger_balanced(run.client, done)

    listed = {
        card["id"]: card
        for card in await every_item(run.client, run.member, "/api/v1/merchant/cards")
    }
    assert set(listed) == {model.id for model in run.cards}, ("cards", listed, run.cards, done)
    held = spent = 0
    for model in run.cards:
        card = listed[model.id]
        got = await _card(run, model.id)
        assert got["balanceMinor"] == card["balanceMinor"], ("list and get differ", got, card)
        amount = int(card["balanceMinor"])
        assert amount >= 0, ("a card below zero", card, done)
        if card["status"] == "TERMINATED":
            assert amount == 0, ("a TERMINATED card holds money", card, done)
        assert (card["status"], amount) == (model.status, model.balance), (card, model, done)
        authorizations = await every_item(
            run.client, run.member, f"/api/v1/merchant/cards/{model.id}/transactions"
        )
        approved = sum(int(a["amountMinor"]) for a in authorizations if a["approved"])
        assert len(authorizations) == model.authorizations, (authorizations, model, done)
        assert approved == model.spent_since(None), (authorizations, model, done)
        held += amount
        spent += approved

    available = (await balance(run.client, run.member))["available"]
    assert available + held + spent == PAID_IN, (
        "the wallet and the cards do not add up",
        {"available": available, "cards": held, "approved": spent},
        done,
    )
    assert available == run.wallet, ("the wallet is not the model's", available, run.wallet, done)


async def _scenario(template: Path, operations: list[Operation]) -> None:
    async with example_app(template, "mps-cards-") as (client, clock):
        member = await sign_up(client)
        await paid_payment(client, member, str(PAID_IN))
        assert (await balance(client, member))["available"] == PAID_IN
        key = await sandbox_key(client, member, "cards:write")
        await run_steps(Run(client, clock, member, key), operations, _step, _check)


@examples(20)
@given(operations=st.lists(OPERATIONS, min_size=20, max_size=50))
def test_random_card_operations_keep_the_ledger_balanced_and_the_wallet_whole(
    sqlite_template: Path, operations: list[Operation]
) -> None:
    asyncio.run(_scenario(sqlite_template, operations))


# Concurrency: 100 authorizations at once against one card's limit.


async def _limited_card(
    client: TestClient[Any, Any], limit: str, interval: str
) -> tuple[Member, dict[str, str], dict[str, Any]]:
    member = await sign_up(client)
    await paid_payment(client, member, "10000")
    key = await sandbox_key(client, member, "cards:write")
    controls = {"spendingLimits": [{"amountMinor": limit, "interval": interval}]}
    body = {"cardholderName": "A", "currency": "USD", "initialFundingMinor": "10000"}
    response = await post_as(
        client, member, "/api/v1/merchant/cards", {**body, "controls": controls}
    )
    card: dict[str, Any] = await response.json()
    assert response.status == 201, card
    return member, key, card


async def _at_once(
    client: TestClient[Any, Any], key: dict[str, str], card_id: str, count: int, amount: str
) -> list[dict[str, Any]]:
    async def one() -> dict[str, Any]:
        response = await authorize_card(client, key, card_id, amount)
        body: dict[str, Any] = await response.json()
        assert response.status == 200, body
        shown: dict[str, Any] = body["object"]
        return shown

    return await asyncio.gather(*(one() for _ in range(count)))


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("limit", "interval", "approved"),
    [("3000", "daily", 30), ("99", "per_transaction", 0)],
    ids=["a_daily_limit_approves_until_it_is_spent", "a_per_transaction_limit_below_declines_all"],
)
async def test_a_spending_limit_binds_exactly_under_100_concurrent_authorizations(
    client: TestClient[Any, Any], limit: str, interval: str, approved: int
) -> None:
    member, key, card = await _limited_card(client, limit, interval)

    answers = await _at_once(client, key, card["id"], 100, "100")

    spent = 100 * approved
    assert [a["approved"] for a in answers].count(True) == approved
    assert sum(int(a["amountMinor"]) for a in answers if a["approved"]) == spent
    assert {a["declineReason"] for a in answers if not a["approved"]} == {"spending_limit"}
    got = await client.get(f"/api/v1/merchant/cards/{card['id']}", headers=member.headers)
    assert (await got.json())["balanceMinor"] == str(10_000 - spent)
    listed = await client.get(
        f"/api/v1/merchant/cards/{card['id']}/transactions",
        params={"limit": "100"},
        headers=member.headers,
    )
    stored = (await listed.json())["data"]
    assert sum(int(a["amountMinor"]) for a in stored if a["approved"]) == spent
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}
