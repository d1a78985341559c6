"""A commit that fails, handled one way by every actor.

An actor decides in its turn and changes its memory at once (a reservation in the books, a
payout's new state, an invoice number taken), so the next message is decided against it; the
commit lands afterwards. When the commit fails, what the actor changed is undone, and what the
failure says about storage decides whether the actor may go on trusting its memory:

    refused   the unit rolled back whole, or was never written: ShardMoved (refused before
              writing), StaleWrite and its kin (a guard the unit carries: KeyAlreadyStored, an
              approved request run twice, a row changed meanwhile), a constraint another row
              holds (IntegrityConflict: a number taken), and a contract error a guard raised.
              Memory is as it was before the turn; the caller gets the refusal (a same-key
              retry is then answered from what is stored).
    unknown   Unavailable (the writer missed its deadline, the database went away mid-commit),
              a cancellation, or anything unexpected. Memory is as it was before the turn too,
              but storage may hold the unit after all, so the actor is marked stale: it
              reloads what storage holds before it decides again.

Every actor that commits after deciding goes through `undo_on_failure`, so a refusal can never
be taken for a fault (a retried Idempotency-Key degrading the whole company), nor a fault for
a refusal (memory trusted while storage may differ).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from mps.errors import ServiceError, ShardMoved, StaleWrite, Unavailable
from mps.persistence.database import IntegrityConflict

__all__ = ["outcome_unknown", "undo_on_failure"]


def outcome_unknown(error: BaseException) -> bool:
    """Whether a commit that raised `error` may have landed all the same."""
    if isinstance(error, ShardMoved | StaleWrite | IntegrityConflict):
        return False
    if isinstance(error, Unavailable):
        return True
    # A contract error from a commit is a guard's answer (the unit rolled back whole); anything
    # else, cancellation included, leaves the outcome open.
    return not isinstance(error, ServiceError)


def _nothing() -> None:
    pass


@contextlib.contextmanager
def undo_on_failure(
    *, undo: Callable[[], None] = _nothing, stale: Callable[[], None] = _nothing
) -> Iterator[None]:
    """Around the await of a commit: on any failure, `undo` what the turn changed in memory,
    then, when the outcome is unknown, call `stale`; the failure propagates either way."""
    try:
        yield
    except BaseException as error:
        undo()
        if outcome_unknown(error):
            stale()
        raise
