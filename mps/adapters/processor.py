"""Card processors behind one interface. The simulator is the shipped implementation: test mode
always uses it, and so does live mode in the development server mode (decisions 4)."""

from __future__ import annotations

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
    async def authorize(self, card: CardInput, amount_minor: int, currency: str) -> Authorization:
        """Charge the card; declines are answers, not exceptions."""
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


class SimulatorProcessor:
    async def authorize(self, card: CardInput, amount_minor: int, currency: str) -> Authorization:
        decline = _DECLINES.get(card.number)
        return Authorization(
            approved=decline is None,
            brand=brand_of(card.number),
            last4=card.number[-4:],
            decline_code=decline,
        )

    async def refund(
        self, refund_id: str, payment_id: str, amount_minor: int, currency: str
    ) -> RefundResult:
        # The simulated network refunds everything; the sandbox kind refund.rejected is how a
        # rejection is tried.
        return RefundResult(completed=True)
