"""Invoices (decisions 8): created, numbered and emailed; paid out of band, voided, resent and
made overdue one change at a time, each on the timeline; a PDF and a hosted page for the
customer; stats per currency."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.conftest import Clock
from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    event_types,
    live_session,
    post_as,
    read_as,
    read_object,
    sign_in,
    sign_up,
    two_companies,
)
from tests.money import sandbox_key, services, simulate

pytestmark = pytest.mark.both_backends

ITEMS = [
    {"description": "Design work", "quantity": 3, "unitAmountMinor": "12500"},
    {"description": "Hosting (monthly)", "quantity": 1, "unitAmountMinor": "2999"},
]


async def _create(client: TestClient[Any, Any], member: Member, **fields: Any) -> Any:
    body = {"currency": "USD", "customerEmail": "Buyer@Example.com", "items": ITEMS, **fields}
    return await client.post("/api/v1/merchant/invoices", json=body, headers=member.headers)


async def _invoice(client: TestClient[Any, Any], member: Member, **fields: Any) -> dict[str, Any]:
    response = await _create(client, member, **fields)
    body: dict[str, Any] = await response.json()
    assert response.status == 201, body
    return body


async def _action(
    client: TestClient[Any, Any], member: Member, invoice_id: str, action: str, **body: Any
) -> Any:
    return await post_as(
        client, member, f"/api/v1/merchant/invoices/{invoice_id}/{action}", body or None
    )


async def test_invoice_is_created_sent_numbered_and_emailed_with_its_hosted_link(
    client: TestClient[Any, Any], member: Member
) -> None:
    created = await _invoice(
        client, member, customerName="Ann Buyer", dueDate="2030-01-31", memo="Thank you"
    )

    assert created["id"].startswith("inv_") and created["status"] == "SENT"
    assert created["invoiceNumber"] == "INV-000001"
    assert created["amountMinor"] == str(3 * 12500 + 2999) and created["currency"] == "USD"
    got = await read_object(client, member, "invoices", created["id"])
    assert got["customer"] == {"email": "buyer@example.com", "name": "Ann Buyer"}
    assert [i["amountMinor"] for i in got["items"]] == ["37500", "2999"]
    assert got["dueDate"] == "2030-01-31" and got["memo"] == "Thank you"
    assert got["paidAt"] is None and got["voidedAt"] is None
    mail = await client.get("/api/v1/dev/mailbox", params={"to": "buyer@example.com"})
    [message] = (await mail.json())["data"]
    assert "INV-000001" in message["subject"] and message["link"] == got["hostedUrl"]
    assert got["hostedUrl"] in message["text"] and message["html"]
    assert "USD 404.99" in message["text"]


async def test_single_total_invoice_takes_an_amount_instead_of_items(
    client: TestClient[Any, Any], member: Member
) -> None:
    created = await _invoice(client, member, items=None, amountMinor="50000")

    assert created["amountMinor"] == "50000"
    assert (await read_object(client, member, "invoices", created["id"]))["items"] is None


@pytest.mark.parametrize(
    "fields",
    [
        {"items": None},  # neither items nor an amount
        {"amountMinor": "100"},  # both
        {"items": [{"description": "x", "quantity": 0, "unitAmountMinor": "1"}]},
        {"items": [{"description": "x", "quantity": 100001, "unitAmountMinor": "1"}]},
        {"items": [{"description": "x" * 201, "quantity": 1, "unitAmountMinor": "1"}]},
        {"items": [{"description": "x", "quantity": 1, "unitAmountMinor": "1"}] * 101},
        {"items": [{"description": "x", "quantity": 100000, "unitAmountMinor": "999999999999"}]},
        {"dueDate": "2030-02-30"},
        {"currency": "XXX"},
        {"customerEmail": "not-an-email"},
    ],
)
async def test_bad_invoice_input_is_400_and_creates_nothing(
    client: TestClient[Any, Any], member: Member, fields: dict[str, Any]
) -> None:
    response = await _create(client, member, **fields)

    assert response.status == 400, await response.text()
    assert_envelope(await response.json(), 400, "validation_error")
    assert (await read_as(client, member, "/api/v1/merchant/invoices"))["data"] == []


async def test_numbers_count_up_skip_numbers_given_by_hand_and_refuse_duplicates(
    client: TestClient[Any, Any], member: Member
) -> None:
    first = await _invoice(client, member)
    own = await _invoice(client, member, invoiceNumber="INV-000002")
    duplicate = await _create(client, member, invoiceNumber="INV-000002")
    third = await _invoice(client, member)

    assert first["invoiceNumber"] == "INV-000001" and own["invoiceNumber"] == "INV-000002"
    await assert_refused(duplicate, 409, "duplicate")
    # INV-000002 is the merchant's own: the next automatic number is the one after it.
    assert third["invoiceNumber"] == "INV-000003"


async def test_concurrent_creates_get_distinct_consecutive_numbers(
    client: TestClient[Any, Any], member: Member
) -> None:
    created = await asyncio.gather(*(_invoice(client, member) for _ in range(40)))

    numbers = sorted(c["invoiceNumber"] for c in created)
    assert numbers == [f"INV-{n:06d}" for n in range(1, 41)]


async def test_mark_paid_records_the_payment_and_touches_no_balance(
    client: TestClient[Any, Any], member: Member
) -> None:
    invoice = await _invoice(client, member)

    response = await _action(
        client, member, invoice["id"], "mark-paid",
        paidAt="2026-11-20T10:00:00Z", reference="WIRE-42", note="Paid by bank transfer",
    )  # fmt: skip

    body = await response.json()
    assert response.status == 200, body
    assert body["status"] == "PAID" and body["paidAt"] == "2026-11-20T10:00:00.000Z"
    assert body["paidReference"] == "WIRE-42"
    movements = await client.get("/api/v1/merchant/balance/transactions", headers=member.headers)
    assert (await movements.json())["data"] == []


@pytest.mark.parametrize(
    ("first", "then"),
    [("mark-paid", "cancel"), ("cancel", "mark-paid"), ("mark-paid", "resend"),
     ("cancel", "resend"), ("cancel", "cancel")],
)  # fmt: skip
async def test_a_paid_or_void_invoice_refuses_further_changes_with_409(
    client: TestClient[Any, Any], member: Member, first: str, then: str
) -> None:
    invoice = await _invoice(client, member)
    assert (await _action(client, member, invoice["id"], first)).status == 200

    response = await _action(client, member, invoice["id"], then)

    await assert_refused(response, 409, "invalid_state")


async def test_every_change_is_on_the_timeline_with_who_made_it_and_sends_its_event(
    client: TestClient[Any, Any], member: Member
) -> None:
    invoice = await _invoice(client, member)
    await _action(client, member, invoice["id"], "resend")
    await _action(client, member, invoice["id"], "cancel")

    response = await client.get(
        f"/api/v1/merchant/invoices/{invoice['id']}/timeline", headers=member.headers
    )

    entries = (await response.json())["data"]
    assert [(e["status"], e["note"]) for e in entries] == [
        ("SENT", None),
        ("SENT", "resent"),
        ("VOID", None),
    ]
    assert {e["actor"] for e in entries} == {member.user_id}
    types = await event_types(client, member)
    assert types.count("invoice.sent") == 2 and "invoice.voided" in types
    mail = await client.get("/api/v1/dev/mailbox", params={"to": "buyer@example.com"})
    assert len((await mail.json())["data"]) == 2


async def test_invoice_past_its_due_date_becomes_overdue_and_can_still_be_paid(
    client: TestClient[Any, Any], member: Member, clock: Clock
) -> None:
    due = (clock.now + timedelta(days=2)).date().isoformat()
    invoice = await _invoice(client, member, dueDate=due)
    overdue = services(client).invoice_overdue

    await overdue.run_once()
    assert (await read_object(client, member, "invoices", invoice["id"]))["status"] == "SENT"
    clock.advance(days=3)
    await overdue.run_once()
    member = await sign_in(client, member)

    assert (await read_object(client, member, "invoices", invoice["id"]))["status"] == "OVERDUE"
    assert "invoice.overdue" in await event_types(client, member)
    paid = await _action(client, member, invoice["id"], "mark-paid")
    assert paid.status == 200 and (await paid.json())["status"] == "PAID"


async def test_invoice_that_fell_due_while_the_service_was_down_is_overdue_after_start(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given an invoice due tomorrow, and a shutdown
    first: TestClient[Any, Any] = await aiohttp_client(make_app(invoice_overdue_interval=3600))
    member = await sign_up(first)
    due = (clock.now + timedelta(days=1)).date().isoformat()
    invoice = await _invoice(first, member, dueDate=due)
    await first.close()

    # when the service starts again three days later
    clock.advance(days=3)
    second: TestClient[Any, Any] = await aiohttp_client(make_app(invoice_overdue_interval=0.05))
    member = await sign_in(second, member)

    # then its first passes find the invoice and make it overdue
    for _ in range(100):
        if (await read_object(second, member, "invoices", invoice["id"]))["status"] == "OVERDUE":
            break
        await asyncio.sleep(0.05)
    assert (await read_object(second, member, "invoices", invoice["id"]))["status"] == "OVERDUE"


async def test_sandbox_makes_an_invoice_overdue(
    client: TestClient[Any, Any], member: Member
) -> None:
    key = await sandbox_key(client, member, "invoices:write")
    invoice = await _invoice(client, member)

    response = await simulate(client, key, "invoice.overdue", invoiceId=invoice["id"])

    body = await response.json()
    assert response.status == 200, body
    assert body["object"]["status"] == "OVERDUE" and body["event"]["type"] == "invoice.overdue"


async def test_list_filters_and_stats_per_currency(
    client: TestClient[Any, Any], member: Member
) -> None:
    usd = await _invoice(client, member)
    paid = await _invoice(client, member, items=None, amountMinor="1000")
    await _action(client, member, paid["id"], "mark-paid")
    eur = await _invoice(
        client, member, currency="EUR", customerEmail="other@example.com", items=None,
        amountMinor="700",
    )  # fmt: skip

    sent = await client.get(
        "/api/v1/merchant/invoices", params={"status": "SENT"}, headers=member.headers
    )
    other = await client.get(
        "/api/v1/merchant/invoices",
        params={"customerEmail": "OTHER@example.com"},
        headers=member.headers,
    )
    stats = await client.get("/api/v1/merchant/invoices/stats", headers=member.headers)
    one = await client.get(
        "/api/v1/merchant/invoices/stats", params={"currency": "USD"}, headers=member.headers
    )

    assert [i["id"] for i in (await sent.json())["data"]] == [eur["id"], usd["id"]]
    assert [i["id"] for i in (await other.json())["data"]] == [eur["id"]]
    by_currency = {s["currency"]: s for s in (await stats.json())["data"]}
    assert by_currency["USD"]["countByStatus"] == {"SENT": 1, "OVERDUE": 0, "PAID": 1, "VOID": 0}
    assert by_currency["USD"]["outstandingMinor"] == usd["amountMinor"]
    assert by_currency["USD"]["paidMinor"] == "1000"
    assert by_currency["EUR"]["outstandingMinor"] == "700"
    assert (await one.json())["currency"] == "USD"


async def test_pdf_is_a_real_pdf_with_the_invoice_in_its_text(
    client: TestClient[Any, Any], member: Member
) -> None:
    from pypdf import PdfReader

    invoice = await _invoice(client, member, customerName="Ann Buyer")

    response = await client.get(
        f"/api/v1/merchant/invoices/{invoice['id']}/pdf", headers=member.headers
    )

    assert response.status == 200
    assert response.headers["Content-Type"] == "application/pdf"
    assert 'filename="INV-000001.pdf"' in response.headers["Content-Disposition"]
    data = await response.read()
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    for expected in ("INV-000001", "Ann Buyer", "buyer@example.com", "Design work", "404.99"):
        assert expected in text, expected


async def test_hosted_page_and_its_pdf_open_with_the_link_and_not_without(
    client: TestClient[Any, Any], member: Member
) -> None:
    invoice = await _invoice(client, member)
    link = urlsplit(invoice["hostedUrl"])

    page = await client.get(f"{link.path}?{link.query}")
    wrong = await client.get(f"{link.path}?t=guessed")
    bare = await client.get(link.path)
    pdf = await client.get(f"{link.path}/pdf?{link.query}")
    wrong_pdf = await client.get(f"{link.path}/pdf?t=guessed")

    assert page.status == 200 and "INV-000001" in await page.text()
    assert wrong.status == 404 and bare.status == 404
    assert "INV-000001" not in await wrong.text()
    assert pdf.status == 200 and pdf.headers["Content-Type"] == "application/pdf"
    assert wrong_pdf.status == 404


async def test_another_company_or_mode_sees_no_invoice(client: TestClient[Any, Any]) -> None:
    owner, other = await two_companies(client)
    invoice = await _invoice(client, owner)
    live = await live_session(client, owner)

    for member in (other, live):
        path = f"/api/v1/merchant/invoices/{invoice['id']}"
        assert (await client.get(path, headers=member.headers)).status == 404
        assert (await client.get(f"{path}/pdf", headers=member.headers)).status == 404
        assert (await _action(client, member, invoice["id"], "cancel")).status == 404
        assert (await read_as(client, member, "/api/v1/merchant/invoices"))["data"] == []
    # numbering is per company and mode: the other company starts at one
    assert (await _invoice(client, other))["invoiceNumber"] == "INV-000001"
