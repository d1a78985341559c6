"""Webhook target URLs as request input: where the service may POST a merchant's events."""

from __future__ import annotations

from mps.errors import FieldError, ValidationFailed
from mps.http.routing import Call
from mps.webhooks.targets import UnsafeTarget, check_url

__all__ = ["checked_url"]


def checked_url(call: Call, url: str, field: str = "url") -> str:
    """`url` as a webhook target: https in production, never a private or loopback address
    there (checked again after DNS resolution at delivery time); 400 otherwise."""
    development = call.services.settings.development
    try:
        return check_url(url, allow_private=development, require_https=not development)
    except UnsafeTarget as exc:
        raise ValidationFailed([FieldError(field, str(exc))]) from exc
