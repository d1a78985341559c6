"""The schedulers: background passes on a timer, each started and closed by the composition root
(mps.bootstrap), as against the actors one package up, which own state and answer messages.

All share one base (`periodic.py`): `Periodic`, the loop, and `ShardPass`, which keeps a pass
to the shards this node owns, since schedulers run on their shard's owner only, and hands each
row found to its owner's actor. The schedulers themselves: payment expiry (`expiry.py`), money's
due work (`money.py`: settlements, refunds, payout steps and schedules), approved actions and
stale approval requests (`approvals.py`), overdue invoices (`invoice_overdue.py`), the
identity-verification desk (`kyc_desk.py`), reconciliation (`reconciliation.py`) and
housekeeping (`housekeeping.py`, on shard 0's owner).
"""
