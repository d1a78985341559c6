"""The HTTP status of every error in the service's exception tree (mps.errors), in one table.

The exception tree says what went wrong and nothing of HTTP, so that the domain and the actors
raising it stay below the HTTP layer; here, and only here, each class meets its status. A
class's subclasses answer as it does unless the table names them too (`CheckoutDeclined` is a
`PaymentDeclined`, a 402). `ProtocolError` is the one error with a status of its own: aiohttp
refused the exchange itself, with a status it chose (a request line it could not read, a header
too large), and the envelope passes that status on as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mps.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PaymentDeclined,
    RateLimited,
    ServiceError,
    ShardMoved,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMedia,
    ValidationFailed,
)

__all__ = ["INTERNAL", "STATUSES", "UNAVAILABLE", "ProtocolError", "status_of"]

INTERNAL = 500
UNAVAILABLE = 503

# Every class of mps.errors a client may see, subclasses included, so that the table reads as
# the whole contract (tests/test_error_statuses.py holds it to that).
STATUSES: Mapping[type[ServiceError], int] = MappingProxyType(
    {
        ServiceError: INTERNAL,
        BadRequest: 400,
        ValidationFailed: 400,
        Unauthenticated: 401,
        PaymentDeclined: 402,
        Forbidden: 403,
        NotFound: 404,
        MethodNotAllowed: 405,
        Conflict: 409,
        PayloadTooLarge: 413,
        UnsupportedMedia: 415,
        Unprocessable: 422,
        RateLimited: 429,
        Unavailable: UNAVAILABLE,
        ShardMoved: UNAVAILABLE,
    }
)


class ProtocolError(ServiceError):
    """aiohttp refused the exchange with a status of its own choosing (`status`), before or
    outside any route: the envelope says what it said, with the code given."""

    def __init__(self, status: int, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.status = status


def status_of(error: ServiceError) -> int:
    """The HTTP status `error` is answered with: its class's, or its nearest ancestor's."""
    if isinstance(error, ProtocolError):
        return error.status
    for cls in type(error).__mro__:
        if issubclass(cls, ServiceError) and cls in STATUSES:
            return STATUSES[cls]
    return INTERNAL
