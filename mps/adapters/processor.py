"""Card processors behind one interface. The simulator is the shipped implementation: test mode
always uses it, and so does live mode in the development server mode (decisions 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mps.domain.cards import brand_of

__all__ = ["Authorization", "CardInput", "Processor", "SimulatorProcessor"]


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


class Processor(Protocol):
    async def authorize(self, card: CardInput, amount_minor: int, currency: str) -> Authorization:
        """Charge the card; declines are answers, not exceptions."""
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
