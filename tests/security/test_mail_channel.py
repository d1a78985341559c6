"""The mail channel (SECURITY.md, "Mail"): TLS to the relay is verified, a private CA is trusted
only when configured, sign-in codes stay out of subjects, and no text reaches a header with a
line break. Against a real SMTP server on loopback that requires STARTTLS (tests/smtp.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.adapters.mail import DevMailbox, Mail, MailFailed, SmtpMailer
from mps.bootstrap import Overrides
from mps.config import ConfigError, load_settings
from tests.conftest import Clock
from tests.helpers import create_invoice, production_env, sign_up
from tests.smtp import SmtpServer, starttls_server

SENDER = "Merchant Payments <no-reply@example.com>"


class RelayingMailbox(DevMailbox):
    """The dev mailbox (so a test can sign in), which first hands each message to `relay`
    when one is set: a failure there is the mailer's failure."""

    relay: SmtpMailer | None = None

    async def send(self, mail: Mail) -> None:
        if self.relay is not None:
            await self.relay.send(mail)
        await super().send(mail)


async def test_mail_is_refused_to_a_relay_whose_self_signed_certificate_is_not_trusted(
    tmp_path: Path,
) -> None:
    # given: a relay offering STARTTLS with a self-signed certificate, and no CA configured
    with starttls_server(tmp_path) as server:
        mailer = SmtpMailer(server.url, SENDER)

        # when
        with pytest.raises(MailFailed) as failed:
            await mailer.send(Mail(to="a@example.com", subject="Hello", text="a secret link"))

        # then: nothing was handed over, and the reason names no server detail
        assert server.received.messages == []
    assert failed.value.reason == "the mail server's certificate could not be verified"


async def test_mail_reaches_a_relay_whose_private_ca_is_configured(tmp_path: Path) -> None:
    # given: the same relay, its certificate trusted through the CA setting
    with starttls_server(tmp_path) as server:
        mailer = SmtpMailer(server.url, SENDER, ca_file=str(server.ca_file))

        # when
        await mailer.send(Mail(to="a@example.com", subject="Hello", text="the body"))

        # then
        assert len(server.received.messages) == 1
        assert server.received.recipients == [["a@example.com"]]
        assert server.received.messages[0]["Subject"] == "Hello"


async def test_a_subject_with_line_breaks_cannot_add_a_header_or_a_recipient(
    tmp_path: Path,
) -> None:
    # given: a company name stored before input refused line breaks
    with starttls_server(tmp_path) as server:
        mailer = SmtpMailer(server.url, SENDER, ca_file=str(server.ca_file))

        # when
        subject = "Invoice from Acme\r\nBcc: thief@example.net\u2028X-Evil: 1\x85"
        await mailer.send(Mail(to="a@example.com", subject=subject, text="the body"))

        # then: one recipient, no injected header, the subject on one line
        message = server.received.messages[0]
        assert server.received.recipients == [["a@example.com"]]
        assert message["Bcc"] is None and message["X-Evil"] is None
        assert "\n" not in message["Subject"] and "thief@example.net" in message["Subject"]


@pytest.fixture
async def relayed(
    tmp_path: Path,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    clock: Clock,
) -> AsyncIterator[tuple[TestClient[Any, Any], RelayingMailbox, SmtpServer]]:
    """The service mailing through a `RelayingMailbox` whose relay each test sets, and an SMTP
    server that requires STARTTLS to relay to."""
    with starttls_server(tmp_path) as server:
        mailbox = RelayingMailbox()
        client: TestClient[Any, Any] = await aiohttp_client(
            make_app(Overrides(clock=clock, mailer=mailbox))
        )
        yield client, mailbox, server


async def test_the_sign_in_code_is_in_the_body_and_never_in_the_subject(
    relayed: tuple[TestClient[Any, Any], RelayingMailbox, SmtpServer],
) -> None:
    # given: the service mailing through the trusted relay
    client, mailbox, server = relayed
    mailbox.relay = SmtpMailer(server.url, SENDER, ca_file=str(server.ca_file))

    # when
    await sign_up(client, "owner@example.com")

    # then
    code = mailbox.messages("owner@example.com")[0].otp
    assert code is not None
    received = server.received.messages[0]
    assert code not in received["Subject"]
    assert code in received.get_payload(decode=False)


async def test_an_invoice_mailed_through_an_untrusted_relay_is_saved_and_says_its_email_failed(
    relayed: tuple[TestClient[Any, Any], RelayingMailbox, SmtpServer],
) -> None:
    # given: a signed-in merchant, then a relay whose certificate is not trusted
    client, mailbox, server = relayed
    owner = await sign_up(client, "owner@example.com")
    mailbox.relay = SmtpMailer(server.url, SENDER)

    # when
    invoice = await create_invoice(client, owner)

    # then: the invoice stands, the answer says its email failed, nothing was sent
    assert invoice["emailStatus"] == "FAILED"
    assert invoice["emailError"] == "the mail server's certificate could not be verified"
    assert server.received.messages == []

    # and when the relay's CA is configured, a resend goes out
    mailbox.relay = SmtpMailer(server.url, SENDER, ca_file=str(server.ca_file))
    resent = await client.post(
        f"/api/v1/merchant/invoices/{invoice['id']}/resend", headers=owner.headers
    )
    assert resent.status == 200, await resent.text()
    assert (await resent.json())["emailStatus"] == "SENT"
    assert server.received.recipients == [["buyer@example.com"]]
    fetched = await client.get(f"/api/v1/merchant/invoices/{invoice['id']}", headers=owner.headers)
    assert (await fetched.json())["emailStatus"] == "SENT"


def test_the_smtp_ca_setting_is_loaded_at_start_and_a_wrong_one_stops_the_start(
    tmp_path: Path,
) -> None:
    # given: a CA file, and a path that holds none
    with starttls_server(tmp_path) as server:
        ca_file = str(server.ca_file)
    missing = str(tmp_path / "no-such-ca.pem")

    # when
    settings = load_settings(
        ["--data-dir", str(tmp_path)], production_env(MPS_SMTP_CA_FILE=ca_file)
    )
    with pytest.raises(ConfigError, match="MPS_SMTP_CA_FILE"):
        load_settings(["--data-dir", str(tmp_path)], production_env(MPS_SMTP_CA_FILE=missing))

    # then
    assert settings.smtp_ca_file == ca_file


@pytest.mark.parametrize(
    "sender", ["Payments <no-reply@example.com>\r\nBcc: thief@example.net", "not an address"]
)
def test_a_from_address_with_line_breaks_or_no_address_stops_the_start(
    tmp_path: Path, sender: str
) -> None:
    with pytest.raises(ConfigError, match="MPS_MAIL_FROM"):
        load_settings(["--data-dir", str(tmp_path)], production_env(MPS_MAIL_FROM=sender))
