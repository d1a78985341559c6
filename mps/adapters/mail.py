"""Outgoing email.

In development every message is kept in the dev mailbox, readable at /api/v1/dev/mailbox from
loopback only; the console gets one line saying a message arrived, never its text. Production
sends over SMTP and logs nothing of a message.

The mail channel's rules (SECURITY.md, "Mail"):

- TLS is verified: `SmtpMailer` upgrades `smtp://` with STARTTLS (and speaks TLS from the start
  on `smtps://`) under `ssl.create_default_context()`, so the server's certificate must chain to
  a trusted authority and name the host of MPS_SMTP_URL. `ca_file` (MPS_SMTP_CA_FILE) adds a
  private authority to trust; nothing turns the check off. A server that offers no STARTTLS is
  refused: credentials and sign-in codes never cross in clear.
- Header values carry no line breaks: whatever reaches a header (the subject, the From display
  name, the recipient) is refused at input when it holds a control or line-separator character
  (`header_problem`), and the mailer folds any that are left (a name stored before the rule) to
  spaces, so no text of a merchant's can add a header or a body of its own.
- Addresses are what the relay can take: ASCII after NFKC normalisation (`mail_address`), since
  the mailer does not ask for SMTPUTF8.
- Every failure to send is one exception, `MailFailed`, whose `reason` is fit to show the
  merchant (no server reply, host name or address); callers decide what a failed send means
  for the change it was about, and never let it turn a saved change into a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import smtplib
import ssl
import unicodedata
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from email.errors import MessageError
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from mps.domain.clock import iso, utcnow
from mps.domain.ids import new_id

__all__ = [
    "DevMailbox",
    "Mail",
    "MailFailed",
    "Mailer",
    "SmtpMailer",
    "header_problem",
    "header_safe",
    "mail_address",
]

logger = logging.getLogger(__name__)

# Characters no header-bound text may hold: C0 and C1 controls (CR, LF, NEL U+0085 among them),
# DEL, and the Unicode line and paragraph separators (U+2028, U+2029), which some mail and log
# readers break lines at.
_LINE_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})


def header_problem(text: str) -> str | None:
    """Why `text` cannot go into a mail header, or None when it can."""
    if any(unicodedata.category(c) in _LINE_CATEGORIES for c in text):
        return "must not contain line breaks or control characters"
    return None


def header_safe(text: str) -> str:
    """`text` with every control or line-separator character made a space: the mailer's last
    guard, for text stored before input refused them."""
    return "".join(" " if unicodedata.category(c) in _LINE_CATEGORIES else c for c in text)


def mail_address(raw: str) -> str:
    """An email address as the service keeps and mails it: NFKC-normalised (so full-width and
    other compatibility forms fold to the characters they stand for), stripped, lower-case.
    Raises ValueError, with a message fit for a field error, for one the relay cannot take:
    anything still outside ASCII after folding (a confusable such as Cyrillic U+0430 is not
    folded into a Latin `a` by NFKC; it is refused, never kept as a separate look-alike user)."""
    address = unicodedata.normalize("NFKC", raw).strip().lower()
    if not address.isascii():
        msg = "must be an ASCII address (write an international domain in its xn-- form)"
        raise ValueError(msg)
    if header_problem(address) is not None or " " in address:
        msg = "must be an email address"
        raise ValueError(msg)
    local, _, domain = address.rpartition("@")
    if not local or "." not in domain:
        msg = "must be an email address"
        raise ValueError(msg)
    return address


class MailFailed(Exception):
    """A message could not be handed to the mail server. `reason` is shown to merchants (an
    invoice's or invitation's `emailError`): it names the kind of failure only."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
    async def send(self, mail: Mail) -> None:
        """Send `mail`; raises `MailFailed` when it could not be handed over."""


class DevMailbox:
    def __init__(self, keep: int = 1000) -> None:
        self._messages: deque[Mail] = deque(maxlen=keep)

    async def send(self, mail: Mail) -> None:
        self._messages.appendleft(mail)
        # Neither the address (personal data) nor the subject or text goes to the log: the
        # mailbox route, loopback only, is where a developer reads them.
        logger.info("dev mail %s kept in the dev mailbox (GET /api/v1/dev/mailbox)", mail.id)

    def messages(self, to: str | None = None) -> list[Mail]:
        wanted = to.strip().lower() if to else None
        return [m for m in self._messages if wanted is None or m.to.lower() == wanted]


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """smtplib's, ssl's and the socket's errors as `MailFailed`, each with a reason that names
    the kind of failure and nothing the server said."""
    try:
        yield
    except ssl.SSLCertVerificationError as exc:
        raise MailFailed("the mail server's certificate could not be verified") from exc
    except ssl.SSLError as exc:
        raise MailFailed("the secure connection to the mail server failed") from exc
    except smtplib.SMTPNotSupportedError as exc:
        raise MailFailed("the mail server does not offer a secure connection") from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise MailFailed("the mail server refused the service's credentials") from exc
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
        raise MailFailed("the mail server refused the address") from exc
    except smtplib.SMTPException as exc:
        raise MailFailed("the mail server refused the message") from exc
    except (ValueError, MessageError) as exc:
        # An address or header the message cannot carry (input refuses them; this is a guard).
        raise MailFailed("the message could not be written for that address") from exc
    except OSError as exc:
        # Refused connections, timeouts, names that do not resolve.
        raise MailFailed("the mail server could not be reached or took too long") from exc


class SmtpMailer:
    """Sends through `smtp://user:password@host:port` (STARTTLS, required) or `smtps://` (TLS
    from the start), off the event loop, verifying the server's certificate and host name.
    `ca_file` is a PEM file of authorities to trust besides the system's (a private CA)."""

    def __init__(self, url: str, sender: str, *, ca_file: str | None = None) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "smtps"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (465 if self._tls else 587)
        self._user = unquote(parts.username) if parts.username else None
        self._password = unquote(parts.password) if parts.password else None
        self._sender = sender
        self._context = ssl.create_default_context()
        if ca_file:
            self._context.load_verify_locations(cafile=ca_file)

    async def send(self, mail: Mail) -> None:
        await asyncio.to_thread(self._send, mail)

    def _message(self, mail: Mail) -> EmailMessage:
        message = EmailMessage()
        message["From"] = header_safe(self._sender)
        message["To"] = Address(addr_spec=mail.to)
        message["Subject"] = header_safe(mail.subject)
        message.set_content(mail.text)
        if mail.html:
            message.add_alternative(mail.html, subtype="html")
        return message

    def _send(self, mail: Mail) -> None:
        with _translated():
            message = self._message(mail)
            if self._tls:
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(
                    self._host, self._port, timeout=10, context=self._context
                )
            else:
                smtp = smtplib.SMTP(self._host, self._port, timeout=10)
            with smtp:
                if not self._tls:
                    # Raises SMTPNotSupportedError when the server offers no STARTTLS: never
                    # fall back to clear text.
                    smtp.starttls(context=self._context)
                if self._user and self._password:
                    smtp.login(self._user, self._password)
                smtp.send_message(message)
