"""The committed snapshots of recently written payments, for reads that need not go to storage.

A merchant reads a payment mostly just after writing it: it polls the status of the payment it
created a moment ago, or reads it back after a cancel. Every write of a payment is made by the
actors of its shard on the node that owns the shard (another node's commits are fenced off), and
they record here each snapshot they have committed or loaded. So while this node owns the shard,
the latest snapshot recorded here is the stored row, and `GET /merchant/payments/:id` answers
from it without a database round trip. A node that does not own the shard, or a payment not
recorded here (never written on this node, or crowded out), is read from storage as before.

Snapshots are recorded only after their commit is acknowledged, and an older version never
replaces a newer one: a payment actor that loads the row while a create's detached commit is
still being acknowledged may record version 2 before the create records version 1. A commit of
unknown outcome forgets the payment, since storage may then hold either version.

One bounded store per node (the least recently recorded snapshot goes first), so that one busy
merchant may use all of it. Each ownership of a shard records through a `ShardView` of its own,
and reads only what it recorded: a snapshot recorded while this node owned the shard before
is not the stored row any more if another node wrote the payment meanwhile, so it is never
answered, and simply ages out. Concurrency context: the event loop thread only, like the actors
that write it.
"""

from __future__ import annotations

from collections import OrderedDict

from mps.domain.payments import Payment

__all__ = ["RecentPayments", "ShardView"]


class RecentPayments:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # payment id -> (the ShardView that recorded it, the snapshot)
        self._snapshots: OrderedDict[str, tuple[ShardView, Payment]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._snapshots)

    def view(self) -> ShardView:
        """A view for one ownership of one shard: a new one each time the node takes a shard."""
        return ShardView(self)

    def record(self, view: ShardView, payment: Payment) -> None:
        if self.capacity <= 0:
            return
        known = self._snapshots.get(payment.id)
        if known is not None:
            if known[0] is view and known[1].version > payment.version:
                return
            self._snapshots.move_to_end(payment.id)
        self._snapshots[payment.id] = (view, payment)
        if len(self._snapshots) > self.capacity:
            self._snapshots.popitem(last=False)

    def forget(self, payment_id: str) -> None:
        self._snapshots.pop(payment_id, None)

    def get(self, view: ShardView, company_id: str, mode: str, payment_id: str) -> Payment | None:
        known = self._snapshots.get(payment_id)
        if known is None or known[0] is not view:
            return None
        payment = known[1]
        if payment.company_id != company_id or payment.mode != mode:
            return None
        return payment


class ShardView:
    """What the actors of one ownership of one shard recorded in the node's `RecentPayments`."""

    def __init__(self, store: RecentPayments) -> None:
        self._store = store

    def record(self, payment: Payment) -> None:
        """`payment` is committed (or was just loaded from storage)."""
        self._store.record(self, payment)

    def forget(self, payment_id: str) -> None:
        self._store.forget(payment_id)

    def get(self, company_id: str, mode: str, payment_id: str) -> Payment | None:
        """The payment's latest committed snapshot if this view recorded it and it belongs to
        the company and mode (another's is as unknown here as in storage); None otherwise."""
        return self._store.get(self, company_id, mode, payment_id)
