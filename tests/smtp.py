"""A real SMTP server on loopback for the mail channel's tests: aiosmtpd in a thread of its own,
offering STARTTLS with a certificate made here (self-signed, for 127.0.0.1), and keeping every
message it accepts."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from bench.mail_relay import loopback_certificate
from tests.helpers import free_port


def make_certificate(directory: Path, common_name: str = "smtp.invalid") -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    certificate, key = loopback_certificate(common_name, datetime.timedelta(days=1))
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(certificate)
    key_path.write_bytes(key)
    return cert_path, key_path


@dataclass
class Received:
    messages: list[Message] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(message_from_bytes(envelope.original_content))
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 OK"


@dataclass
class SmtpServer:
    url: str
    ca_file: Path
    received: Received


@contextmanager
def starttls_server(directory: Path) -> Iterator[SmtpServer]:
    """An SMTP server on 127.0.0.1 that requires STARTTLS before any mail."""
    cert_path, key_path = make_certificate(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    received = Received()
    port = free_port()
    controller = Controller(
        received,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        server_hostname="127.0.0.1",
        ready_timeout=10,
    )
    controller.start()
    try:
        yield SmtpServer(f"smtp://127.0.0.1:{port}", cert_path, received)
    finally:
        controller.stop()
