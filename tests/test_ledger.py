"""The ledger's rules (mps.domain.ledger) without I/O: balanced movements, reservations that
count what is in flight, and pending that never exceeds the unsettled credits behind it."""

from __future__ import annotations

import pytest

from mps.domain.ledger import Balance, Books, Movement
from mps.errors import Conflict

NOW = "2026-11-23T10:00:00.000Z"
KEY = ("test", "USD")


def _apply(books: Books, movements: list[Movement]) -> None:
    books.begin(movements)
    books.settle(movements, committed=True)


def _credited(amount: int, delay: int = 0) -> Books:
    books = Books()
    _apply(books, books.payment("test", "USD", "pay_1", amount, NOW, delay))
    return books


def test_unbalanced_movement_cannot_be_made() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        Movement("txn_1", "payment", "test", "USD", "pay_1", NOW, (("pending", 5),))


def test_payment_without_delay_is_credited_and_settled_in_one_unit() -> None:
    books = _credited(2500)

    assert books.committed[KEY] == Balance(available=2500, pending=0, reserved=0, unsettled=0)


def test_payment_with_delay_waits_in_pending_and_counts_as_unsettled() -> None:
    books = _credited(2500, delay=60)

    assert books.committed[KEY] == Balance(pending=2500, unsettled=2500)


def test_refund_reservation_takes_available_first_then_pending() -> None:
    books = _credited(1000)
    _apply(books, books.payment("test", "USD", "pay_2", 3000, NOW, 60))

    movement = books.refund_reservation("test", "USD", "re_1", 2500, NOW)

    assert movement.deltas() == {
        "available": -1000,
        "pending": -1500,
        "reserved": 2500,
        "unsettled": 0,
    }
    assert movement.net == 0


def test_refund_beyond_available_and_pending_is_balance_insufficient() -> None:
    books = _credited(1000)

    with pytest.raises(Conflict) as refused:
        books.refund_reservation("test", "USD", "re_1", 1001, NOW)

    assert refused.value.code == "balance_insufficient"


def test_reservation_in_flight_counts_before_its_commit() -> None:
    books = _credited(1000)
    first = books.refund_reservation("test", "USD", "re_1", 800, NOW)
    books.begin([first])

    with pytest.raises(Conflict):
        books.refund_reservation("test", "USD", "re_2", 300, NOW)
    books.settle([first], committed=False)  # the first did not land after all
    assert books.refund_reservation("test", "USD", "re_2", 300, NOW).change("available") == -300


def test_credit_in_flight_is_not_spent_before_its_commit() -> None:
    books = Books()
    credit = books.payment("test", "USD", "pay_1", 1000, NOW, 0)
    books.begin(credit)

    with pytest.raises(Conflict):
        books.payout_reservation("test", "USD", "po_1", 1000, NOW)


def test_negative_available_covers_nothing() -> None:
    books = _credited(1000, delay=60)
    _apply(books, [books.chargeback("test", "USD", "pay_1", 1000, NOW)])

    assert books.committed[KEY].available == -1000
    with pytest.raises(Conflict):
        books.refund_reservation("test", "USD", "re_1", 500, NOW)
    with pytest.raises(Conflict):
        books.payout_reservation("test", "USD", "po_1", 1, NOW)


def test_settlement_moves_no_more_than_pending_holds() -> None:
    books = _credited(3000, delay=60)
    _apply(books, [books.refund_reservation("test", "USD", "re_1", 2000, NOW)])

    settled = books.settlement("test", "USD", "pay_1", 3000, NOW)
    _apply(books, [settled])

    assert settled.deltas() == {
        "available": 1000,
        "pending": -1000,
        "reserved": 0,
        "unsettled": -3000,
    }
    assert books.committed[KEY] == Balance(available=1000, pending=0, reserved=2000, unsettled=0)


def test_release_goes_back_to_pending_only_while_its_credit_is_unsettled() -> None:
    books = _credited(3000, delay=60)
    _apply(books, [books.refund_reservation("test", "USD", "re_1", 2000, NOW)])
    before_settling = books.refund_release("test", "USD", "re_1", 2000, 2000, NOW)
    _apply(books, [books.settlement("test", "USD", "pay_1", 3000, NOW)])

    after_settling = books.refund_release("test", "USD", "re_1", 2000, 2000, NOW)

    assert before_settling.change("pending") == 2000
    assert after_settling.change("pending") == 0 and after_settling.change("available") == 2000


def test_payout_round_trip_and_release() -> None:
    books = _credited(5000)
    reservation = books.payout_reservation("test", "USD", "po_1", 3000, NOW)
    _apply(books, [reservation])
    _apply(books, [books.payout("test", "USD", "po_1", 3000, NOW)])
    second = books.payout_reservation("test", "USD", "po_2", 2000, NOW)
    _apply(books, [second])
    _apply(books, [books.payout_release("test", "USD", "po_2", 2000, NOW)])

    assert books.committed[KEY] == Balance(available=2000, pending=0, reserved=0, unsettled=0)
    assert books.in_flight == 0
