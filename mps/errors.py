"""The service's exception tree.

    ServiceError                       every error a client may see; carries status and code
    ├── BadRequest          400        validation_error, invalid_json, invalid_cursor, ...
    │   └── ValidationFailed           with per-field errors
    ├── Unauthenticated     401        unauthenticated, session_required, api_key_required
    ├── PaymentDeclined     402        card_declined, insufficient_funds
    ├── Forbidden           403        insufficient_scope, test_key_required, account_not_verified
    ├── NotFound            404        not_found (also for other companies' resources)
    ├── MethodNotAllowed    405
    ├── Conflict            409        invalid_state, duplicate, balance_insufficient, ...
    ├── PayloadTooLarge     413
    ├── UnsupportedMedia    415
    ├── Unprocessable       422        idempotency_key_reuse
    ├── RateLimited         429        with retry_after seconds
    └── Unavailable         503        unavailable, processor_unavailable, processor_timeout;
        │                              always with retry_after seconds (1 unless the raiser
        │                              knows better): a fault is temporary, so the client is
        │                              told when to try again
        └── ShardMoved                 the company's shard moved between nodes mid-request

    StaleWrite                         a snapshot was written from an older version (our own bug or
    │                                  a concurrent writer); never reaches a client as such
    └── KeyAlreadyStored               an Idempotency-Key's response was stored by another request
                                       first; the pipeline replays that response instead

Infrastructure errors (a database or broker connection lost, a socket refused) are translated
into `Unavailable` where they arise, by the adapter that talks to that service (`raise
Unavailable(...) from exc`); the pipeline's last net turns any that slip through into 503 too.
Anything else raised while serving a request is our fault: the client sees 500 internal_error and
the log has the traceback with the request id.
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
    """An error with a place in the contract's status table."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadRequest(ServiceError):
    status = 400
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
    status = 401
    code = "unauthenticated"


class PaymentDeclined(ServiceError):
    status = 402
    code = "card_declined"


class Forbidden(ServiceError):
    status = 403
    code = "insufficient_scope"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class MethodNotAllowed(ServiceError):
    status = 405
    code = "method_not_allowed"

    def __init__(self, message: str, allowed: frozenset[str] = frozenset()) -> None:
        super().__init__(message)
        self.allowed = allowed


class Conflict(ServiceError):
    status = 409
    code = "invalid_state"


class PayloadTooLarge(ServiceError):
    status = 413
    code = "payload_too_large"


class UnsupportedMedia(ServiceError):
    status = 415
    code = "unsupported_media_type"


class Unprocessable(ServiceError):
    status = 422
    code = "idempotency_key_reuse"


class RateLimited(ServiceError):
    status = 429
    code = "rate_limited"

    def __init__(self, retry_after: int, message: str = "Too many requests; retry later") -> None:
        super().__init__(message)
        self.retry_after = retry_after


# Seconds a client is told to wait after a 503 whose raiser did not name a wait: long enough
# for a reconnect or a shard's move to be under way, short enough that a retry finds it done.
RETRY_AFTER = 1


class Unavailable(ServiceError):
    """Nothing is wrong with the request; the service cannot serve it right now. Always carries
    `retry_after` (whole seconds, at least 1), so every 503 tells the client when to retry."""

    status = 503
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
