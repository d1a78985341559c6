"""The route table: every route of the service, declared in the module of its resource."""

from __future__ import annotations

from mps.http.routes import (
    analytics,
    api_keys,
    approvals,
    auth,
    balance,
    cards,
    checkout,
    customers,
    dev,
    developer,
    events,
    health,
    invitations,
    invoices,
    kyc,
    payments,
    payouts,
    refunds,
    sandbox,
    settings,
    team,
    webhooks,
)
from mps.http.routing import Route

__all__ = ["all_routes"]


def all_routes(*, development: bool) -> list[Route]:
    return [
        *health.ROUTES,
        *auth.build(development),
        *api_keys.ROUTES,
        *payments.ROUTES,
        *refunds.ROUTES,
        *balance.ROUTES,
        *payouts.ROUTES,
        *invoices.ROUTES,
        *cards.ROUTES,
        *analytics.ROUTES,
        *team.ROUTES,
        *invitations.ROUTES,
        *approvals.ROUTES,
        *checkout.build(development),
        *customers.ROUTES,
        *settings.ROUTES,
        *kyc.ROUTES,
        *webhooks.ROUTES,
        *events.ROUTES,
        *developer.ROUTES,
        *sandbox.ROUTES,
        *dev.ROUTES,
    ]
