"""Merchant Payments Service.

Layers, from the outside in:

    mps.http          aiohttp front end: routes, middlewares, schemas
    mps.actors        the actor runtime and the actors owning state (company, payment, writer)
    mps.domain        pure rules: state transitions, money, validation of business values
    mps.auth          sign-in, sessions, API keys, scopes and roles
    mps.persistence   database backends behind one interface, migrations, read queries
    mps.adapters      edges to the outside world: mail, broker, processor

`mps.bootstrap` is the composition root that wires them together.
"""
