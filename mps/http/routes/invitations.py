"""Invitations (decisions 9): invite by email with a role; the invitee reads, accepts or rejects
through the token in the emailed link, and accepting continues with a sign-in code.

The token is shown to nobody but the invitee: it is in the email's link only, and stored as a
keyed hash. The token routes need no credential and are limited per IP, so a token cannot be
guessed by trying.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aiohttp import web

from mps.actors.company import AcceptInvitation, CreateInvitation, DecideInvitation
from mps.adapters.mail import Mail
from mps.domain.clock import iso
from mps.domain.invitations import Invitation, shown_status
from mps.domain.team import resolve_role
from mps.errors import Conflict, NotFound
from mps.http import signin
from mps.http.idempotency import presented
from mps.http.mailed import mail_input, send_after_commit, settle
from mps.http.pages.invitation import render_invitation_page
from mps.http.pagination import PAGE_FIELDS, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import INVITATION, INVITATION_STATUS, page, resource
from mps.http.routes.payments import EMAIL
from mps.http.routing import Auth, Call, LimitRule, Route, RouteFamily
from mps.http.schema import Obj, Str
from mps.http.security import csp_nonce
from mps.limits import Limit
from mps.persistence import invitation_store as store
from mps.persistence.queries import companies, members
from mps.persistence.team_store import load_roles
from mps.representations.invitations import invitation_json

__all__ = ["ROUTES", "invite_link"]


def invite_link(call: Call, token: str) -> str:
    return f"{call.services.settings.public_url}/invite/{token}"


def _now(call: Call) -> str:
    return iso(call.services.clock())


def _view(call: Call, invitation: Invitation) -> dict[str, Any]:
    return invitation_json(invitation, _now(call))


async def create_invitation(call: Call) -> Resource:
    """Commits the invitation, then mails its link; a mail that cannot be sent leaves the
    invitation PENDING with `emailStatus: FAILED` (and why) in the 201, never a 500 that
    would make the client invite twice. Inviting again sends a new link."""
    session, body = call.session, call.body
    email = signin.normalize_email(body["email"])

    def present(result: tuple[Invitation, str]) -> Resource:
        return Resource(_view(call, result[0]), 201)

    user = await members.user_by_email(call.services.database, email)
    invitation, token = await call.services.shards.ask_company(
        session.company_id,
        CreateInvitation(
            email, body["roleId"], session.user_id, session.scopes, call.audit(),
            user["id"] if user is not None else None, idempotency=call.idempotent(present),
        ),
    )  # fmt: skip
    company = await companies.company(call.services.database, session.company_id)
    link = invite_link(call, token)
    mail = Mail(
        to=email,
        subject=f"You are invited to join {company.name}",
        text=(
            f"You have been invited to join {company.name} on Merchant Payments.\n\n"
            f"Accept the invitation: {link}\n\nIt expires in 7 days. If you did not expect "
            "it, you can ignore this message."
        ),
        link=link,
    )
    outcome = await send_after_commit(
        call,
        mail,
        lambda status, error: store.email_outcome(session.company_id, invitation.id, status, error),
    )
    result = (replace(invitation, email_status=outcome.status, email_error=outcome.error), token)
    await settle(call, result)
    return present(result)


async def list_invitations(call: Call) -> Page:
    found, cursor = await store.list_invitations(
        call.services.database,
        call.session.company_id,
        page_request(call.query),
        _now(call),
        status=call.query.get("status"),
    )
    return Page([_view(call, i) for i in found], cursor)


async def revoke_invitation(call: Call) -> Resource:
    session = call.session
    invitation = await store.get_invitation(
        call.services.database, session.company_id, call.param("id")
    )
    if invitation is None:
        raise NotFound("No such invitation")

    def present(after: Invitation) -> Resource:
        return Resource(_view(call, after))

    idem = call.idempotent(present)
    after = await call.services.shards.ask_company(
        session.company_id, DecideInvitation(invitation, "REVOKED", call.audit(), idempotency=idem)
    )
    return presented(idem, after, present)


async def _by_token(call: Call) -> Invitation:
    token = call.param("token")
    invitation = await store.by_token_hash(
        call.services.database, call.services.keyring.hash_invitation_token(token)
    )
    if invitation is None:
        raise NotFound("No such invitation")
    return invitation


async def public_view(call: Call, invitation: Invitation) -> dict[str, Any]:
    """What the link shows its holder: the company, the role and the email invited."""
    services = call.services
    company = await companies.company(services.database, invitation.company_id)
    role = resolve_role(invitation.role_id, await load_roles(services.database, company.id))
    return {
        "company": {"name": company.name},
        "role": {"id": invitation.role_id, "name": role.name if role else None},
        "email": invitation.email,
        "status": shown_status(invitation, _now(call)),
        "expiresAt": invitation.expires_at,
    }


async def show_by_token(call: Call) -> Resource:
    return Resource(await public_view(call, await _by_token(call)))


async def accept(call: Call) -> Resource:
    invitation = await _by_token(call)
    if shown_status(invitation, _now(call)) != "PENDING":
        raise Conflict("The invitation is no longer open", code="invalid_state")
    # The code mailed next comes from the invitee's one budget (mps.http.signin), spent before
    # the membership is saved so that a 429 leaves nothing half-done, and only on the node that
    # serves the company: a request passed there whole would spend it twice.
    await call.services.shards.require(invitation.company_id)
    await signin.spend_code_budget(call.services, invitation.email)
    user_id = await call.services.shards.ask_company(
        invitation.company_id, AcceptInvitation(invitation)
    )
    login = await signin.continue_as_member(
        call.services, invitation.email, user_id, invitation.company_id
    )
    return Resource({**login, "companyId": invitation.company_id})


async def reject(call: Call) -> Resource:
    invitation = await _by_token(call)
    after = await call.services.shards.ask_company(
        invitation.company_id, DecideInvitation(invitation, "REJECTED", call.audit())
    )
    return Resource(await public_view(call, after))


async def invite_page(call: Call) -> web.Response:
    """The page the emailed link opens; its security headers (the Content Security Policy names
    the nonce) are set for every response by `mps.http.security`."""
    nonce = csp_nonce(call.request)
    try:
        invitation = await _by_token(call)
    except NotFound:
        html = render_invitation_page(None, None, nonce)
        return web.Response(status=404, text=html, content_type="text/html")
    html = render_invitation_page(await public_view(call, invitation), call.param("token"), nonce)
    return web.Response(text=html, content_type="text/html")


_PER_IP = LimitRule(Limit("invitation-token", 30, 60), lambda call: call.ip)
PUBLIC_VIEW = {
    "company": Obj({"name": Str()}, required=["name"]),
    "role": Obj({"id": Str(), "name": Str(nullable=True)}, required=["id", "name"]),
    "email": Str(),
    "status": INVITATION_STATUS,
    "expiresAt": Str(format="date-time"),
}

_team = RouteFamily("team", read="team:read", write="team:write")

ROUTES = [
    _team.post(
        "/team/invitations",
        create_invitation,
        "Invite someone by email with a role; the link is emailed to them",
        status=201,
        body=Obj(
            {"email": EMAIL, "roleId": Str(max_length=64)},
            required=["email", "roleId"],
            rules=[mail_input(addresses=("email",))],
        ),
        limits=(LimitRule.per_user(Limit("invitation-create", 20, 60)),),
        response=resource(INVITATION),
    ),
    _team.get(
        "/team/invitations",
        list_invitations,
        "List invitations, newest first",
        query=Obj({**PAGE_FIELDS, "status": INVITATION_STATUS}),
        response=page(INVITATION),
    ),
    _team.post(
        "/team/invitations/{id}/revoke",
        revoke_invitation,
        "Withdraw a PENDING invitation",
        response=resource(INVITATION),
        commits_key=True,
    ),
    Route(
        "GET",
        "/team/invitations/token/{token}",
        show_by_token,
        "The invitation a link names (no credential)",
        "team",
        Auth.PUBLIC,
        limits=(_PER_IP,),
        response=resource(PUBLIC_VIEW, name="InvitationPreview"),
    ),
    Route(
        "POST",
        "/team/invitations/token/{token}/accept",
        accept,
        "Accept: join the company, then continue with the code mailed to you",
        "team",
        Auth.PUBLIC,
        limits=(_PER_IP,),
        keyless=True,
        response=resource(
            {"loginId": Str(), "expiresAt": Str(format="date-time"), "companyId": Str()}
        ),
    ),
    Route(
        "POST",
        "/team/invitations/token/{token}/reject",
        reject,
        "Decline the invitation",
        "team",
        Auth.PUBLIC,
        limits=(_PER_IP,),
        keyless=True,
        response=resource(PUBLIC_VIEW, name="InvitationPreview"),
    ),
    Route(
        "GET",
        "/invite/{token}",
        invite_page,
        "The invitation page the email links to",
        "team",
        Auth.PUBLIC,
        api=False,
        limits=(_PER_IP,),
    ),
]
