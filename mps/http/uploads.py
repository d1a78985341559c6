"""Multipart uploads (decisions 0, 12): the route's `upload` step streams the request's parts
to object storage before the handler runs, and describes what arrived as plain fields.

Those fields (the document's type, its file name, detected content type, size and sha256) are
the request as Idempotency-Key sees it: a repeat of the same file replays the first answer,
another file under the same key is 422, and neither keeps the bytes it sent again. What the
handler does not claim (`Upload.keep`) is deleted once the request is answered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Upload"]

logger = logging.getLogger(__name__)


@dataclass
class Upload:
    fields: dict[str, Any]
    # Where the bytes went, for the handler (an object key).
    location: str
    # Removes the stored bytes; called after the request unless the handler kept them.
    discard: Callable[[], Awaitable[None]]
    # What the handler needs beside the fields and is no part of the request's identity (a
    # sealed key).
    private: dict[str, Any] = field(default_factory=dict)
    kept: bool = field(default=False)

    def keep(self) -> None:
        """From now on the handler owns the stored bytes (it is about to commit a row naming
        them); if that commit's outcome is unknown, the orphan sweep decides later."""
        self.kept = True

    async def release(self) -> None:
        if self.kept:
            return
        try:
            await self.discard()
        except Exception:
            # Left for the orphan sweep, which removes stored bytes no row names.
            logger.warning("could not remove the unclaimed upload %s", self.location, exc_info=True)
