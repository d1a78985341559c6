"""The signed-in person's companies and the move to another of them (mps.http.companies)."""

from __future__ import annotations

from mps.http import companies
from mps.http.replies import Aggregate, Resource
from mps.http.resources import MODE, aggregate, resource
from mps.http.routing import Call, Route
from mps.http.schema import Array, Bool, Obj, Str

__all__ = ["ROUTES"]

_ROLE = Obj({"id": Str(), "name": Str()}, required=["id", "name"])
_COMPANY = Obj(
    {
        "id": Str(description="The company's id (co_…).", example="co_3kTq9ZpX2mV7bN4cR8sW1yHd"),
        "name": Str(description="The company's name.", example="Blue Mug Coffee"),
        "role": _ROLE,
        "current": Bool(
            description="Whether this is the company of the session that asked.", example=True
        ),
    },
    required=["id", "name", "role", "current"],
)


async def list_companies(call: Call) -> Aggregate:
    return Aggregate(await companies.companies(call.services, call.session))


async def switch_company(call: Call) -> Resource:
    chosen = call.body["companyId"]
    return Resource(
        await companies.switch_company(call.services, call.session, chosen, call.origin)
    )


ROUTES = [
    Route(
        "GET",
        "/auth/companies",
        list_companies,
        "The companies the signed-in person is a member of",
        "auth",
        response=aggregate(Array(_COMPANY)),
    ),
    Route(
        "POST",
        "/auth/session/company",
        switch_company,
        "Move the session to another of the person's companies; the token that asked stops working",
        "auth",
        body=Obj({"companyId": Str(min_length=1, max_length=64)}, required=["companyId"]),
        response=resource(
            {
                "sessionToken": Str(),
                "expiresAt": Str(
                    format="date-time",
                    description="When the new session token expires.",
                    example="2026-11-23T21:30:00.000Z",
                ),
                "company": Obj({"id": Str(), "name": Str()}, required=["id", "name"]),
                "role": _ROLE,
                "mode": MODE,
                "livemode": Bool(),
                "previousSessionEnded": Bool(),
            },
            name="CompanySession",
        ),
    ),
]
