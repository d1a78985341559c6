"""Redaction: no log line holds a secret or a customer's personal data.

`RedactSecrets` is a `logging.Filter` for handlers; `install_redaction()` puts it on every handler
of the root logger (run.py does, after `logging.basicConfig`; the test suite does the same on the
handler that records the whole run). It formats each record first (`msg % args`), redacts the
text and stores it back as `record.msg` with `record.args` cleared, so no handler and no formatter
can render the raw arguments again. The exception and stack text are formatted and redacted the
same way (`record.exc_text`; `record.exc_info` is dropped so nothing re-renders the traceback),
and so are string attributes passed with `extra=` (aiohttp's access logger passes the request
line, query string included).

What is replaced, and with what:

    Bearer / Basic credentials    Authorization: Bearer [redacted]
    JWTs (eyJ… three parts)       [jwt]
    API keys (sk_/pk_ test/live)  sk_test_****Ab3x (the last four, as the API shows them)
    passwords in URLs             smtp://user:[redacted]@host
    sensitive query parameters    ?token=[redacted] (token, code, key, secret, password, to, …)
    invitation tokens in paths    /invite/[redacted], /team/invitations/token/[redacted]
    sensitive fields              "sessionToken": "[redacted]", cvc=[redacted], password: …
    sign-in codes                 "code is [redacted]" (six digits after otp / code / pin)
    card numbers                  ****4242 (12 to 19 digits, spaces or dashes allowed, Luhn-valid)
    email addresses               [email] (personal data; the domain is dropped too)

A filter mutates the record it sees, so every handler after the first one that redacts sees the
redacted record as well. A handler added to the root logger after `install_redaction()` runs
gets no filter of its own: add one to it.

This is a safety net, not a licence: code still logs ids (payment, user, request), never the
secret itself.

`JsonFormatter` writes a record as one JSON object per line (`MPS_LOG_FORMAT=json`, set up by
run.py) for a log collector: time, level, logger, message, the exception text, and every field
passed with `extra=`. The filter above runs before any formatter, so what it writes is redacted
the same way; fields the filter does not redact (anything but strings and numbers) are written
as their redacted text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from mps.domain.cards import luhn_valid
from mps.domain.clock import iso

__all__ = ["JsonFormatter", "RedactSecrets", "install_redaction", "redact"]

REDACTED = "[redacted]"

_QUERY_NAMES = (
    r"[\w.-]*(?:token|secret|password|passwd|pwd|api_?key|apikey|signature|credentials?)"
    r"|key|code|otp|pin|to|email|phone|cvc|cvv|number|card|sig|auth|session"
)
_FIELD_NAMES = (
    r"password|passwd|secret|client_?secret|api_?key|apikey|[a-z_]*token|authorization|cookie"
    r"|set-cookie|cvc2?|cvv2?|csc|security_?code|card_?number|pan"
)

_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*):[^@/\s]+@", re.IGNORECASE)
# Whatever follows "Bearer" is taken for a credential; "Basic" only in an Authorization header,
# where it cannot be the ordinary word.
_AUTH_SCHEME = re.compile(
    r"\b(Bearer|(?<=Authorization: )Basic)\s+(?:\[redacted\]|[^\s,;\"'\]})]+)", re.IGNORECASE
)
_JWT = re.compile(r"\beyJ[\w-]*\.[\w-]+\.[\w-]*")
_API_KEY = re.compile(r"\b((?:sk|pk)_(?:test|live)_)([0-9A-Za-z]+)")
_QUERY = re.compile(rf"([?&;](?:{_QUERY_NAMES})=)[^&#\s\"'<>]*", re.IGNORECASE)
_FIELD = re.compile(
    rf"([\"']?\b(?:{_FIELD_NAMES})\b[\"']?\s*[:=]\s*)"
    r"(\"[^\"]*\"|'[^']*'|(?:(?:Bearer|Basic)\s+)?(?:\[redacted\]|[^\s,;&)}\]]+))",
    re.IGNORECASE,
)
_CODE = re.compile(r"\b(otp|code|passcode|pin)\b(\W{1,4}(?:is\W{1,3})?)\d{6}(?!\d)", re.IGNORECASE)
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){11,18}\d(?!\d)")
# An invitation's token is the whole credential of its link, and it travels in the path.
_PATH_TOKEN = re.compile(r"(/invite/|/team/invitations/token/)[^/\s?#\"']+")
_EMAIL = re.compile(r"[\w.%+-]+(?:@|%40)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def _api_key(match: re.Match[str]) -> str:
    secret = match[2]
    return f"{match[1]}****{secret[-4:]}" if len(secret) >= 16 else f"{match[1]}****"


def _field(match: re.Match[str]) -> str:
    value = match[2]
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match[1]}{quote}{REDACTED}{quote}"


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match[0])
    return f"****{digits[-4:]}" if luhn_valid(digits) else match[0]


# In order: credentials inside larger shapes (URLs, headers, fields) before the bare shapes.
_RULES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (_URL_PASSWORD, rf"\1:{REDACTED}@"),
    (_AUTH_SCHEME, rf"\1 {REDACTED}"),
    (_QUERY, rf"\1{REDACTED}"),
    (_PATH_TOKEN, rf"\1{REDACTED}"),
    (_FIELD, _field),
    (_CODE, rf"\1\2{REDACTED}"),
    (_JWT, "[jwt]"),
    (_API_KEY, _api_key),
    (_EMAIL, "[email]"),
    (_CARD, _card),
)


def redact(text: str) -> str:
    """`text` with every secret and email address above replaced."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
}
_FORMATTER = logging.Formatter()


class RedactSecrets(logging.Filter):
    """Rewrites each record it sees so that it holds no secret; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # Still logged, without the arguments: a bare argument (a code, a token) cannot be
            # told from an id once it stands outside its message, so only its type is kept.
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            kinds = ", ".join(type(arg).__name__ for arg in args)
            message = f"{record.msg!s} [arguments that did not format: {kinds}]"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD and isinstance(value, str):
                setattr(record, name, redact(value))
        return True


def install_redaction(logger: logging.Logger | None = None) -> None:
    """Put one `RedactSecrets` on each handler of `logger` (the root logger by default) that
    has none yet."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())


class JsonFormatter(logging.Formatter):
    """One JSON object per record: `time` (UTC, milliseconds), `level`, `logger`, `message`,
    `exception` and `stack` when there are any, then each `extra=` field under its own name (one
    that repeats a name above is left out)."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "time": iso(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            fields["exception"] = record.exc_text
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        for name, value in vars(record).items():
            if name in _STANDARD or name in fields:
                continue
            plain = value is None or isinstance(value, str | int | float)
            fields[name] = value if plain else redact(str(value))
        try:
            return orjson.dumps(fields).decode()
        except orjson.JSONEncodeError:
            # An integer beyond 64 bits: written as text rather than lose the record.
            return orjson.dumps(
                {k: v if isinstance(v, str) else str(v) for k, v in fields.items()}
            ).decode()
