"""The invitation page: what an invitee sees on opening the link in an invitation email
(`{publicUrl}/invite/{token}`). It names the company, the role and the email invited, and while
the invitation is PENDING lets the invitee accept it (then type the sign-in code mailed to them)
or decline it, through the JSON token routes of `mps.http.routes.invitations`. The markup is
`templates/invitation.html`, the style `static/css/invitation.css` and the script
`static/js/invitation.js`.

Every value shown is escaped (`mps.http.pages.markup.fill`), and the script, the same file for
every invitation, reads what it needs (the token, the company's name, the email) from the escaped
page, never from text pasted into it; it writes only with `textContent`. The page runs under the
strict Content Security Policy of `mps.http.security`: its one script and one style element carry
the request's nonce, and it has no inline event handlers, no `style=` attributes and nothing
loaded from elsewhere. The session the code opens is not kept: the page stores no token anywhere.
Once the invitee has joined, the page leads into the dashboard through its sign-in, with the
invited email filled in (`/dashboard/sign-in?email=…`).

`render_invitation_page(None, ...)` is the page for a link that names no invitation. It says
only that the link is not valid, never whether any invitation exists.
"""

from __future__ import annotations

from typing import Any

from mps.http.pages.dates import day_text
from mps.http.pages.markup import Markup, fill, hosted_page, inline_code

__all__ = ["render_invitation_page"]

_STATUS_LABELS = {
    "PENDING": "Pending",
    "ACCEPTED": "Accepted",
    "REJECTED": "Declined",
    "REVOKED": "Withdrawn",
    "EXPIRED": "Expired",
}


def _closed(status: str, company: str) -> str:
    """The sentence for an invitation that can no longer be answered."""
    if status == "ACCEPTED":
        return (
            "This invitation has already been accepted. Sign in to Merchant Payments to continue."
        )
    if status == "REJECTED":
        return "This invitation was declined."
    if status == "REVOKED":
        return f"{company} withdrew this invitation."
    if status == "EXPIRED":
        return f"This invitation has expired. Ask {company} to send you a new one."
    return "This invitation can no longer be answered."


def _page(
    title: str, content: Markup, nonce: str, *, main: Markup, script: Markup | None = None
) -> str:
    return hosted_page("invitation", title, content, nonce, main=main, script=script or Markup())


def render_invitation_page(view: dict[str, Any] | None, token: str | None, nonce: str) -> str:
    """The page of the invitation `view` (`public_view` of mps.http.routes.invitations) that
    `token` names (the not-valid page for None); `nonce` is the request's Content Security Policy
    nonce (`mps.http.security.csp_nonce`)."""
    if view is None or token is None:
        return _page(
            "Invitation link not valid",
            fill("invitation", "invalid"),
            nonce,
            main=fill("invitation", "invalid_main"),
        )
    company: str = view["company"]["name"]
    role = view["role"]
    status = view["status"]
    details = fill(
        "invitation",
        "details",
        role=role["name"] or role["id"],
        email=view["email"],
        status=status,
        label=_STATUS_LABELS.get(status, status.title()),
    )
    if status != "PENDING":
        content = fill(
            "invitation",
            "closed",
            company=company,
            details=details,
            sentence=_closed(status, company),
        )
        return _page(
            f"Invitation to join {company}",
            content,
            nonce,
            main=fill("invitation", "closed_main", status=status),
        )
    content = fill(
        "invitation",
        "pending",
        company=company,
        details=details,
        expires=day_text(view["expiresAt"]),
    )
    return _page(
        f"Join {company}",
        content,
        nonce,
        main=fill("invitation", "pending_main", token=token),
        script=fill("invitation", "script", nonce=nonce, script=inline_code("js/invitation.js")),
    )
