"""The committed snapshots of a shard's recently written payments, for reads that need not go
to storage.

A merchant reads a payment mostly just after writing it: it polls the status of the payment it
created a moment ago, or reads it back after a cancel. Every write of a payment is made by this
shard's actors on the node that owns the shard (another node's commits are fenced off), and they
record here each snapshot they have committed or loaded. So on the owner the latest snapshot
recorded here is the stored row, and `GET /merchant/payments/:id` answers from it without a
database round trip. A node that does not own the shard, or a payment not recorded here (never
written on this node, or crowded out), is read from storage as before.

Snapshots are recorded only after their commit is acknowledged, and an older version never
replaces a newer one: a payment actor that loads the row while a create's detached commit is
still being acknowledged may record version 2 before the create records version 1. A commit of
unknown outcome forgets the payment, since storage may then hold either version.

Bounded: the least recently recorded snapshot goes first. Concurrency context: the event loop
thread only, like the actors that write it.
"""

from __future__ import annotations

from collections import OrderedDict

from mps.domain.payments import Payment

__all__ = ["RecentPayments"]


class RecentPayments:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._snapshots: OrderedDict[str, Payment] = OrderedDict()

    def __len__(self) -> int:
        return len(self._snapshots)

    def record(self, payment: Payment) -> None:
        """`payment` is committed (or was just loaded from storage)."""
        if self.capacity <= 0:
            return
        known = self._snapshots.get(payment.id)
        if known is not None:
            if known.version > payment.version:
                return
            self._snapshots.move_to_end(payment.id)
        self._snapshots[payment.id] = payment
        if len(self._snapshots) > self.capacity:
            self._snapshots.popitem(last=False)

    def forget(self, payment_id: str) -> None:
        self._snapshots.pop(payment_id, None)

    def get(self, company_id: str, mode: str, payment_id: str) -> Payment | None:
        """The payment's latest committed snapshot if it is recorded here and belongs to the
        company and mode (another's is as unknown here as in storage); None otherwise."""
        payment = self._snapshots.get(payment_id)
        if payment is None or payment.company_id != company_id or payment.mode != mode:
            return None
        return payment
