"""Built-in roles carry exactly the scopes decisions 3 gives them."""

from __future__ import annotations

from mps.domain.scopes import ALL_SCOPES, BUILTIN_ROLES

READ = {s for s in ALL_SCOPES if s.endswith(":read")}


def test_owner_and_admin_have_every_scope() -> None:
    assert BUILTIN_ROLES["role_owner"].scopes == set(ALL_SCOPES)
    assert BUILTIN_ROLES["role_admin"].scopes == set(ALL_SCOPES)


def test_finance_has_money_invoices_customers_and_analytics() -> None:
    assert BUILTIN_ROLES["role_finance"].scopes == {
        "payments:read",
        "payments:write",
        "refunds:read",
        "refunds:write",
        "payouts:read",
        "payouts:write",
        "invoices:read",
        "invoices:write",
        "customers:read",
        "analytics:read",
    }


def test_developer_has_read_scopes_and_settings_write() -> None:
    assert BUILTIN_ROLES["role_developer"].scopes == READ | {"settings:write"}


def test_viewer_has_every_read_scope_but_audit() -> None:
    assert BUILTIN_ROLES["role_viewer"].scopes == READ - {"audit:read"}
