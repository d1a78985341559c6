"""The service's exception tree: what went wrong, in the domain's words.

    ServiceError                 every error a client may see; carries a machine `code` and a
    │                            message (internal_error: our own bug, and nothing more is said)
    ├── BadRequest               the input is invalid: validation_error, invalid_json,
    │   │                        invalid_cursor, invalid_code, unsupported_version, ...
    │   └── ValidationFailed     with one entry per offending field
    ├── Unauthenticated          no credential, or one we do not accept: unauthenticated,
    │                            session_required, api_key_required
    ├── PaymentDeclined          the card or its funds refused the payment: card_declined,
    │                            insufficient_funds
    ├── Forbidden                the caller is known but may not do this: insufficient_scope,
    │                            test_key_required, account_not_verified, not_a_member, ...
    ├── NotFound                 no such thing (also for another company's): not_found
    ├── MethodNotAllowed         the resource exists but not this action on it, with the allowed
    ├── Conflict                 the request contradicts the state it meets: invalid_state,
    │                            duplicate, balance_insufficient, limit_reached, ...
    ├── PayloadTooLarge          the body is larger than the service reads
    ├── UnsupportedMedia         the body is not in a format the service reads
    ├── Unprocessable            understood but not acceptable as sent: idempotency_key_reuse
    ├── RateLimited              too many requests; with retry_after seconds
    └── Unavailable              the request is fine, the service cannot serve it now:
        │                        unavailable, processor_unavailable, processor_timeout,
        │                        mail_failed; always with retry_after seconds (1 unless the
        │                        raiser knows better): a fault is temporary, so the client is
        │                        told when to try again
        └── ShardMoved           the company's shard moved between nodes mid-request

    StaleWrite                   a snapshot was written from an older version (our own bug or
    │                            a concurrent writer); never reaches a client as such
    └── KeyAlreadyStored         an Idempotency-Key's response was stored by another request
                                 first; the pipeline replays that response instead

The classes say what went wrong, never how a protocol answers it: the domain and the actors
raise them and know nothing of HTTP. The HTTP layer gives each its status in one table
(`mps.http.statuses`), and that table is the only place a class meets a status code.

Infrastructure errors (a database or broker connection lost, a socket refused) are translated
into `Unavailable` where they arise, by the adapter that talks to that service (`raise
Unavailable(...) from exc`); the pipeline's last net turns any that slip through into
`Unavailable` too. Anything else raised while serving a request is our fault: the client sees
internal_error and the log has the traceback with the request id.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "RETRY_AFTER",
    "BadRequest",
    "Conflict",
    "FieldError",
    "Forbidden",
    "KeyAlreadyStored",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PaymentDeclined",
    "RateLimited",
    "ServiceError",
    "ShardMoved",
    "StaleWrite",
    "Unauthenticated",
    "Unavailable",
    "Unprocessable",
    "UnsupportedMedia",
    "ValidationFailed",
]


class ServiceError(Exception):
    """An error a client may see: its `code` names what went wrong for a program, its message
    for a person. Raised as is only for our own bugs (internal_error)."""

    code = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadRequest(ServiceError):
    """The input is invalid, whatever the state it would meet."""

    code = "validation_error"


@dataclass(frozen=True)
class FieldError:
    field: str
    message: str


class ValidationFailed(BadRequest):
    """Bad input, with one entry per offending field."""

    def __init__(self, errors: list[FieldError]) -> None:
        first = errors[0]
        summary = f"{first.field}: {first.message}" if first.field else first.message
        if len(errors) > 1:
            summary += f" (and {len(errors) - 1} more)"
        super().__init__(summary)
        self.errors = errors


class Unauthenticated(ServiceError):
    """The request carries no credential, or one the service does not accept."""

    code = "unauthenticated"


class PaymentDeclined(ServiceError):
    """The card, its issuer or its funds refused the payment."""

    code = "card_declined"


class Forbidden(ServiceError):
    """The caller is known, and refused: its role, scope, key or account may not do this."""

    code = "insufficient_scope"


class NotFound(ServiceError):
    """No such thing, or none the caller may know of (another company's is not found either)."""

    code = "not_found"


class MethodNotAllowed(ServiceError):
    """The resource exists, but not this action on it; `allowed` names those it takes."""

    code = "method_not_allowed"

    def __init__(self, message: str, allowed: frozenset[str] = frozenset()) -> None:
        super().__init__(message)
        self.allowed = allowed


class Conflict(ServiceError):
    """The request is valid but contradicts the state it meets (a refund of a refunded
    payment, a payout above the balance, a name already taken)."""

    code = "invalid_state"


class PayloadTooLarge(ServiceError):
    """The body is larger than the service reads."""

    code = "payload_too_large"


class UnsupportedMedia(ServiceError):
    """The body is in a format the service does not read."""

    code = "unsupported_media_type"


class Unprocessable(ServiceError):
    """Understood, and not acceptable as sent (an Idempotency-Key reused for another request)."""

    code = "idempotency_key_reuse"


class RateLimited(ServiceError):
    """Too many requests for a limit; `retry_after` seconds until the next is counted."""

    code = "rate_limited"

    def __init__(self, retry_after: int, message: str = "Too many requests; retry later") -> None:
        super().__init__(message)
        self.retry_after = retry_after


# Seconds a client is told to wait after an `Unavailable` whose raiser did not name a wait: long
# enough for a reconnect or a shard's move to be under way, short enough that a retry finds it
# done.
RETRY_AFTER = 1


class Unavailable(ServiceError):
    """Nothing is wrong with the request; the service cannot serve it right now. Always carries
    `retry_after` (whole seconds, at least 1), so every such answer tells the client when to
    retry."""

    code = "unavailable"

    def __init__(
        self, message: str, *, code: str | None = None, retry_after: int = RETRY_AFTER
    ) -> None:
        super().__init__(message, code=code)
        self.retry_after = max(1, int(retry_after))


class ShardMoved(Unavailable):
    """The company's shard is no longer this node's (taken over, or being handed over) and the
    request could not be passed on: nothing was done, and retrying reaches the new owner."""

    def __init__(
        self, message: str = "The service is moving this account between nodes; retry"
    ) -> None:
        super().__init__(message)


class StaleWrite(Exception):
    """A versioned write found a different version than it expected, or a conditional write
    matched no row. The actor that issued it must reload its snapshot before trying again."""


class KeyAlreadyStored(StaleWrite):
    """The request's Idempotency-Key already holds a live stored response (another request under
    the same key committed first). The unit rolled back; the pipeline replays what is stored.
    Not a sign of a broken actor, so actors answer it instead of crashing."""
