"""Sign-in routes (decisions 2)."""

from __future__ import annotations

from mps.http import signin
from mps.http.mailed import mail_input
from mps.http.replies import Resource
from mps.http.resources import MEMBER_FIELDS, MODE, SESSION, resource
from mps.http.routing import Auth, Call, LimitRule, Route
from mps.http.schema import Array, Bool, Obj, Str
from mps.limits import auth_limits

__all__ = ["build"]

_EMAIL = Str(min_length=3, max_length=254, format="email")
_MODE = MODE
_TIME = Str(format="date-time")
_LOGIN = resource({"loginId": Str(), "expiresAt": _TIME})


def _ip(call: Call) -> str:
    return call.ip


def _login_id(call: Call) -> str | None:
    value = call.body.get("loginId") if isinstance(call.body, dict) else None
    return value if isinstance(value, str) else None


async def signup(call: Call) -> Resource:
    body = call.body
    result = await signin.sign_up(
        call.services, body["companyName"], body["email"], body.get("name")
    )
    return Resource(result, 201)


async def login(call: Call) -> Resource:
    return Resource(await signin.start_login(call.services, call.body["email"]))


async def otp_request(call: Call) -> Resource:
    return Resource(await signin.request_code(call.services, call.body["loginId"]))


async def otp_verify(call: Call) -> Resource:
    body = call.body
    result = await signin.verify_code(
        call.services,
        body["loginId"],
        body["code"],
        body.get("companyId"),
        body.get("mode"),
        call.origin,
    )
    return Resource(result)


async def logout(call: Call) -> Resource:
    await signin.logout(call.services, call.session)
    return Resource({"loggedOut": True})


async def me(call: Call) -> Resource:
    return Resource(await signin.me(call.services, call.session))


async def session_mode(call: Call) -> Resource:
    mode = call.body["mode"]
    return Resource(await signin.switch_mode(call.services, call.session, mode, call.origin))


def build(development: bool) -> list[Route]:
    limits = auth_limits(development)
    by_ip = LimitRule(limits.signin_per_ip, _ip)
    return [
        Route(
            "POST",
            "/auth/signup",
            signup,
            "Create a company and its owner; sends a code",
            "auth",
            Auth.PUBLIC,
            status=201,
            limits=(by_ip,),
            response=resource({"loginId": Str(), "companyId": Str(), "expiresAt": _TIME}),
            body=Obj(
                {
                    "companyName": Str(min_length=1, max_length=200),
                    "email": _EMAIL,
                    "name": Str(max_length=200),
                },
                required=["companyName", "email"],
                rules=[mail_input(addresses=("email",), headers=("companyName", "name"))],
            ),
        ),
        Route(
            "POST",
            "/auth/login",
            login,
            "Start signing in; sends a code to members",
            "auth",
            Auth.PUBLIC,
            limits=(by_ip,),
            response=_LOGIN,
            body=Obj(
                {"email": _EMAIL}, required=["email"], rules=[mail_input(addresses=("email",))]
            ),
        ),
        Route(
            "POST",
            "/auth/otp/request",
            otp_request,
            "Send a fresh code for a login",
            "auth",
            Auth.PUBLIC,
            limits=(LimitRule(limits.otp_request, _login_id),),
            response=_LOGIN,
            body=Obj({"loginId": Str(min_length=1, max_length=64)}, required=["loginId"]),
        ),
        Route(
            "POST",
            "/auth/otp/verify",
            otp_verify,
            "Exchange a code for a session token",
            "auth",
            Auth.PUBLIC,
            limits=(LimitRule(limits.otp_verify, _login_id),),
            response=resource(SESSION, name="Session"),
            body=Obj(
                {
                    "loginId": Str(min_length=1, max_length=64),
                    "code": Str(pattern=r"[0-9]{6}", message="must be 6 digits"),
                    "companyId": Str(max_length=64),
                    "mode": _MODE,
                },
                required=["loginId", "code"],
            ),
        ),
        Route(
            "POST",
            "/auth/logout",
            logout,
            "Revoke this session",
            "auth",
            response=resource({"loggedOut": Bool()}),
        ),
        Route(
            "GET",
            "/auth/me",
            me,
            "The session's user, company, role, scopes and mode",
            "auth",
            response=resource({**MEMBER_FIELDS, "scopes": Array(Str())}),
        ),
        Route(
            "POST",
            "/auth/session/mode",
            session_mode,
            "Switch the session to test or live; the token that asked stops working",
            "auth",
            response=resource({**SESSION, "previousSessionEnded": Bool()}, name="SwitchedSession"),
            body=Obj({"mode": _MODE}, required=["mode"]),
        ),
    ]
