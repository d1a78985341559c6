"""A mail that cannot be sent never turns a saved change into a 500, and text bound for a mail
header is refused at input when it holds a control or line-separator character."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient

from mps.adapters.mail import DevMailbox, Mail, MailFailed
from mps.bootstrap import Overrides
from mps.http.keys import SERVICES
from tests.conftest import Clock
from tests.helpers import Member, answered, assert_refused, create_invoice, post_as, sign_up

LINE_BREAKS = ["Acme\r\nBcc: thief@example.net", "Acme\u2028Ltd", "Acme\x85Ltd", "Acme\nLtd"]


class FlakyMailbox(DevMailbox):
    """The dev mailbox, refusing every message while `failing` is set (a relay that is down or
    refuses the address)."""

    failing = False

    async def send(self, mail: Mail) -> None:
        if self.failing:
            raise MailFailed("the mail server could not be reached or took too long")
        await super().send(mail)


@pytest.fixture
async def flaky(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> tuple[TestClient[Any, Any], FlakyMailbox, Member]:
    mailbox = FlakyMailbox()
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, mailer=mailbox))
    )
    owner = await sign_up(client, "owner@example.com")
    return client, mailbox, owner


async def _assert_refused_at(response: ClientResponse, field: str) -> dict[str, Any]:
    """`response` refuses the input with 400, naming `field` as the one at fault; its body."""
    body = await assert_refused(response, 400)
    assert body["errors"][0]["field"] == field, body
    return body


@pytest.mark.parametrize("name", LINE_BREAKS)
async def test_a_company_name_with_a_line_break_is_refused_in_settings(
    client: TestClient[Any, Any], name: str
) -> None:
    # given
    owner = await sign_up(client)

    # when
    response = await client.patch(
        "/api/v1/merchant/settings", json={"name": name}, headers=owner.headers
    )

    # then
    await _assert_refused_at(response, "name")


@pytest.mark.parametrize(
    ("field", "value"), [("companyName", LINE_BREAKS[0]), ("name", LINE_BREAKS[1])]
)
async def test_a_name_with_a_line_break_is_refused_at_sign_up(
    client: TestClient[Any, Any], field: str, value: str
) -> None:
    body = {"companyName": "Acme", "email": "owner@example.com", field: value}

    response = await client.post("/api/v1/auth/signup", json=body)

    await _assert_refused_at(response, field)


async def test_an_invoice_customer_name_with_a_line_break_is_refused(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    invoice = {"currency": "USD", "customerEmail": "buyer@example.com", "amountMinor": "500"}

    response = await post_as(
        client, owner, "/api/v1/merchant/invoices", {**invoice, "customerName": LINE_BREAKS[2]}
    )

    await _assert_refused_at(response, "customerName")


async def test_an_invoice_whose_email_fails_is_created_once_and_says_so(
    flaky: tuple[TestClient[Any, Any], FlakyMailbox, Member],
) -> None:
    # given: the relay refuses everything
    client, mailbox, owner = flaky
    mailbox.failing = True

    # when
    invoice = await create_invoice(client, owner)

    # then: 201 with the failure, one invoice, and it shows the failure when read again
    assert invoice["status"] == "SENT"
    assert invoice["emailStatus"] == "FAILED"
    assert invoice["emailError"] == "the mail server could not be reached or took too long"
    listed = await client.get("/api/v1/merchant/invoices", headers=owner.headers)
    assert [i["id"] for i in (await listed.json())["data"]] == [invoice["id"]]
    fetched = await client.get(f"/api/v1/merchant/invoices/{invoice['id']}", headers=owner.headers)
    assert (await fetched.json())["emailStatus"] == "FAILED"

    # and when the relay is back, a resend sends it
    mailbox.failing = False
    resent = await client.post(
        f"/api/v1/merchant/invoices/{invoice['id']}/resend", headers=owner.headers
    )
    assert resent.status == 200
    assert (await resent.json())["emailStatus"] == "SENT"
    assert len(mailbox.messages("buyer@example.com")) == 1


async def test_a_replayed_invoice_create_answers_what_the_first_answer_said_about_its_email(
    flaky: tuple[TestClient[Any, Any], FlakyMailbox, Member],
) -> None:
    # given: a create under an Idempotency-Key whose email failed
    client, mailbox, owner = flaky
    mailbox.failing = True
    body = {"currency": "USD", "customerEmail": "buyer@example.com", "amountMinor": "500"}
    headers = {**owner.headers, "Idempotency-Key": "invoice-1"}
    first = await client.post("/api/v1/merchant/invoices", json=body, headers=headers)

    # when
    mailbox.failing = False
    replay = await client.post("/api/v1/merchant/invoices", json=body, headers=headers)

    # then: the same bytes, both saying FAILED; no second invoice, no mail
    assert first.status == replay.status == 201
    assert (await first.json())["emailStatus"] == "FAILED"
    assert await replay.read() == await first.read()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert mailbox.messages("buyer@example.com") == []


async def test_an_invitation_whose_email_fails_is_created_once_and_says_so(
    flaky: tuple[TestClient[Any, Any], FlakyMailbox, Member],
) -> None:
    # given
    client, mailbox, owner = flaky
    mailbox.failing = True

    # when
    created = await post_as(
        client,
        owner,
        "/api/v1/team/invitations",
        {"email": "new@example.com", "roleId": "role_viewer"},
    )

    # then
    invitation = await answered(created)
    assert invitation["status"] == "PENDING"
    assert invitation["emailStatus"] == "FAILED"
    assert invitation["emailError"]
    listed = await client.get("/api/v1/team/invitations", headers=owner.headers)
    data = (await listed.json())["data"]
    assert [(i["id"], i["emailStatus"]) for i in data] == [(invitation["id"], "FAILED")]


async def test_a_sign_up_whose_code_cannot_be_mailed_answers_503_and_makes_nothing(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given
    mailbox = FlakyMailbox()
    mailbox.failing = True
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, mailer=mailbox))
    )

    # when
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Acme", "email": "owner@example.com"}
    )

    # then
    await assert_refused(response, 503, "mail_failed")
    database = client.app[SERVICES].database
    assert await database.fetchval("SELECT COUNT(*) FROM companies") == 0
    assert await database.fetchval("SELECT COUNT(*) FROM users") == 0


@pytest.mark.parametrize("email", ["jöhn@example.com", "john@exämple.com"])
async def test_a_sign_up_with_an_address_the_relay_cannot_take_is_refused_at_input(
    client: TestClient[Any, Any], email: str
) -> None:
    # when
    response = await client.post(
        "/api/v1/auth/signup", json={"companyName": "Acme", "email": email}
    )

    # then: 400 on the field, and nothing made
    body = await _assert_refused_at(response, "email")
    assert "ASCII" in body["errors"][0]["message"]
    database = client.app[SERVICES].database
    assert await database.fetchval("SELECT COUNT(*) FROM companies") == 0
