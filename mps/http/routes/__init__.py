"""The route table: every route of the service, declared in the module of its resource."""

from __future__ import annotations

from dataclasses import replace

from mps.http.routes import (
    analytics,
    api_keys,
    approvals,
    auth,
    balance,
    cards,
    checkout,
    companies,
    customers,
    dashboard,
    dev,
    developer,
    events,
    health,
    invitations,
    invoices,
    kyc,
    pages,
    payments,
    payouts,
    refunds,
    sandbox,
    settings,
    team,
    webhooks,
)
from mps.http.routing import Auth, Route

__all__ = ["all_routes"]


def _open_to_keys(routes: list[Route]) -> list[Route]:
    """The route families a secret key may call once its company turns on apiKeyAccess
    (decisions 2): payments, refunds, balance, payouts and bank accounts, cards, customers,
    invoices and events. API keys, settings, KYC, webhooks, analytics, team and auth stay
    session-only. Their public routes (an invoice's hosted page) stay public."""
    return [
        replace(route, key_access=True) if route.auth is Auth.SESSION else route for route in routes
    ]


def all_routes(*, development: bool) -> list[Route]:
    return [
        *health.ROUTES,
        *auth.build(development),
        *companies.ROUTES,
        *api_keys.ROUTES,
        *_open_to_keys(payments.ROUTES),
        *_open_to_keys(refunds.ROUTES),
        *_open_to_keys(balance.ROUTES),
        *_open_to_keys(payouts.ROUTES),
        *_open_to_keys(invoices.ROUTES),
        *_open_to_keys(cards.ROUTES),
        *analytics.ROUTES,
        *team.ROUTES,
        *invitations.ROUTES,
        *approvals.ROUTES,
        *checkout.build(development),
        *_open_to_keys(customers.ROUTES),
        *settings.ROUTES,
        *kyc.ROUTES,
        *webhooks.ROUTES,
        *_open_to_keys(events.ROUTES),
        *developer.ROUTES,
        *sandbox.ROUTES,
        *dev.ROUTES,
        *pages.build(),
        *dashboard.build(development),
    ]
