"""A card processor for tests: the simulator, counting what it charged per idempotency key, and
able to hold chosen cards' authorizations until the test releases them. Passed to the app
through `Overrides.test_processor`, never patched in."""

from __future__ import annotations

import asyncio
from collections import Counter

from mps.adapters.processor import Authorization, CardInput, SimulatorProcessor


class TestProcessor(SimulatorProcessor):
    __test__ = False  # not a test class, whatever pytest makes of its name

    def __init__(self) -> None:
        super().__init__()
        # Approvals made (cards charged) and calls taken, per idempotency key.
        self.charged: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        # Authorizations of these card numbers wait for `release`; `held` counts them as they
        # arrive, so a test waits on the fact that one is held.
        self.hold: set[str] = set()
        self.release = asyncio.Event()
        self.held = 0

    async def authorize(
        self, card: CardInput, amount_minor: int, currency: str, *, idempotency_key: str
    ) -> Authorization:
        self.calls[idempotency_key] += 1
        if card.number in self.hold:
            self.held += 1
            await self.release.wait()
        before = self.charges
        answer = await super().authorize(
            card, amount_minor, currency, idempotency_key=idempotency_key
        )
        if self.charges > before:
            self.charged[idempotency_key] += 1
        return answer
