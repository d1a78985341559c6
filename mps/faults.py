"""Which exceptions of the services we depend on are faults of theirs, not bugs of ours.

Each adapter translates its own driver's connection errors into `Unavailable` where it talks to
its service (mps.persistence.postgres, mps.cluster.node). This list is the pipeline's last net
for one that slips through: a lost connection, a refused socket or a server shutting down is
answered 503 with Retry-After, never 500 (mps.http.pipeline.to_service_error).
"""

from __future__ import annotations

import errno
import socket

import aiormq.exceptions
import asyncpg

__all__ = ["is_infrastructure_fault"]

_FAULTS: tuple[type[BaseException], ...] = (
    ConnectionError,
    TimeoutError,
    socket.gaierror,
    # The session is gone or could not be made (its subclasses: refused, reset, unknown outcome).
    asyncpg.PostgresConnectionError,
    # The server shut down, crashed, ended an idle session, or cancelled a statement.
    asyncpg.OperatorInterventionError,
    # Too many connections, disk full, out of memory.
    asyncpg.InsufficientResourcesError,
    # asyncpg's protocol stuck after the server ended the session under it.
    asyncpg.InternalClientError,
    aiormq.exceptions.AMQPConnectionError,
    aiormq.exceptions.ChannelInvalidStateError,
)
# Only these exact classes: their subclasses are our bugs or configuration (wrong arguments to
# a query, a queue declared with other arguments, access refused), which must stay 500s.
_EXACTLY: tuple[type[BaseException], ...] = (
    asyncpg.InterfaceError,  # "the connection is closed"
    aiormq.exceptions.ChannelClosed,  # the broker closed the channel under us
)
_NETWORK = frozenset({errno.ENETDOWN, errno.ENETUNREACH, errno.EHOSTDOWN, errno.EHOSTUNREACH})


def is_infrastructure_fault(error: BaseException) -> bool:
    """Whether `error` says a database, broker or network we depend on failed."""
    if isinstance(error, _FAULTS) or type(error) in _EXACTLY:
        return True
    return isinstance(error, OSError) and error.errno in _NETWORK
