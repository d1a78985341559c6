"""The payment actor: one per payment, applying its transitions one at a time.

Because a payment's checkout, cancel, expiry and reversal all arrive here as messages, a race
between them has exactly one winner: the first to be handled changes the state, the others find
it no longer PENDING and answer 409. Each transition commits the payment, the customer it names
and its events in one unit. The turn does not wait for that commit: it adopts the new state at
once (a reservation, against which the next message is decided), hands the unit over, and takes
its next message; the caller's reply waits for the commit, and a unit refused or of unknown
outcome is undone (mps.actors.commits). A multi-use link's checkout creates a child payment,
whose random reference is drawn again should another payment hold it already
(mps.actors.references).

The package is split by concern: `messages` (the commands and their replies), `core` (the state
and the commits every turn shares), `checkout` (the card's authorization, outside the turn),
`refunds` (creating and settling refunds) and `actor` (activation, dispatch, expiry and
chargebacks).
"""

from mps.actors.attempts import SettleAttempts
from mps.actors.payment import messages
from mps.actors.payment.actor import PaymentActor
from mps.actors.payment.core import PROCESSOR_DEADLINE

# Every command and reply `messages` lists in its `__all__` is the package's too.
from mps.actors.payment.messages import *  # noqa: F403

__all__ = ["PROCESSOR_DEADLINE", "PaymentActor", "SettleAttempts", *messages.__all__]
