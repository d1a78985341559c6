"""Outgoing email.

In development every message is kept in the dev mailbox, readable at /api/v1/dev/mailbox from
loopback only; the console gets one line saying a message arrived, never its text (a sign-in
email carries its code in the subject and the body, and a console is a log). Production sends
over SMTP and logs nothing of a message.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from mps.domain.clock import iso, utcnow
from mps.domain.ids import new_id

__all__ = ["DevMailbox", "Mail", "Mailer", "SmtpMailer"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str
    html: str | None = None
    # What the message carries for its reader to act on, so tests and the dev mailbox need not
    # scrape the text.
    otp: str | None = None
    link: str | None = None
    id: str = field(default_factory=lambda: new_id("msg"))
    sent_at: datetime = field(default_factory=utcnow)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "to": self.to,
            "subject": self.subject,
            "text": self.text,
            "html": self.html,
            "sentAt": iso(self.sent_at),
            "otp": self.otp,
            "link": self.link,
        }


class Mailer(Protocol):
    async def send(self, mail: Mail) -> None: ...


class DevMailbox:
    def __init__(self, keep: int = 1000) -> None:
        self._messages: deque[Mail] = deque(maxlen=keep)

    async def send(self, mail: Mail) -> None:
        self._messages.appendleft(mail)
        # Neither the address (personal data) nor the subject or text (the code) goes to the log:
        # the mailbox route, loopback only, is where a developer reads them.
        logger.info("dev mail %s kept in the dev mailbox (GET /api/v1/dev/mailbox)", mail.id)

    def messages(self, to: str | None = None) -> list[Mail]:
        wanted = to.strip().lower() if to else None
        return [m for m in self._messages if wanted is None or m.to.lower() == wanted]


class SmtpMailer:
    """Sends through `smtp://user:password@host:port` (or `smtps://`), off the event loop."""

    def __init__(self, url: str, sender: str) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "smtps"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (465 if self._tls else 587)
        self._user = unquote(parts.username) if parts.username else None
        self._password = unquote(parts.password) if parts.password else None
        self._sender = sender

    async def send(self, mail: Mail) -> None:
        await asyncio.to_thread(self._send, mail)

    def _send(self, mail: Mail) -> None:
        message = EmailMessage()
        message["From"] = self._sender
        message["To"] = mail.to
        message["Subject"] = mail.subject
        message.set_content(mail.text)
        if mail.html:
            message.add_alternative(mail.html, subtype="html")
        smtp_class = smtplib.SMTP_SSL if self._tls else smtplib.SMTP
        with smtp_class(self._host, self._port, timeout=10) as smtp:
            if not self._tls:
                smtp.starttls()
            if self._user and self._password:
                smtp.login(self._user, self._password)
            smtp.send_message(message)
