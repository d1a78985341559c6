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
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.OperatorInterventionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    aiormq.exceptions.AMQPConnectionError,
    aiormq.exceptions.ChannelClosed,
    aiormq.exceptions.ChannelInvalidStateError,
)
_NETWORK = frozenset({errno.ENETDOWN, errno.ENETUNREACH, errno.EHOSTDOWN, errno.EHOSTUNREACH})


def is_infrastructure_fault(error: BaseException) -> bool:
    """Whether `error` says a database, broker or network we depend on failed."""
    return isinstance(error, _FAULTS) or (isinstance(error, OSError) and error.errno in _NETWORK)
