"""Company settings per mode (decisions 19)."""

from __future__ import annotations

from typing import Any

from mps.actors.company import UpdateSettings
from mps.domain.company import Company
from mps.domain.money import KNOWN_CURRENCIES
from mps.errors import FieldError
from mps.http.mailed import mail_input
from mps.http.replies import Resource
from mps.http.resources import SETTINGS, resource
from mps.http.routing import Call, Route
from mps.http.schema import Array, Bool, Enum, Int, Obj, Str
from mps.persistence.queries import companies as q

__all__ = ["ROUTES"]

_FIELDS = {
    "supportedCurrencies": "supported_currencies",
    "payoutSchedule": "payout_schedule",
    "settlementDelaySec": "settlement_delay_sec",
    "defaultApiVersion": "default_api_version",
    "apiKeyAccess": "api_key_access",
}


# Every cached credential of the company carries these (its pinned version, and whether its
# keys may call merchant routes): a change drops them, here at once and on other nodes within
# moments (mps.auth.credentials).
_CARRIED_BY_CREDENTIALS = frozenset({"default_api_version", "api_key_access"})


def settings_view(company: Company, mode: str) -> dict[str, Any]:
    return {"name": company.name, "mode": mode, **company.settings[mode].to_json()}


async def get_settings(call: Call) -> Resource:
    session = call.session
    company = await q.company(call.services.database, session.company_id)
    return Resource(settings_view(company, session.mode))


async def patch_settings(call: Call) -> Resource:
    session = call.session
    changes = {_FIELDS[name]: value for name, value in call.body.items() if name != "name"}
    if "supported_currencies" in changes:
        changes["supported_currencies"] = tuple(changes["supported_currencies"])
    company = await call.services.shards.ask_company(
        session.company_id,
        UpdateSettings(session.mode, changes, call.audit(), name=call.body.get("name")),
    )
    if _CARRIED_BY_CREDENTIALS.intersection(changes):
        await call.services.credentials.forget_company(session.company_id)
    return Resource(settings_view(company, session.mode))


def _not_empty(body: dict[str, Any]) -> list[FieldError]:
    return [] if body else [FieldError("body", "name at least one setting to change")]


ROUTES = [
    Route(
        "GET",
        "/merchant/settings",
        get_settings,
        "The company's settings for this mode",
        "settings",
        scope="settings:read",
        response=resource(SETTINGS, name="Settings"),
    ),
    Route(
        "PATCH",
        "/merchant/settings",
        patch_settings,
        "Change settings for this mode",
        "settings",
        scope="settings:write",
        response=resource(SETTINGS, name="Settings"),
        body=Obj(
            {
                "name": Str(min_length=1, max_length=200),
                "supportedCurrencies": Array(
                    Enum(sorted(KNOWN_CURRENCIES)), min_items=1, unique=True
                ),
                "payoutSchedule": Enum(["manual", "daily", "weekly"]),
                "settlementDelaySec": Int(minimum=0, maximum=30 * 86_400),
                "defaultApiVersion": Enum(["v1", "v2"]),
                "apiKeyAccess": Bool(),
            },
            # The name is the From of nothing but the Subject of every invoice and invitation.
            rules=[_not_empty, mail_input(headers=("name",))],
        ),
    ),
]
