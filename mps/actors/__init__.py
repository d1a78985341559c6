"""Actors that own the service's state.

Who may ask whom (an ask waits for a reply; a tell does not). Asks only ever point down this list,
so no cycle of asks, and hence no deadlock, can form:

    HTTP handlers
      -> company actor        (one per company and mode: settings, members, keys, idempotency keys)
        -> payment actor      (one per payment: its state machine)
          -> persistence actor (one per database: group commit)

Each actor holds the Idempotency-Keys of the commands it decides (mps.actors.idempotency); the
company actor also holds those claimed apart, before their command.
An actor never asks an actor above it or beside it. Notifications that travel upward (a payment
telling its company that a customer was seen) are tells, or rows written in the same transaction.
"""
