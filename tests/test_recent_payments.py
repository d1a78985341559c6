"""The committed snapshots a shard's actors record for reads (mps.actors.recent)."""

from __future__ import annotations

from dataclasses import replace

from mps.actors.recent import RecentPayments, ShardView
from mps.domain.payments import Payment

NOW = "2026-11-23T10:00:00.000Z"


def _payment(payment_id: str, version: int = 1, **changes: object) -> Payment:
    base = Payment(
        id=payment_id,
        company_id="cmp_a",
        mode="test",
        reference=f"PAY-{payment_id}",
        status="PENDING",
        amount_minor=1500,
        currency="USD",
        created_at=NOW,
        updated_at=NOW,
        version=version,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _view(capacity: int = 10) -> ShardView:
    return RecentPayments(capacity).view()


def test_an_older_version_never_replaces_a_newer_one() -> None:
    # given version 2 recorded (an actor loaded the row while the create was being confirmed)
    recent = _view()
    recent.record(_payment("pay_1", version=2, status="CANCELLED"))

    # when the create's version 1 is recorded late
    recent.record(_payment("pay_1", version=1))

    # then version 2 stays
    kept = recent.get("cmp_a", "test", "pay_1")
    assert kept is not None and kept.version == 2 and kept.status == "CANCELLED"


def test_the_least_recently_recorded_goes_first_at_capacity() -> None:
    store = RecentPayments(2)
    recent = store.view()
    recent.record(_payment("pay_1"))
    recent.record(_payment("pay_2"))
    recent.record(_payment("pay_1", version=2))  # recorded again: now the most recent

    recent.record(_payment("pay_3"))

    assert len(store) == 2
    assert recent.get("cmp_a", "test", "pay_2") is None
    assert recent.get("cmp_a", "test", "pay_1") is not None
    assert recent.get("cmp_a", "test", "pay_3") is not None


def test_another_company_or_mode_gets_nothing() -> None:
    recent = _view()
    recent.record(_payment("pay_1"))

    assert recent.get("cmp_b", "test", "pay_1") is None
    assert recent.get("cmp_a", "live", "pay_1") is None
    assert recent.get("cmp_a", "test", "pay_1") is not None


def test_a_forgotten_payment_and_a_zero_capacity_hold_nothing() -> None:
    recent = _view()
    recent.record(_payment("pay_1"))
    recent.forget("pay_1")
    outside_a_shard = RecentPayments(0)
    outside_a_shard.view().record(_payment("pay_1"))

    assert recent.get("cmp_a", "test", "pay_1") is None
    assert len(outside_a_shard) == 0


def test_what_an_earlier_ownership_of_the_shard_recorded_is_never_answered() -> None:
    # given version 3 recorded while this node owned the shard, which it then lost and took
    # again (another node may have written the payment meanwhile)
    store = RecentPayments(10)
    before = store.view()
    before.record(_payment("pay_1", version=3))
    now = store.view()

    # when the new ownership asks, and then records the row it loaded (version 5)
    unknown = now.get("cmp_a", "test", "pay_1")
    now.record(_payment("pay_1", version=5, status="PAID"))

    # then it was unknown, and is now what the new ownership recorded; the old one sees nothing
    assert unknown is None
    kept = now.get("cmp_a", "test", "pay_1")
    assert kept is not None and kept.version == 5
    assert before.get("cmp_a", "test", "pay_1") is None
