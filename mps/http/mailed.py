"""Mail about a change already committed (an invoice, an invitation): how it went is recorded on
the change and shown in the answer, never raised.

A failed send must not turn a saved change into a 500: the client would retry and make the
change twice. So the send's outcome (SENT, or FAILED with `MailFailed.reason`) is written to the
change's row (`emailStatus`, `emailError`) and the answer carries it; a resend tries again.

Under an Idempotency-Key the response was stored with the change, rendered before the mail was
tried; `settle` stores the final rendering in its place, so the first answer and every replay
are the same bytes (decisions 16). A crash between the two leaves the stored answer at PENDING;
the invoice or invitation itself still tells the truth.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mps.adapters.mail import Mail, MailFailed, header_problem, mail_address
from mps.errors import FieldError
from mps.http.routing import Call
from mps.persistence.queries import idempotency as stored_keys
from mps.persistence.statements import Statement

__all__ = ["Outcome", "mail_input", "send_after_commit", "settle"]

logger = logging.getLogger(__name__)


Rule = Callable[[dict[str, Any]], list[FieldError]]


def mail_input(*, addresses: tuple[str, ...] = (), headers: tuple[str, ...] = ()) -> Rule:
    """A body rule: `addresses` must be addresses the mailer can send to (ASCII after NFKC,
    `mail_address`), and `headers` (text that reaches a subject or a display name, and names
    in general) must hold no control or line-separator character. 400 on the field."""

    def rule(body: dict[str, Any]) -> list[FieldError]:
        errors: list[FieldError] = []
        for name in addresses:
            value = body.get(name)
            if isinstance(value, str):
                try:
                    mail_address(value)
                except ValueError as exc:
                    errors.append(FieldError(name, str(exc)))
        for name in headers:
            value = body.get(name)
            if isinstance(value, str) and (problem := header_problem(value)) is not None:
                errors.append(FieldError(name, problem))
        return errors

    return rule


@dataclass(frozen=True)
class Outcome:
    status: str  # SENT or FAILED
    error: str | None = None


async def send_after_commit(
    call: Call, mail: Mail, record: Callable[[str, str | None], Statement]
) -> Outcome:
    """Send `mail` and commit `record(status, error)`; a failure is logged (its kind only: no
    address, no text) and returned, not raised."""
    try:
        await call.services.mailer.send(mail)
        outcome = Outcome("SENT")
    except MailFailed as exc:
        logger.warning("an email could not be sent: %s", exc.reason)
        outcome = Outcome("FAILED", exc.reason)
    await call.services.actors.commit(record(outcome.status, outcome.error))
    return outcome


async def settle(call: Call, result: Any) -> None:
    """Under an Idempotency-Key whose response was stored with the change, store `result` as
    presented now in its place (and as the answer this request sends)."""
    claim = call.idempotency
    if claim is None or claim.stored is None or claim.present is None:
        return
    claim.record(claim.present(result))  # sets claim.stored; its insert is not wanted
    assert claim.stored is not None
    raw = claim.stored[1]
    await call.services.actors.commit(
        stored_keys.replace_body(claim.scope, claim.key, claim.fingerprint, claim.seal(raw))
    )
