"""The invitation page as rendered HTML (mps.http.pages.invitation): what it shows in each status,
that every value from the inviter or the invitation is escaped, and that it fits the strict
Content Security Policy (its script and style carry the nonce, no inline handlers or style
attributes, nothing loaded from elsewhere, no data pasted into the script)."""

from __future__ import annotations

from typing import Any

import pytest

from mps.domain.invitations import INVITATION_STATUSES
from mps.http.pages.invitation import render_invitation_page
from tests.markup import attributes, inside, parse

NONCE = "n0nce-Abc_123"
TOKEN = "tok_Abc-123_xyz"


def _view(**changes: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "company": {"name": "Blue Mug Coffee"},
        "role": {"id": "role_finance", "name": "Finance"},
        "email": "new@example.com",
        "status": "PENDING",
        "expiresAt": "2026-03-12T10:15:00.000Z",
    }
    return {**view, **changes}


def _render(view: dict[str, Any] | None, token: str | None = TOKEN) -> str:
    return render_invitation_page(view, token, NONCE)


def test_pending_page_names_the_company_role_email_and_offers_both_answers() -> None:
    html = _render(_view())

    assert 'You\'re invited to join <span id="company">Blue Mug Coffee</span>' in html
    assert inside(html, "company") == "Blue Mug Coffee"
    assert inside(html, "role") == "Finance"
    assert inside(html, "email") == "new@example.com"
    assert inside(html, "status") == "Pending"
    assert attributes(html, "status")["data-status"] == "PENDING"
    assert inside(html, "expires") == "This invitation expires on 12 Mar 2026."
    assert inside(html, "accept") == "Accept invitation"
    assert inside(html, "decline") == "Decline"
    assert attributes(html, "accept")["type"] == attributes(html, "decline")["type"] == "button"
    assert attributes(html, "invitation")["data-token"] == TOKEN
    assert "<title>Join Blue Mug Coffee</title>" in html


def test_pending_page_has_a_labelled_code_form_hidden_until_accepted() -> None:
    html = _render(_view())

    form = attributes(html, "code-form")
    assert "hidden" in form
    code = attributes(html, "code")
    assert code["name"] == "code" and code["inputmode"] == "numeric"
    assert code["autocomplete"] == "one-time-code" and "required" in code
    assert '<label for="code">6-digit sign-in code</label>' in html
    assert attributes(html, "verify")["type"] == "submit"


def test_page_is_a_private_english_document_with_live_regions() -> None:
    html = _render(_view())

    assert html.startswith('<!doctype html><html lang="en">')
    assert '<meta name="robots" content="noindex">' in html
    assert '<meta name="viewport" content="width=device-width,initial-scale=1">' in html
    assert attributes(html, "code-sent")["aria-live"] == "polite"
    assert attributes(html, "outcome")["aria-live"] == "polite"
    assert attributes(html, "outcome")["role"] == "status"
    assert attributes(html, "error")["role"] == "alert"


def test_a_role_without_a_name_shows_its_id() -> None:
    html = _render(_view(role={"id": "role_custom_1", "name": None}))

    assert inside(html, "role") == "role_custom_1"


def test_page_escapes_a_hostile_company_email_and_role_name() -> None:
    html = _render(
        _view(
            company={"name": "<img src=x onerror=alert(1)>"},
            role={"id": "role_x", "name": "</dd><script>alert(2)</script>"},
            email='"><script>alert(3)</script>@example.com',
        )
    )

    assert "<img" not in html
    assert html.count("<script") == 1  # the page's own
    assert inside(html, "company") == "&lt;img src=x onerror=alert(1)&gt;"
    assert inside(html, "role") == "&lt;/dd&gt;&lt;script&gt;alert(2)&lt;/script&gt;"
    assert inside(html, "email") == "&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;@example.com"
    assert "<title>Join &lt;img src=x onerror=alert(1)&gt;</title>" in html


def test_a_hostile_token_stays_inside_its_attribute() -> None:
    token = '"><script>alert(1)</script>'
    html = _render(_view(), token)

    assert html.count("<script") == 1
    assert attributes(html, "invitation")["data-token"] == token
    assert 'data-token="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in html


def test_no_value_is_pasted_into_the_script() -> None:
    view = _view(company={"name": "Zanzibar Tea"}, email="zed@example.com")
    scripts = parse(_render(view, "tok_zzz")).scripts

    assert len(scripts) == 1
    for value in ("Zanzibar", "zed@example.com", "tok_zzz", "Finance"):
        assert value not in scripts[0]
    assert "innerHTML" not in scripts[0] and "localStorage" not in scripts[0]
    assert "sessionStorage" not in scripts[0] and "document.cookie" not in scripts[0]
    assert "textContent" in scripts[0]


@pytest.mark.parametrize(
    ("status", "label", "sentence"),
    [
        ("ACCEPTED", "Accepted", "This invitation has already been accepted."),
        ("REJECTED", "Declined", "This invitation was declined."),
        ("REVOKED", "Withdrawn", "Blue Mug Coffee withdrew this invitation."),
        ("EXPIRED", "Expired", "This invitation has expired. Ask Blue Mug Coffee"),
    ],
)
def test_an_answered_or_closed_invitation_says_so_and_offers_no_buttons(
    status: str, label: str, sentence: str
) -> None:
    html = _render(_view(status=status))

    assert inside(html, "status") == label
    assert attributes(html, "invitation")["data-status"] == status
    assert sentence in inside(html, "closed")
    assert inside(html, "company") == "Blue Mug Coffee"
    assert "You're invited" not in html
    assert "<button" not in html and "<form" not in html and "<input" not in html
    assert "<script" not in html and "data-token" not in html and TOKEN not in html


def test_every_status_is_covered() -> None:
    for status in INVITATION_STATUSES:
        html = _render(_view(status=status))
        assert attributes(html, "status")["data-status"] == status


def test_not_valid_page_reveals_nothing_of_any_invitation() -> None:
    pages = [_render(None), _render(None, None), _render(_view(), None)]

    for html in pages:
        assert "This invitation link is not valid" in html
        assert "<title>Invitation link not valid</title>" in html
        assert '<meta name="robots" content="noindex">' in html
        for secret in ("Blue Mug", "Finance", "new@example.com", "role_", "12 Mar", TOKEN):
            assert secret not in html
        assert "data-status" not in html and "data-token" not in html
        assert "<button" not in html and "<form" not in html and "<script" not in html
    assert pages[0] == pages[1] == pages[2]


def test_every_script_and_style_carries_the_nonce_and_no_element_has_handlers() -> None:
    for html in (
        _render(_view()),
        _render(_view(status="EXPIRED")),
        _render(None),
    ):
        tags = parse(html).tags
        styles = [attrs for tag, attrs in tags if tag == "style"]
        scripts = [attrs for tag, attrs in tags if tag == "script"]
        assert styles == [{"nonce": NONCE}]
        assert html.count("<style") == 1
        assert all(attrs == {"nonce": NONCE} for attrs in scripts)
        assert html.count("<script") == len(scripts)
        assert "javascript:" not in html.lower()
        for tag, attrs in tags:
            assert "style" not in attrs, tag
            assert not [name for name in attrs if name.startswith("on")], tag
            assert "src" not in attrs and "href" not in attrs, tag
            assert tag not in ("link", "img", "iframe", "object", "base", "a"), tag
    assert len([t for t, _ in parse(_render(_view())).tags if t == "script"]) == 1


def test_a_nonce_is_escaped_as_an_attribute() -> None:
    html = render_invitation_page(_view(), TOKEN, 'a"b')

    assert '<style nonce="a&quot;b">' in html and '<script nonce="a&quot;b">' in html
