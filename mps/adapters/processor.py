"""Card processors behind one interface. The simulator is the shipped implementation: test mode
always uses it, and so does live mode in the development server mode (decisions 4).

An authorization carries an idempotency key (the checkout attempt's id, mps.actors.attempts):
asked again under the same key, a processor answers what it answered the first time and charges
nothing more, which is what lets a checkout whose answer was lost be asked again safely.

That promise is only as wide as the processor's memory of its keys. A real processor keeps them
on its side, so every node of a cluster asks the same memory. The simulator keeps them in its
node's process: should a node be killed between an approval and its booking, the shard's next
owner recalls nothing, settles the attempt VOID, and a retry is charged again (simulated money,
in test mode and development only).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from mps.domain.cards import brand_of

__all__ = ["Authorization", "CardInput", "Processor", "RefundResult", "SimulatorProcessor"]


@dataclass(frozen=True)
class CardInput:
    number: str
    exp_month: int
    exp_year: int
    cvc: str

    def __repr__(self) -> str:
        # Never print a full card number or CVC, even in a traceback.
        return f"CardInput(****{self.number[-4:]})"


@dataclass(frozen=True)
class Authorization:
    approved: bool
    brand: str
    last4: str
    decline_code: str | None = None


@dataclass(frozen=True)
class RefundResult:
    """The processor's answer about a refund: completed, rejected (with a reason), or None
    when it has not decided yet (ask again later)."""

    completed: bool | None
    reason: str | None = None


class Processor(Protocol):
    async def authorize(
        self, card: CardInput, amount_minor: int, currency: str, *, idempotency_key: str
    ) -> Authorization:
        """Charge the card; declines are answers, not exceptions. Idempotent on
        `idempotency_key`: a second call under a key answers the first call's authorization
        and charges nothing."""
        ...

    async def recall(self, idempotency_key: str) -> Authorization | None:
        """What `authorize` answered under this key, without the card (a checkout attempt
        whose answer was lost is settled from it). None when no authorization was taken under
        the key, and then none will be: the key is closed, so a call under it still on its
        way is declined rather than charged."""
        ...

    async def refund(
        self, refund_id: str, payment_id: str, amount_minor: int, currency: str
    ) -> RefundResult:
        """Pay `amount_minor` of the payment back to its card. Called again for the same
        refund until it answers completed or rejected, so it must be idempotent on
        `refund_id`."""
        ...


# The documented test cards; any other Luhn-valid number is approved.
_DECLINES = {
    "4000000000000002": "card_declined",
    "4000000000009995": "insufficient_funds",
}
# How many answers the simulator remembers by key, the oldest forgotten first. A checkout
# attempt is settled within seconds (or at its payment's next activation), so this is ample,
# and it keeps a long-running development server's memory flat.
REMEMBERED = 20_000


class SimulatorProcessor:
    """Remembers its answers by idempotency key, in this process only (see the module's
    docstring); `charges` counts the approvals it made (a repeated key adds none), so a test
    can see a card was charged once."""

    def __init__(self, remembered: int = REMEMBERED) -> None:
        self._remembered = remembered
        # Key -> its answer; None for a key closed by `recall` before any call under it.
        self._answers: OrderedDict[str, Authorization | None] = OrderedDict()
        self.charges = 0

    async def authorize(
        self, card: CardInput, amount_minor: int, currency: str, *, idempotency_key: str
    ) -> Authorization:
        if idempotency_key in self._answers:
            known = self._answers[idempotency_key]
            if known is not None:
                return known
            # Closed by a recall: the attempt was settled as never charged.
            return Authorization(False, brand_of(card.number), card.number[-4:], "card_declined")
        decline = _DECLINES.get(card.number)
        answer = Authorization(
            approved=decline is None,
            brand=brand_of(card.number),
            last4=card.number[-4:],
            decline_code=decline,
        )
        if answer.approved:
            self.charges += 1
        self._remember(idempotency_key, answer)
        return answer

    async def recall(self, idempotency_key: str) -> Authorization | None:
        if idempotency_key not in self._answers:
            self._remember(idempotency_key, None)
        return self._answers[idempotency_key]

    def _remember(self, key: str, answer: Authorization | None) -> None:
        self._answers[key] = answer
        while len(self._answers) > self._remembered:
            self._answers.popitem(last=False)

    async def refund(
        self, refund_id: str, payment_id: str, amount_minor: int, currency: str
    ) -> RefundResult:
        # The simulated network refunds everything; the sandbox kind refund.rejected is how a
        # rejection is tried.
        return RefundResult(completed=True)
