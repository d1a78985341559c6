"""The double-entry ledger (decisions 5), as pure values and rules.

Vocabulary:
    account     where money sits. The merchant's own, per company, mode and currency:
                  available  settled money it may refund from, pay out or spend
                  pending    collected money waiting for settlement
                  reserved   money held for a refund or payout under way
                and the world outside, which the merchant's money comes from and goes to:
                  processor  the card networks (payments in; refunds and chargebacks out)
                  bank       the merchant's bank accounts (payouts out)
    posting     a signed amount on one account
    movement    one balanced transaction (`txn_`): postings that sum to zero, written in the
                same commit as the state change that caused it
    balance     the sum of an account's postings. The company actor holds the sums in memory,
                loaded when it activates from their snapshot rows, which change only in the
                unit that writes the postings they sum and which the reconciliation checks
                against them (mps.persistence.ledger_store).

Movements, by type:
    payment              processor -A, pending +A                a payment became PAID
    settlement           pending -x, available +x                its settlement delay passed
    refund_reservation   available -a, pending -p, reserved +R   a refund was created (a + p = R)
    refund               reserved -R, processor +R               the refund completed
    refund_release       reserved -R, available/pending +R       the refund was rejected
    payout_reservation   available -A, reserved +A               a payout was created
    payout               reserved -A, bank +A                    the payout arrived
    payout_release       reserved -A, available +A               it failed or was cancelled
    chargeback           available -X, processor +X              a payment was reversed
    card_funding         available -A, card +A                   a card was funded (the wallet)
    card_withdrawal      card -A, available +A                   money back from a card
    card_spend           card -A, card_network +A                a card authorization approved

A card's balance is its `card` postings (the movements whose source is the card): outside the
merchant's available, pending and reserved, and kept by the card's own actor.

Pending and settlement. A refund may reserve from pending (decisions 5: available first, then
pending), so pending can hold less than the credits still waiting to settle ("unsettled", kept
beside the balances). A settlement therefore moves at most what pending holds, and a released
reservation goes back to pending only as far as unsettled credits are behind it, the rest to
available. That keeps `0 <= pending <= unsettled` and `available + pending + reserved` equal to
everything collected minus everything paid out, refunded or charged back.

A chargeback takes the payment's unrefunded remainder from available, as card networks do: it
may go below zero (payouts then wait), while the payment's credit still settles as usual.

`Books` holds the balances of one company and the movements it has handed to storage but not yet
seen committed, so that a decision made while earlier commits are in flight counts their
reservations but not their credits: no account can go below zero whatever the commit order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import ClassVar

from mps.domain.clock import iso, parse_iso
from mps.domain.ids import new_id
from mps.errors import Conflict

__all__ = [
    "MERCHANT_ACCOUNTS",
    "MOVEMENT_TYPES",
    "Balance",
    "Books",
    "Movement",
    "balance_insufficient",
]

MERCHANT_ACCOUNTS = ("available", "pending", "reserved")
MOVEMENT_TYPES = (
    "payment",
    "settlement",
    "refund_reservation",
    "refund",
    "refund_release",
    "payout_reservation",
    "payout",
    "payout_release",
    "chargeback",
    "card_funding",
    "card_withdrawal",
    "card_spend",
)
# Not an account: the credits still waiting for settlement, tracked beside the balances.
UNSETTLED = "unsettled"

BalanceKey = tuple[str, str]  # (mode, currency)


def balance_insufficient(currency: str, what: str) -> Conflict:
    return Conflict(
        f"The {currency} balance is insufficient for this {what}", code="balance_insufficient"
    )


@dataclass(frozen=True)
class Movement:
    """One balanced ledger transaction. `postings` are (account, signed amount) pairs."""

    id: str
    type: str
    mode: str
    currency: str
    source_id: str
    created_at: str
    postings: tuple[tuple[str, int], ...]
    # The change to the unsettled credits this movement makes (a payment adds, a settlement
    # takes away); not a posting, so not part of the zero sum.
    unsettled: int = 0
    # A payment's credit: when its settlement falls due.
    due_at: str | None = None

    def __post_init__(self) -> None:
        if sum(amount for _, amount in self.postings) != 0:
            msg = f"unbalanced {self.type} movement: {self.postings}"
            raise ValueError(msg)

    @property
    def key(self) -> BalanceKey:
        return (self.mode, self.currency)

    def change(self, account: str) -> int:
        return sum(amount for name, amount in self.postings if name == account)

    @property
    def net(self) -> int:
        """The change to the merchant's funds (available + pending + reserved)."""
        return sum(self.change(account) for account in MERCHANT_ACCOUNTS)

    def deltas(self) -> dict[str, int]:
        found = {account: self.change(account) for account in MERCHANT_ACCOUNTS}
        found[UNSETTLED] = self.unsettled
        return found


def _movement(
    kind: str,
    mode: str,
    currency: str,
    source_id: str,
    now: str,
    postings: list[tuple[str, int]],
    unsettled: int = 0,
    due_at: str | None = None,
) -> Movement:
    kept = tuple((account, amount) for account, amount in postings if amount != 0)
    return Movement(new_id("txn"), kind, mode, currency, source_id, now, kept, unsettled, due_at)


@dataclass
class Balance:
    available: int = 0
    pending: int = 0
    reserved: int = 0
    unsettled: int = 0

    FIELDS: ClassVar[tuple[str, ...]] = (*MERCHANT_ACCOUNTS, UNSETTLED)

    def add(self, deltas: dict[str, int], sign: int = 1) -> None:
        for name, amount in deltas.items():
            setattr(self, name, getattr(self, name) + sign * amount)

    def copy(self) -> Balance:
        return Balance(self.available, self.pending, self.reserved, self.unsettled)


@dataclass
class Books:
    """One company's balances per (mode, currency): what storage holds (`committed`), and the
    movements handed to storage whose commit is not confirmed yet (`in_flight`).

    Decisions read `low` (committed plus every in-flight decrease) and `high` (plus every
    in-flight increase), never the committed figures alone: a reservation decided while another
    is in flight sees that one's decrease, and a credit not yet committed is not spent.
    """

    committed: dict[BalanceKey, Balance] = field(default_factory=lambda: defaultdict(Balance))
    _decreases: dict[BalanceKey, Balance] = field(default_factory=lambda: defaultdict(Balance))
    _increases: dict[BalanceKey, Balance] = field(default_factory=lambda: defaultdict(Balance))
    in_flight: int = 0

    def low(self, key: BalanceKey) -> Balance:
        view = self.committed[key].copy()
        view.add(self._decreases[key].__dict__)
        return view

    def high(self, key: BalanceKey) -> Balance:
        view = self.committed[key].copy()
        view.add(self._increases[key].__dict__)
        return view

    def begin(self, movements: list[Movement]) -> None:
        for movement in movements:
            self._track(movement, 1)
        self.in_flight += 1

    def settle(self, movements: list[Movement], *, committed: bool) -> None:
        """The unit holding `movements` committed (or definitely did not)."""
        for movement in movements:
            self._track(movement, -1)
            if committed:
                self.committed[movement.key].add(movement.deltas())
        self.in_flight -= 1

    def _track(self, movement: Movement, sign: int) -> None:
        for name, amount in movement.deltas().items():
            side = self._decreases if amount < 0 else self._increases
            setattr(side[movement.key], name, getattr(side[movement.key], name) + sign * amount)

    def settled_down(self, key: BalanceKey) -> bool:
        """No movement in flight changes pending or the unsettled credits of `key`: a settlement
        decided now moves what will really be there (one decided beside a reservation from
        pending that is then refused, or a release to pending that then lands, could leave
        money in pending that no credit will ever settle)."""
        up, down = self._increases[key], self._decreases[key]
        return not (up.pending or down.pending or up.unsettled or down.unsettled)

    def keys(self, mode: str) -> list[BalanceKey]:
        return sorted(k for k in self.committed if k[0] == mode)

    # The movements, each decided against the books as they stand -------------------------

    def payment(
        self, mode: str, currency: str, payment_id: str, amount: int, now: str, delay_sec: int
    ) -> list[Movement]:
        """Credit a PAID payment to pending, due to settle `delay_sec` after `now`; with no
        delay, settle it in the same unit (all of it: the credit is in pending by then)."""
        due_at = iso(parse_iso(now) + timedelta(seconds=delay_sec))
        credit = _movement(
            "payment", mode, currency, payment_id, now,
            [("processor", -amount), ("pending", amount)], unsettled=amount, due_at=due_at,
        )  # fmt: skip
        if delay_sec > 0:
            return [credit]
        settled = _movement(
            "settlement", mode, currency, payment_id, now,
            [("pending", -amount), ("available", amount)], unsettled=-amount,
        )  # fmt: skip
        return [credit, settled]

    def settlement(
        self, mode: str, currency: str, payment_id: str, amount: int, now: str
    ) -> Movement:
        """Move the payment's credit from pending to available: as much of it as pending holds
        (a refund may have reserved part of it already)."""
        moved = max(0, min(amount, self.low((mode, currency)).pending))
        return _movement(
            "settlement", mode, currency, payment_id, now,
            [("pending", -moved), ("available", moved)], unsettled=-amount,
        )  # fmt: skip

    def refund_reservation(
        self, mode: str, currency: str, refund_id: str, amount: int, now: str
    ) -> Movement:
        """Reserve `amount` from available first, then pending; 409 `balance_insufficient`
        when both together hold less."""
        view = self.low((mode, currency))
        # Available may be below zero after a chargeback: then it covers nothing, and the
        # two together must still cover the refund.
        if view.available + view.pending < amount:
            raise balance_insufficient(currency, "refund")
        from_available = max(0, min(amount, view.available))
        from_pending = amount - from_available
        return _movement(
            "refund_reservation", mode, currency, refund_id, now,
            [("available", -from_available), ("pending", -from_pending), ("reserved", amount)],
        )  # fmt: skip

    def refund(self, mode: str, currency: str, refund_id: str, amount: int, now: str) -> Movement:
        return _movement(
            "refund", mode, currency, refund_id, now,
            [("reserved", -amount), ("processor", amount)],
        )  # fmt: skip

    def refund_release(
        self, mode: str, currency: str, refund_id: str, from_pending: int, amount: int, now: str
    ) -> Movement:
        """Return a rejected refund's reservation where it came from; the part that came from
        pending goes back there only as far as unsettled credits are behind it (the credit may
        have settled meanwhile), the rest to available."""
        low, high = self.low((mode, currency)), self.high((mode, currency))
        to_pending = max(0, min(from_pending, low.unsettled - high.pending))
        return _movement(
            "refund_release", mode, currency, refund_id, now,
            [("reserved", -amount), ("pending", to_pending), ("available", amount - to_pending)],
        )  # fmt: skip

    def chargeback_reserved(
        self, mode: str, currency: str, payment_id: str, amount: int, now: str
    ) -> Movement:
        """What a refund of a charged-back payment held, when that refund is rejected: the
        chargeback left it to the refund, so it leaves the balance now, as the chargeback's."""
        return _movement(
            "chargeback", mode, currency, payment_id, now,
            [("reserved", -amount), ("processor", amount)],
        )  # fmt: skip

    def payout_reservation(
        self, mode: str, currency: str, payout_id: str, amount: int, now: str
    ) -> Movement:
        if self.low((mode, currency)).available < amount:
            raise balance_insufficient(currency, "payout")
        return _movement(
            "payout_reservation", mode, currency, payout_id, now,
            [("available", -amount), ("reserved", amount)],
        )  # fmt: skip

    def card_funding(
        self, mode: str, currency: str, card_id: str, amount: int, now: str
    ) -> Movement:
        """Move `amount` from available to the card; 409 `balance_insufficient` beyond it."""
        if self.low((mode, currency)).available < amount:
            raise balance_insufficient(currency, "card funding")
        return _movement(
            "card_funding", mode, currency, card_id, now, [("available", -amount), ("card", amount)]
        )

    def card_withdrawal(
        self, mode: str, currency: str, card_id: str, amount: int, now: str
    ) -> Movement:
        """Back from the card to available; the card's actor checked its balance."""
        return _movement(
            "card_withdrawal", mode, currency, card_id, now,
            [("card", -amount), ("available", amount)],
        )  # fmt: skip

    def card_spend(self, mode: str, currency: str, card_id: str, amount: int, now: str) -> Movement:
        return _movement(
            "card_spend", mode, currency, card_id, now,
            [("card", -amount), ("card_network", amount)],
        )  # fmt: skip

    def payout(self, mode: str, currency: str, payout_id: str, amount: int, now: str) -> Movement:
        return _movement(
            "payout", mode, currency, payout_id, now, [("reserved", -amount), ("bank", amount)]
        )

    def payout_release(
        self, mode: str, currency: str, payout_id: str, amount: int, now: str
    ) -> Movement:
        return _movement(
            "payout_release", mode, currency, payout_id, now,
            [("reserved", -amount), ("available", amount)],
        )  # fmt: skip

    def chargeback(
        self, mode: str, currency: str, payment_id: str, amount: int, now: str
    ) -> Movement:
        return _movement(
            "chargeback", mode, currency, payment_id, now,
            [("available", -amount), ("processor", amount)],
        )  # fmt: skip
