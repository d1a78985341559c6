"""How an actor commits an idempotency key together with what the request created (decisions 16).

The HTTP pipeline claims the key with the company actor before the request runs and hands the
command an `IdempotencyRecord`. The actor that commits the request's change asks the record for
its statements, passing the command's result, and commits them in the same unit: either both the
change and the stored response exist, or neither does.
"""

from __future__ import annotations

from typing import Any, Protocol

from mps.persistence.statements import Statement

__all__ = ["IdempotencyRecord"]


class IdempotencyRecord(Protocol):
    def statements(self, result: Any) -> list[Statement]:
        """The writes that store the response this result will be rendered as."""
        ...

    def discard(self) -> None:
        """The unit given the last statements did not commit, and its caller answers anyway
        (an approved action another run executed first): what they stored is no response."""
        ...
